"""``transformer-explorer index``, ``search`` and ``qk`` end to end on a tiny model and 20 toy-fr sentences: what they
print and write, Ctrl-C then the same command (resumed), and each bad input answered in one line."""

from __future__ import annotations

import csv
import errno
from pathlib import Path

import pytest

import model.corpus.build as build_module
from model.corpus import chunks
from tests.conftest import assert_figure, saved_model


@pytest.fixture(scope="module")
def model_file(toy_fr_bundle, tmp_path_factory):
    return str(saved_model(toy_fr_bundle[0], tmp_path_factory.mktemp("model")))


INDEX = ("--corpus", "toy-fr", "--limit", "20", "--chunk-size", "8", "--batch-size", "8", "--heads", "decoder:1", "--quiet")


def test_index_then_search_and_map_it(run, model_file, tmp_path):
    code, out, err = run("index", "--model", model_file, "--out", "idx", *INDEX)
    assert code == 0 and err == "", err
    assert out.splitlines()[-1].startswith("20 sentences, ") and "idx: 20 sentences indexed" in out
    code, out, err = run("search", "idx", "--token", "the", "--k", "3", "--layer", "encoder:2", "--csv", "near.csv")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("nearest to “the” (position ") and "at encoder:2 (cosine)" in lines[0]
    assert lines[1].split()[:2] == ["1", "0.0000"] and "[the]" in lines[1]
    with open(tmp_path / "near.csv", encoding="utf-8", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 3
    code, out, err = run("search", "idx", "--text", "the cat sees the dog", "--token", "the", "--model", model_file, "--k", "2")
    assert code == 0 and "in “the cat sees the dog” at encoder:2" in out.splitlines()[0], err
    code, out, err = run("search", "idx", "--head", "decoder:1:1", "--where", "first >= 0", "--limit", "2")
    assert code == 0 and out.startswith("20 sentences where decoder L1 H1 has first >= 0:") and "... and 18 more" in out
    code, out, err = run("qk", "idx", "--kind", "decoder", "--layer", "1", "--out", "map.svg", "--sentences", "5")
    assert code == 0 and out.splitlines()[-1] == "wrote map.svg" and len(out.splitlines()) == 5  # four heads, then the file
    assert_figure(tmp_path / "map.svg", texts=("decoder L1 H1", "decoder L1 H4"))
    code, out, err = run("qk", "idx", "--kind", "decoder", "--layer", "1", "--head", "2", "--out", "map.csv", "--sentences", "4")
    assert code == 0 and (tmp_path / "map.csv").read_text(encoding="utf-8").startswith("head,method,x,y,vector,token")


def test_ctrl_c_keeps_the_chunks_finished_and_the_same_command_resumes(run, model_file, monkeypatch):
    read = build_module.read_sentences_batched
    calls = []

    def interrupted(*arguments, **options):
        calls.append(1)
        if len(calls) == 3:  # the PCA's sentences, chunk 1, then Ctrl-C during chunk 2
            raise KeyboardInterrupt
        return read(*arguments, **options)

    monkeypatch.setattr(build_module, "read_sentences_batched", interrupted)
    code, out, err = run("index", "--model", model_file, "--out", "idx", *INDEX)
    assert code == 130 and out == ""
    assert err.strip() == (
        "transformer-explorer index: interrupted; the 8 sentences indexed are kept in idx: run the same command again to resume"
    )
    monkeypatch.setattr(build_module, "read_sentences_batched", read)
    code, out, err = run("index", "--model", model_file, "--out", "idx", *INDEX)
    assert code == 0 and "20 sentences indexed, resumed after 8" in out


def test_a_full_disk_is_one_line_and_the_same_command_resumes(run, model_file, monkeypatch):
    written = chunks.write_arrays

    def full(handle, arrays):
        if Path(handle.name).name.startswith(".00001.npz"):  # the second chunk
            raise OSError(errno.ENOSPC, "No space left on device")
        written(handle, arrays)

    monkeypatch.setattr(chunks, "write_arrays", full)
    message = _error(run("index", "--model", model_file, "--out", "idx", *INDEX), "index")
    assert message.startswith("transformer-explorer index: error: idx: indexing stopped: ")
    assert "(the disk is full)" in message and "the 8 sentences indexed before are kept" in message
    monkeypatch.setattr(chunks, "write_arrays", written)
    code, out, _ = run("index", "--model", model_file, "--out", "idx", *INDEX)
    assert code == 0 and "resumed after 8" in out


def _error(result: tuple[int, str, str], command: str) -> str:
    code, out, err = result
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith(f"transformer-explorer {command}: error: ")
    return err


def test_bad_inputs_get_one_line(run, model_file, copy_bundle, tmp_path):
    assert run("index", "--model", model_file, "--out", "idx", *INDEX)[0] == 0
    other = str(saved_model(copy_bundle[0], tmp_path, "other.safetensors"))
    assert "was indexed with another model" in _error(
        run("search", "idx", "--text", "the cat", "--token", "cat", "--model", other), "search"
    )
    assert "unknown name 'previos'" in _error(run("search", "idx", "--head", "decoder:1:1", "--where", "previos > 0.5"), "search")
    assert "needs --head KIND:LAYER:HEAD and --where" in _error(run("search", "idx", "--where", "previous > 0.5"), "search")
    assert "holds no queries and keys of head cross:1:1" in _error(
        run("qk", "idx", "--kind", "cross", "--layer", "1", "--head", "1", "--out", "m.png"), "qk"
    )
    assert "the model's encoder has layers 1 to 2" in _error(
        run("search", "idx", "--token", "the", "--layer", "encoder:7"), "search"
    )
    assert "nowhere: no such folder" in _error(run("search", "nowhere", "--token", "the"), "search")
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00\x01" * 64)
    assert "binary.txt:1: not UTF-8 text" in _error(
        run("index", "--model", model_file, "--corpus", "binary.txt", "--out", "idx2"), "index"
    )
    assert not (tmp_path / "idx2").exists()
    array = tmp_path / "idx" / "arrays" / "resid.encoder.L2.npy"
    array.write_bytes(array.read_bytes()[:200])
    assert "resid.encoder.L2.npy: truncated or damaged" in _error(run("search", "idx", "--token", "the"), "search")
    (tmp_path / "idx" / "manifest.json").unlink()
    assert "not a corpus index (it has no manifest.json)" in _error(run("search", "idx", "--token", "the"), "search")
