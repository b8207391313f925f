"""Writing the user's files safely: every file the app writes goes through ``atomic_output``.

The data is written to a hidden temporary file in the destination's folder, flushed to disk and then
renamed over the destination in one step, so a failure (disk full, a size limit, a kill, an
exception while drawing) leaves the earlier file exactly as it was and no half-written one.
``check_output`` refuses, before any work is done, a destination that cannot be written or that is
one of the command's inputs.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class OutputError(ValueError):
    """A destination that cannot or must not be written; the message says why."""


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False


def check_output(path: str | os.PathLike, inputs: tuple[str | os.PathLike | None, ...] = ()) -> Path:
    """The destination as a Path, after checking that it can be written and is none of ``inputs``."""
    if not str(path).strip():
        raise OutputError("the output path is empty")
    path = Path(path)
    for source in inputs:
        if source is not None and str(source) and (_same_file(path, Path(source)) or
                                                   path.resolve() == Path(source).resolve()):
            raise OutputError(f"{path}: is an input of this command; choose another output file")
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: the folder {folder} is not writable")
    if path.exists() and (not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222):
        raise OutputError(f"{path}: the file is read-only")  # by its mode, even for root
    return path


@contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a temporary path to write; on success it replaces ``path``, on any error it is removed
    and ``path`` is left untouched. OSErrors become OutputErrors that name the file."""
    path = check_output(path)
    if path.is_symlink():
        path = path.resolve()  # write the file the link points to; the link stays a link
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    os.close(descriptor)
    try:
        yield Path(temporary)
        if path.exists():
            mode = path.stat().st_mode & 0o7777  # a file written again keeps its permissions
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes it private; a new file reads like any other
        os.chmod(temporary, mode)
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        if isinstance(error, OSError):
            raise OutputError(f"{path}: cannot be written ({error.strerror or error})") from None
        raise
