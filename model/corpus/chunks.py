"""The corpus index's arrays on disk: each chunk's arrays written into a folder of their own and renamed into place in
one step (``chunks/NNNNN/NAME.npy``), and, once every chunk is in, each array joined into one memory-mappable file
(``arrays/NAME.npy``). Every file is written through the project's atomic writes or renamed whole, so a failure
(a full disk, a kill) leaves what was finished before it as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from model.corpus.layout import ARRAYS, CHUNKS, fsync_folder
from model.files import atomic_output

STORED = np.float16  # the arrays' type on disk: half the room of float32, ample for distances and maps


def chunk_folder(folder: Path, chunk: int) -> Path:
    return folder / CHUNKS / f"{chunk:05d}"


def write_array(path: Path, array: np.ndarray) -> None:
    """One array as .npy, flushed to disk (the write a test makes fail as a full disk would)."""
    with open(path, "wb") as handle:
        np.save(handle, array)
        handle.flush()
        os.fsync(handle.fileno())


def write_chunk(folder: Path, chunk: int, arrays: dict[str, np.ndarray]) -> None:
    """Every array of one chunk, in a folder renamed to ``chunks/NNNNN`` once all are written; on any failure the
    half-written folder is removed and the error raised."""
    final = chunk_folder(folder, chunk)
    partial = final.with_name(f".{final.name}.{os.getpid()}.partial")
    final.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(partial, ignore_errors=True)
    try:
        partial.mkdir()
        for name, array in arrays.items():
            write_array(partial / f"{name}.npy", np.ascontiguousarray(array, dtype=STORED))
        shutil.rmtree(final, ignore_errors=True)  # a chunk written before a failure to record it: written again
        os.replace(partial, final)
        fsync_folder(final.parent)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def tidy_chunks(folder: Path, finished: set[int]) -> None:
    """Remove the half-written chunk folders of an interrupted run, and chunks the database does not record."""
    root = folder / CHUNKS
    if not root.is_dir():
        return
    for entry in root.iterdir():
        name = entry.name
        if name.endswith(".partial") or (name.isdigit() and int(name) not in finished):
            shutil.rmtree(entry, ignore_errors=True)


def join_array(folder: Path, name: str, chunks: list[int]) -> Path:
    """``arrays/NAME.npy``: the chunks' parts of one array, one after another (written with plain writes, so a full
    disk is an error, never a fault in a memory map); the parts are removed once it is in place."""
    parts = [chunk_folder(folder, chunk) / f"{name}.npy" for chunk in chunks]
    target = folder / ARRAYS / f"{name}.npy"
    if target.exists():  # joined by a run that stopped before the rest: it is renamed into place only when whole
        for part in parts:
            part.unlink(missing_ok=True)
        return target
    target.parent.mkdir(exist_ok=True)
    loaded = [np.load(part, mmap_mode="r") for part in parts]
    shape = (sum(len(part) for part in loaded), loaded[0].shape[1])
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(STORED)), "fortran_order": False, "shape": shape}
    with atomic_output(target) as temporary, open(temporary, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        for part in loaded:
            handle.write(np.ascontiguousarray(part).tobytes())
    del loaded
    for part in parts:
        part.unlink()
    return target


def remove_chunks(folder: Path) -> None:
    shutil.rmtree(folder / CHUNKS, ignore_errors=True)
