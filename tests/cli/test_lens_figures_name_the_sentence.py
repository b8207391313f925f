"""The lens command's figures name the sentence they read (issue 39: the window's and the command's figures alike):
'Sentence: “…”' in the caption, with the output where there is one."""

from __future__ import annotations

import pytest

from tests.conftest import assert_figure

TEXT = "the cat sees the dog"


@pytest.mark.parametrize(
    ("tool", "texts"),
    [
        ("logit-lens", (f"Sentence: “{TEXT}”  Output: “le chat voit le chien”",)),
        ("attribution", (f"Sentence: “{TEXT}”  Output: “le chat voit le chien”", "“voit” at step 3")),
        ("decoder-lens", (f"Sentence: “{TEXT}”",)),
    ],
)
def test_each_lens_figure_names_its_sentence(run, tmp_path, tool, texts):
    assert run("lens", "--model", "default", "--text", TEXT, "--tool", tool, "--step", "3", "--out", "f.svg")[0] == 0
    assert_figure(tmp_path / "f.svg", texts=texts)
