"""``index``, ``search`` and ``qk`` given what a user's report found: an output inside the index's folder (which would
overwrite one of its files), a tampered or hostile index folder, limits no corpus has, a read-only folder, a run
terminated (SIGTERM) or killed (SIGKILL) part-way, and another family's model for ``--text``. Each is one line (exit
1) or, for a stopped run, what it left behind tidied."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from model.corpus.sources import IndexCorpus
from tests.conftest import saved_model
from tests.model.corpus.conftest import build

INDEX = ("--corpus", "toy-fr", "--limit", "20", "--chunk-size", "8", "--batch-size", "8", "--heads", "decoder:1", "--quiet")


@pytest.fixture(scope="module")
def model_file(toy_fr_bundle, tmp_path_factory) -> str:
    return str(saved_model(toy_fr_bundle[0], tmp_path_factory.mktemp("model")))


@pytest.fixture(scope="module")
def built(toy_fr_bundle, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus") / "index"
    build(toy_fr_bundle[0], folder, corpus=IndexCorpus("toy-fr", limit=12, seed=3))
    return folder


@pytest.fixture
def idx(built, tmp_path) -> Path:
    """A copy of the shared index in the test's folder, as ``idx``."""
    shutil.copytree(built, tmp_path / "idx")
    return tmp_path / "idx"


def one_line(result: tuple[int, str, str], command: str) -> str:
    code, out, err = result
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith(f"transformer-explorer {command}: error: ") and "Traceback" not in err
    return err


def _files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


INSIDE = ("idx/index.duckdb", "idx/manifest.json", "idx/arrays/resid.encoder.L1.npy", "idx/projection.npz",
          "idx/parquet/tokens.parquet", "idx/new.csv", "idx/arrays/../arrays/new.csv")  # fmt: skip


@pytest.mark.parametrize("out", INSIDE)
def test_an_output_inside_the_index_folder_is_refused_and_the_index_is_unchanged(run, idx, out):
    before = _files(idx)
    message = one_line(run("search", "idx", "--token", "the", "--csv", out), "search")
    assert "is inside the corpus index idx; write it outside the index's folder" in message
    qk_out = str(Path(out).with_suffix(".csv"))
    message = one_line(run("qk", "idx", "--kind", "decoder", "--layer", "1", "--out", qk_out, "--sentences", "3"), "qk")
    assert "is inside the corpus index idx" in message
    assert _files(idx) == before
    os.symlink(idx / "index.duckdb", idx.parent / "link.csv")  # a link into the index is inside it too
    assert "is inside the corpus index" in one_line(run("search", "idx", "--token", "the", "--csv", "link.csv"), "search")
    assert _files(idx) == before and run("search", "idx", "--token", "the", "--csv", "near.csv")[0] == 0


def _set_field(idx: Path, field: str, value: str) -> None:
    path = idx / "manifest.json"
    values = json.loads(path.read_text(encoding="utf-8"))
    values[field] = "@@"
    path.write_text(json.dumps(values).replace('"@@"', value), encoding="utf-8")


TAMPERED = {
    "a manifest that is a list": lambda idx: (idx / "manifest.json").write_text("[]", encoding="utf-8"),
    "a layer's side a path": lambda idx: _set_field(idx, "layers", '[["../../../../etc/passwd", 2]]'),
    "n_heads text": lambda idx: _set_field(idx, "n_heads", '"4"'),
    "a FIFO database": lambda idx: ((idx / "index.duckdb").unlink(), os.mkfifo(idx / "index.duckdb")),
    "text in tokens.row_id": lambda idx: _sql(idx, "ALTER TABLE tokens ALTER row_id TYPE VARCHAR"),
}


def _sql(idx: Path, statement: str) -> None:
    with duckdb.connect(str(idx / "index.duckdb")) as connection:
        connection.execute(statement)


@pytest.mark.parametrize("case", list(TAMPERED))
def test_a_tampered_index_is_one_line_for_search_and_qk(run, idx, case):
    TAMPERED[case](idx)
    one_line(run("search", "idx", "--token", "the"), "search")
    one_line(run("search", "idx", "--head", "decoder:1:1", "--where", "previous >= 0"), "search")
    one_line(run("qk", "idx", "--kind", "decoder", "--layer", "1", "--out", "map.csv", "--sentences", "3"), "qk")


