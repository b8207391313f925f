"""The example notebook (resources/notebooks/getting-started.ipynb, issue 44) runs top to bottom in a local kernel
(nbclient) with no network: a first cell, not saved, makes every connection to another host fail, and the page shown
inline fetches nothing. Its outputs hold the inline interactive view, a figure and the tables; the README's notebook
snippet is its first code cells. Skipped, with the reason, only where no kernel can start."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason='the notebook test needs the test extra: pip install ".[test]"')
nbclient = pytest.importorskip("nbclient", reason='the notebook test needs the test extra: pip install ".[test]"')
pytest.importorskip("ipykernel", reason="no Jupyter kernel to run the notebook in")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "resources" / "notebooks" / "getting-started.ipynb"
GUARD = """import socket, ipaddress
_connect = socket.socket.connect
def _local_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    try:
        local = ipaddress.ip_address(socket.gethostbyname(host)).is_loopback if isinstance(host, str) else True
    except OSError:
        local = False
    if not local:
        raise OSError(f"the notebook test allows no network: {host}")
    return _connect(self, address)
socket.socket.connect = _local_only
"""


def test_the_example_notebook_runs_offline_and_shows_its_views(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(GUARD))
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except (RuntimeError, OSError) as error:  # no kernel could start here (no ipykernel launcher, no local sockets)
        if "kernel" in str(error).lower() and "died" not in str(error).lower():
            pytest.skip(f"no Jupyter kernel could start: {error}")
        raise
    outputs = [output for cell in notebook.cells[1:] if cell.cell_type == "code" for output in cell.outputs]
    html = [output["data"]["text/html"] for output in outputs if "text/html" in output.get("data", {})]
    assert any(page.startswith("<iframe srcdoc=") for page in html)  # the interactive view inline
    assert not any(re.search(r'(src|href)=\\?"https?://', page) for page in html)  # nothing fetched from the network
    assert any("image/png" in output.get("data", {}) for output in outputs)  # a figure
    assert any("<table" in page for page in html)  # a DataFrame
    assert (tmp_path / "focus.svg").is_file() and (tmp_path / "focus.svg.record.json").exists() is False
    printed = "".join(output.get("text", "") for output in outputs if output.get("output_type") == "stream")
    assert "draw it again: transformer-explorer export --model default" in printed


def test_the_readme_snippet_is_the_notebooks_first_cells():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"<!-- notebook -->\n```python\n(.*?)```", readme, re.S)
    assert snippet is not None, "the README's notebook snippet is marked <!-- notebook -->"
    assert snippet.group(1).strip() == "\n\n".join(code[:4]).strip()


def test_results_print_in_a_line_or_two_outside_a_notebook():
    """A plain Python prompt prints the results' reprs: what they are, not the model's modules (400,000 characters)."""
    from model import notebook

    explorer = notebook.load("default")
    decoded = explorer.decode("the cat sees the dog")
    assert repr(explorer).startswith("<Explorer 'default': toy-fr: 3+3 layers") and len(repr(explorer)) < 300
    assert repr(decoded) == "<Decoded 'the cat sees the dog' → 'le chat voit le chien' (greedy, 6 steps; default)>"
    patching = explorer.patching("the cat sees the dog", "the cats see the dog")
    assert repr(patching).startswith("<Patching (exact, denoising) at step 1: metric clean 7.857") and "\n" not in repr(patching)
