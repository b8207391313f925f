"""An index folder tampered with by hand or by a sender: a manifest of the wrong types, ranges or names, a ``.npy``
header declaring another type or shape (or no valid header at all), a projection of another shape, a FIFO in place
of any of its files, the temporary files of a killed writer. Each is one line naming the file, never a traceback
and never a wait; the stale temporary files are tidied."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, Layer
from model.corpus.reduce import Projection, save_projections
from model.corpus.search import head_query, index_token, nearest_tokens, typed_token
from model.kinds import AttentionKind
from model.nn.masking import Head
from tests.model.corpus.conftest import build


@pytest.fixture
def copied(built_index, tmp_path) -> Path:
    folder = tmp_path / "index"
    shutil.copytree(built_index, folder)
    return folder


def use(index: CorpusIndex) -> None:
    """What searching and mapping read: every layer's vectors and projection, a head's queries, a head query."""
    for layer in index.manifest.layer_list:
        nearest_tokens(index, index_token(index, layer, sentence_id=0, position=0), k=2)
        index.projection(layer)
    index.head_vectors(Head(AttentionKind.CROSS, 0, 0))
    head_query(index, Head(AttentionKind.DECODER, 0, 0), "previous >= 0")


def refused(folder: Path, *names: str) -> str:
    """The one line opening and using the index gives; it names one of ``names``."""
    with pytest.raises(CorpusIndexError) as caught:
        with CorpusIndex(folder) as index:
            use(index)
    message = str(caught.value)
    assert "\n" not in message and any(name in message for name in names), message
    return message


DEEP = "[" * 100_000 + "]" * 100_000
MANIFESTS = {  # field -> the JSON text it is given
    "the whole manifest a list": ("", "[1, 2]"),
    "the whole manifest null": ("", "null"),
    "the whole manifest nested 100,000 deep": ("", DEEP),
    "layers text": ("layers", '"abc"'),
    "layers empty": ("layers", "[]"),
    "layers null": ("layers", "null"),
    "layers Infinity": ("layers", '[["encoder", Infinity]]'),
    "a layer a bad integer": ("layers", '[["encoder", ' + "9" * 5000 + "]]"),
    "a layer a float": ("layers", '[["encoder", 1.0]]'),
    "a layer's side a path": ("layers", '[["../../../../etc/passwd", 2]]'),
    "a layer beyond the model's": ("layers", '[["encoder", 9]]'),
    "a head a path": ("heads", '["cross:1:1/../../x"]'),
    "a head beyond the model's": ("heads", '["cross:1:9"]'),
    "heads text": ("heads", '"cross:1:1"'),
    "n_heads text": ("n_heads", '"4"'),
    "n_heads zero": ("n_heads", "0"),
    "d_head not d_model / n_heads": ("d_head", "3"),
    "dims a bool": ("dims", "true"),
    "corpus text": ("corpus", '"toy-fr"'),
    "the corpus's name a number": ("corpus", '{"name": 3}'),
    "n_sentences negative": ("n_sentences", "-1"),
    "chunk_size NaN": ("chunk_size", "NaN"),
    "the digest a number": ("model_digest", "5"),
    "complete text": ("complete", '"yes"'),
    "counts a list": ("counts", "[]"),
    "format text": ("format", '"1"'),
}


@pytest.mark.parametrize("case", list(MANIFESTS))
def test_a_tampered_manifest_is_one_line(copied, case):
    field, value = MANIFESTS[case]
    path = copied / "manifest.json"
    if field:
        text = path.read_text(encoding="utf-8")
        values = json.loads(text)
        values[field] = "@@"
        path.write_text(json.dumps(values).replace('"@@"', value), encoding="utf-8")
    else:
        path.write_text(value, encoding="utf-8")
    refused(copied, "manifest.json: damaged or truncated (")


HEADER = "{'descr': '<f2', 'fortran_order': False, 'shape': (ROWS, 16), }"
HEADERS = {
    "bytes |S2": HEADER.replace("<f2", "|S2"),
    "void |V2": HEADER.replace("<f2", "|V2"),
    "float32": HEADER.replace("<f2", "<f4"),
    "an object": HEADER.replace("<f2", "|O"),
    "an unterminated expression": "{'descr': '<f2', 'fortran_order': False, 'shape': (ROWS, 16",
    "three dimensions": HEADER.replace("(ROWS, 16)", "(ROWS, 4, 4)"),
    "more rows": HEADER.replace("ROWS", "99999999999"),
    "wider than the index's": HEADER.replace("16)", "17)"),
    "not a dict": "[1, 2, 3]",
}


def _with_header(path: Path, header: str) -> None:
    """``path``'s data behind a .npy version 1.0 header of the text given (padded as numpy pads it)."""
    data = path.read_bytes()
    length = int.from_bytes(data[8:10], "little")
    text = header.encode("latin1")
    text += b" " * ((64 - (10 + len(text) + 1) % 64) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data[10 + length :])


@pytest.mark.parametrize("case", list(HEADERS))
def test_an_array_whose_header_declares_another_type_or_shape_is_one_line(copied, case):
    path = copied / "arrays" / "resid.encoder.L2.npy"
    rows = np.load(path, mmap_mode="r").shape[0]
    _with_header(path, HEADERS[case].replace("ROWS", str(rows)))
    refused(copied, "resid.encoder.L2.npy: ")