@pytest.mark.parametrize("limit", ["1000000000000", "99999999999999999999"])
def test_a_limit_beyond_what_a_corpus_gives_is_refused_at_once(run, model_file, tmp_path, limit):
    message = one_line(run("index", "--model", model_file, "--corpus", "toy-fr", "--limit", limit, "--out", "big"), "index")
    assert "the limit" in message and not (tmp_path / "big").exists()
    (tmp_path / "two.txt").write_text("the cat\nthe dog\n", encoding="utf-8")
    if len(limit) > 13:  # a file's limit costs nothing, but is still a number an index records
        one_line(run("index", "--model", model_file, "--corpus", "two.txt", "--limit", limit, "--out", "big"), "index")


def test_a_read_only_folder_is_refused_for_a_new_index_and_for_resuming_one(run, model_file, idx, tmp_path):
    (tmp_path / "ro").mkdir()
    os.chmod(tmp_path / "ro", 0o555)
    os.chmod(idx, 0o555)
    try:
        message = one_line(run("index", "--model", model_file, "--out", "ro/I", *INDEX), "index")
        assert "ro/I: the folder ro is not writable" in message and not (tmp_path / "ro" / "I").exists()
        assert "the folder idx is not writable" in one_line(run("index", "--model", model_file, "--out", "idx", *INDEX), "index")
    finally:
        os.chmod(tmp_path / "ro", 0o755)
        os.chmod(idx, 0o755)


STOPPED = """
import os, signal, sys
from pathlib import Path
import model.corpus.chunks as chunks
written = chunks.write_arrays
def stopped(handle, arrays):  # the second chunk's file half written, then the signal
    if Path(handle.name).name.startswith(".00001.npz"):
        handle.write(b"half")
        handle.flush()
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    written(handle, arrays)
chunks.write_arrays = stopped
from model.cli.commands import main
sys.exit(main(sys.argv[2:]))
"""


def _stopped_run(how: str, model_file: str, folder: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", STOPPED, how, "index", "--model", model_file, "--out", "idx", *INDEX]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300, check=False, env=environment)


def _left(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.rglob("*") if path.name.endswith((".partial", ".wal")))


def test_a_terminated_index_run_leaves_nothing_behind_and_resumes(run, model_file, tmp_path):
    result = _stopped_run("SIGTERM", model_file, tmp_path)
    assert result.returncode == 128 + signal.SIGTERM, result.stderr
    assert result.stderr.strip().endswith(
        "terminated; the 8 sentences indexed are kept in idx: run the same command again to resume"
    )
    assert _left(tmp_path / "idx") == []
    code, out, _ = run("index", "--model", model_file, "--out", "idx", *INDEX)
    assert code == 0 and "20 sentences indexed, resumed after 8" in out


def test_what_a_killed_index_run_left_is_read_then_tidied(run, model_file, tmp_path):
    result = _stopped_run("SIGKILL", model_file, tmp_path)
    assert result.returncode == -signal.SIGKILL
    left = _left(tmp_path / "idx")
    assert "index.duckdb.wal" in left and any(name.endswith(".partial") for name in left), left
    code, out, err = run("search", "idx", "--head", "decoder:1:1", "--where", "previous >= 0")  # the log read as it is
    assert code == 0 and out.startswith("8 sentences where decoder L1 H1"), err
    assert _left(tmp_path / "idx") == ["index.duckdb.wal"]  # the killed writer's partial file removed
    code, out, _ = run("index", "--model", model_file, "--out", "idx", *INDEX)
    assert code == 0 and "resumed after 8" in out and _left(tmp_path / "idx") == []


def test_search_text_with_another_family_s_model_is_one_line(run, idx, tmp_path):
    pytest.importorskip("transformers", reason='a GPT-2 folder needs the hf extra: pip install ".[hf]"')
    from model.pretrained.tiny import build as build_pretrained

    folder = build_pretrained("gpt2", tmp_path / "gpt2")
    message = one_line(run("search", "idx", "--text", "the cat", "--token", "the", "--model", str(folder)), "search")
    assert "was indexed with another model" in message  # a GPT-2 is indexed on its one side, but not searched so
