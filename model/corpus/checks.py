"""Every file inside a corpus index checked before it is read, as any input is (an index folder is a file people
share): a regular file (a FIFO, a device or a socket would block or never end), a ``.npy`` array whose header
declares the type and shape the index expects (float16, two dimensions of known rows and width) before a byte of
its data is read, and, for any output a command writes, a path outside the index's folder (an output there could
replace one of the index's own files). Stale temporary files of a killed writer are tidied here too.
"""

from __future__ import annotations

import math
import os
import re
import stat
import zipfile
from pathlib import Path
from tokenize import TokenError  # numpy's parser of an old-style header fails so
from typing import IO, Any, cast

import numpy as np

from model.corpus.layout import ARRAYS, CHUNKS, PARQUET, CorpusIndexError
from model.files import check_output, file_kind, open_input, remove_stale_partials

STORED = np.dtype(np.float16)  # the index's arrays on disk (model/corpus/chunks.py writes them so)
HEADER_LIMIT = 10_000  # bytes of a .npy header read at most (numpy's own default)
SUBFOLDERS = (ARRAYS, CHUNKS, PARQUET)
PARTIAL = re.compile(r"\.(.+)\.(?:\d+-)?[A-Za-z0-9_]{8}\.partial")  # model/files.atomic_output's temporary names
Shape = tuple[int | range, ...]  # an array's expected shape: each dimension a number or the range it may lie in


def check_regular(path: Path, missing: str = "missing; build the index again") -> None:
    """``path`` is a regular file (not a FIFO, device, socket or folder), and neither it nor its folder inside the
    index a link (which could lead outside the index); CorpusIndexError otherwise."""
    for place in (path, path.parent) if path.parent.name in SUBFOLDERS else (path,):
        if os.path.islink(place):
            raise CorpusIndexError(f"{place}: is a link; a corpus index's files are its own: build the index again")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CorpusIndexError(f"{path}: {missing}") from None
    except OSError as problem:
        raise CorpusIndexError(f"{path}: cannot be read ({problem.strerror or problem})") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else file_kind(mode)
        raise CorpusIndexError(f"{path}: is {kind}, not a file of a corpus index; build the index again")


def _header(handle: IO[bytes], path: Path | str) -> tuple[np.dtype, tuple[int, ...], bool]:
    """(dtype, shape, fortran order) of the .npy data starting at ``handle``'s position."""
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle, max_header_size=HEADER_LIMIT)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle, max_header_size=HEADER_LIMIT)
        else:
            raise ValueError(f"unknown .npy version {version}")
    except (ValueError, SyntaxError, TokenError, TypeError, OverflowError, RecursionError, EOFError, OSError) as problem:
        reason = str(problem).splitlines()[0] if str(problem) else type(problem).__name__
        raise CorpusIndexError(f"{path}: not an array of this index ({reason[:200]}); build the index again") from None
    return dtype, tuple(shape), bool(fortran)


def _check_header(header: tuple[np.dtype, tuple[int, ...], bool], label: object, dtype: np.dtype, shape: Shape) -> int:
    """The data's size in bytes once the header says ``dtype`` and a shape matching ``shape`` (each dimension a
    number, or a range of the numbers it may be); CorpusIndexError otherwise."""
    found, dims, _ = header
    if found != dtype:
        raise CorpusIndexError(f"{label}: holds {found} values, not the index's {dtype} ones; build the index again")
    allowed = [want if isinstance(want, range) else (want,) for want in shape]
    if len(dims) != len(shape) or any(size not in sizes for size, sizes in zip(dims, allowed)):
        expected = " × ".join(f"{want.start}-{want.stop - 1}" if isinstance(want, range) else f"{want:,}" for want in shape)
        raise CorpusIndexError(f"{label}: an array of shape {dims} where the index expects {expected}; build the index again")
    return math.prod(dims) * dtype.itemsize


def map_array(path: Path, shape: Shape, dtype: np.dtype = STORED) -> np.ndarray:
    """The array file ``path`` as a read-only memory map, after checking that it is a regular file whose header says
    ``dtype`` and ``shape`` (see ``_check_header``) and that the file holds that many values."""
    check_regular(path)
    with open_input(path, "array of a corpus index", CorpusIndexError) as handle:
        header = _header(handle, path)
        size = _check_header(header, path, dtype, shape)
        offset = handle.tell()
        if os.fstat(handle.fileno()).st_size < offset + size:
            raise CorpusIndexError(f"{path}: truncated or damaged (shorter than its header says); build the index again")
        if size == 0:
            return np.zeros(header[1], dtype)
        return np.memmap(cast(Any, handle), dtype=dtype, mode="r", offset=offset, shape=header[1], order="F" if header[2] else "C")


def read_member(archive: zipfile.ZipFile, name: str, path: Path, shape: Shape, dtype: np.dtype = STORED) -> np.ndarray:
    """The array ``name`` of an open .npz file, its header checked as ``map_array`` checks a file's."""
    label = f"{path} ({name})"
    try:
        with archive.open(f"{name}.npy") as member:
            header = _header(member, label)
            size = _check_header(header, label, dtype, shape)
            data = member.read(size + 1)
    except KeyError:
        raise CorpusIndexError(f"{path}: has no array {name}; build the index again") from None
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as problem:
        raise CorpusIndexError(f"{path}: truncated or damaged ({str(problem).splitlines()[0]})") from None
    if len(data) != size:
        raise CorpusIndexError(f"{label}: truncated or damaged; build the index again")
    if header[2]:  # Fortran order (a PCA's components are saved so)
        return np.frombuffer(data, dtype).reshape(header[1][::-1]).T.copy()
    return np.frombuffer(data, dtype).reshape(header[1]).copy()


def open_archive(path: Path, missing: str) -> zipfile.ZipFile:
    """A .npz file of the index, opened after checking that it is a regular file; the caller closes it."""
    check_regular(path, missing)
    handle = open_input(path, "file of a corpus index", CorpusIndexError)
    try:
        return zipfile.ZipFile(handle)
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as problem:
        handle.close()
        raise CorpusIndexError(f"{path}: truncated or damaged ({str(problem).splitlines()[0]}); build the index again") from None


def tidy_partials(folder: Path) -> None:
    """Remove the temporary files that killed writers left in the index's folders (never a live writer's)."""
    for place in (folder, *(folder / name for name in SUBFOLDERS)):
        try:
            names = {match.group(1) for entry in os.scandir(place) if (match := PARTIAL.fullmatch(entry.name))}
        except OSError:
            continue
        for name in names:
            remove_stale_partials(place / name)


def check_outside(path: str | os.PathLike, folder: Path, inputs: tuple[str | os.PathLike | None, ...] = ()) -> Path:
    """``path`` refused when it lies inside the index ``folder`` (links followed; any file there, not only the index's
    own: an output there could replace one of them, now or once the index is resumed), then ``check_output``'s checks."""
    try:
        inside = bool(str(path).strip()) and Path(path).resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        inside = False
    if inside:
        raise CorpusIndexError(f"{path}: is inside the corpus index {folder}; write it outside the index's folder")
    return check_output(path, inputs)
