"""The corpus index's arrays on disk: each chunk's arrays in one file written atomically (``chunks/NNNNN.npz``), and,
once every chunk is in, each array joined into one memory-mappable file (``arrays/NAME.npy``). Every file is written
through the project's atomic writes (model/files.py), so a failure (a full disk, a kill) leaves what was finished before
it as it was."""

from __future__ import annotations

import shutil
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import BinaryIO

import numpy as np

from model.corpus.checks import Shape, open_archive, read_member
from model.corpus.layout import ARRAYS, CHUNKS
from model.files import atomic_output

STORED = np.float16  # the arrays' type on disk: half the room of float32, ample for distances and maps


def chunk_file(folder: Path, chunk: int) -> Path:
    return folder / CHUNKS / f"{chunk:05d}.npz"


def write_arrays(handle: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """Arrays into an open .npz file (the write a test makes fail as a full disk would)."""
    np.savez(handle, **arrays)  # type: ignore[arg-type]


def write_chunk(folder: Path, chunk: int, arrays: dict[str, np.ndarray]) -> None:
    """Every array of one chunk in ``chunks/NNNNN.npz``, in place only once whole."""
    path = chunk_file(folder, chunk)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temporary, open(temporary, "wb") as handle:
        write_arrays(handle, {name: np.ascontiguousarray(array, dtype=STORED) for name, array in arrays.items()})


def tidy_chunks(folder: Path, finished: set[int]) -> None:
    """Remove the chunk files the database does not record (written before a failure to record them)."""
    root = folder / CHUNKS
    if not root.is_dir():
        return
    for entry in root.glob("*.npz"):
        if entry.stem.isdigit() and int(entry.stem) not in finished:
            entry.unlink(missing_ok=True)


def read_chunk_array(folder: Path, chunk: int, name: str, shape: Shape) -> np.ndarray:
    """One array of one chunk (in memory), its file and header checked first (``shape``: model/corpus/checks.py)."""
    path = chunk_file(folder, chunk)
    with open_archive(path, "missing; run the indexing again to resume") as archive:
        return read_member(archive, name, path, shape)


class ChunkArchives:
    """The chunk files of an index, each opened once while many of its arrays are read (a chunk of a big model holds
    over a thousand arrays, and opening its archive reads its whole directory): at most ``limit`` open at once, the
    least recently read closed first. A ``with`` block closes them."""

    def __init__(self, folder: Path, limit: int = 64) -> None:
        self.folder, self.limit = folder, limit
        self.opened: OrderedDict[int, zipfile.ZipFile] = OrderedDict()

    def read(self, chunk: int, name: str, shape: Shape) -> np.ndarray:
        """One array of one chunk (in memory), its file and header checked first."""
        path = chunk_file(self.folder, chunk)
        if chunk not in self.opened:
            if len(self.opened) >= self.limit:
                self.opened.popitem(last=False)[1].close()
            self.opened[chunk] = open_archive(path, "missing; run the indexing again to resume")
        self.opened.move_to_end(chunk)
        return read_member(self.opened[chunk], name, path, shape)

    def __enter__(self) -> ChunkArchives:
        return self

    def __exit__(self, *_exception: object) -> None:
        while self.opened:
            self.opened.popitem()[1].close()


def join_array(
    folder: Path, name: str, chunks: list[tuple[int, int]], width: int | range, archives: ChunkArchives | None = None
) -> Path:
    """``arrays/NAME.npy``: the parts of one array in ``chunks`` ((chunk, rows of the array's side) each), one after
    another, each part's header checked first, written with plain writes (so a full disk is an error, never a fault
    in a memory map). One already joined (by a run stopped before the rest) is kept: it was renamed into place only
    when whole."""
    target = folder / ARRAYS / f"{name}.npy"
    if target.exists():
        return target
    target.parent.mkdir(exist_ok=True)
    parts: list[np.ndarray] = []
    for chunk, rows in chunks:
        shape = (rows, parts[0].shape[1] if parts else width)
        parts.append(read_chunk_array(folder, chunk, name, shape) if archives is None else archives.read(chunk, name, shape))
    shape = (sum(len(part) for part in parts), parts[0].shape[1])
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(STORED)), "fortran_order": False, "shape": shape}
    with atomic_output(target) as temporary, open(temporary, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        for part in parts:
            handle.write(np.ascontiguousarray(part, dtype=STORED).tobytes())
    return target


def remove_chunks(folder: Path) -> None:
    shutil.rmtree(folder / CHUNKS, ignore_errors=True)