def unfinished(tiny, folder: Path) -> Path:
    """An index stopped after its first three chunks (of four)."""
    seen: list[int] = []
    build(tiny, folder, stop=lambda: len(seen) >= 4, progress=lambda report: seen.append(report.done))
    return folder


def test_a_chunk_of_an_unfinished_index_is_checked_as_an_array_is(tiny, tmp_path):
    folder = unfinished(tiny, tmp_path / "unfinished")
    chunk = folder / "chunks" / "00001.npz"
    with np.load(chunk) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["resid.encoder.L2"] = arrays["resid.encoder.L2"].astype(np.float32)
    np.savez(chunk, **arrays)
    with CorpusIndex(folder) as index:
        assert not index.manifest.complete and len(index.chunks) >= 2
    refused(folder, "00001.npz (resid.encoder.L2): holds float32 values")


def test_a_projection_of_another_shape_is_one_line(copied, tiny):
    layer = Layer("encoder", 2)
    with CorpusIndex(copied) as index:
        kept = {item.array: index.projection(item) for item in index.manifest.layer_list}
    wrong = dict(kept)
    wrong[layer.array] = Projection(np.zeros(32, np.float32), np.zeros((8, 32), np.float32), np.zeros(8, np.float32))
    save_projections(copied / "projection.npz", wrong)
    with CorpusIndex(copied) as index, pytest.raises(CorpusIndexError) as caught:
        typed_token(index, tiny, "the cat sees the dog", layer, token="the")
    assert "projection.npz: reduces encoder:2 to 8 dimensions where the index's vectors have 16" in str(caught.value)
    wrong[layer.array] = Projection(np.zeros(31, np.float32), np.zeros((16, 32), np.float32), np.zeros(16, np.float32))
    save_projections(copied / "projection.npz", wrong)
    with CorpusIndex(copied) as index, pytest.raises(CorpusIndexError) as caught:
        typed_token(index, tiny, "the cat sees the dog", layer, token="the")
    assert "(resid.encoder.L2/mean): an array of shape (31,) where the index expects 32" in str(caught.value)


FIFOS = (
    "index.duckdb",
    "index.duckdb.wal",
    "manifest.json",
    "projection.npz",
    "arrays/resid.encoder.L2.npy",
    "arrays/q.cross.L1.H1.npy",
)


def fifo_refused(folder: Path, path: Path) -> None:
    """Opening and using the index refuses the FIFO ``path`` in one line, without waiting for a writer to open it."""
    outcome: list[BaseException | None] = []
    worker = threading.Thread(target=lambda: outcome.append(_raised(folder)), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # the old code waits for a writer: open the FIFO's other end to let it go, and fail
        with open(os.open(path, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        pytest.fail(f"opening the index waited on the FIFO {path.name}")
    assert isinstance(outcome[0], CorpusIndexError) and "FIFO" in str(outcome[0]), outcome
    assert "\n" not in str(outcome[0])


def _raised(folder: Path) -> BaseException | None:
    try:
        with CorpusIndex(folder) as index:
            use(index)
    except BaseException as error:  # the test looks at what it was
        return error
    return None


@pytest.mark.parametrize("name", FIFOS)
def test_a_fifo_in_place_of_a_file_of_the_index_is_one_line_and_no_wait(copied, name):
    path = copied / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    fifo_refused(copied, path)


def test_a_fifo_in_place_of_a_chunk_is_one_line(tiny, tmp_path):
    folder = unfinished(tiny, tmp_path / "unfinished")
    chunk = folder / "chunks" / "00000.npz"
    chunk.unlink()
    os.mkfifo(chunk)
    fifo_refused(folder, chunk)


LINKED = ("manifest.json", "index.duckdb", "projection.npz", "arrays/resid.encoder.L2.npy", "arrays")


@pytest.mark.parametrize("name", LINKED)
def test_a_link_inside_the_index_is_refused_as_it_could_lead_outside(copied, tmp_path, name):
    outside = tmp_path / "outside"
    (copied / name).rename(outside)
    (copied / name).symlink_to(outside)  # the same content, but not the index's own file
    refused(copied, f"{name}: is a link")


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_stale_partial_files_are_removed_when_the_index_is_read_or_resumed(copied, tiny):
    dead = _dead_pid()
    stale = [
        copied / f".index.duckdb.{dead}-abcdefgh.partial",
        copied / "arrays" / f".resid.encoder.L1.npy.{dead}-abcdefgh.partial",
        copied / "parquet" / f".tokens.parquet.{dead}-abcdefgh.partial",
    ]
    live = copied / f".projection.npz.{os.getpid()}-abcdefgh.partial"  # this process's: never removed
    for path in [*stale, live]:
        path.write_bytes(b"half written")
    with CorpusIndex(copied) as index:
        use(index)
    assert [path.exists() for path in stale] == [False, False, False] and live.exists()
    stale[1].write_bytes(b"half written")
    build(tiny, copied)  # complete already: nothing to do but tidy
    assert not stale[1].exists() and live.exists()
