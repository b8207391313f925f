"""Reading and writing the user's files safely: every file the app reads is opened by ``open_input``, every
file it writes goes through ``atomic_output``.

``open_input`` opens only a regular file (a FIFO, a device such as /dev/zero or /dev/stdin, a socket or a folder
would block or never end), and never waits while opening.

The data is written to a hidden temporary file in the destination's folder, flushed to disk and then
renamed over the destination in one step, so a failure (disk full, a size limit, a kill, an
exception while drawing) leaves the earlier file exactly as it was and no half-written one; whatever stopped
it (an OSError, however a library wrapped it, or a library's own exception while writing) becomes one
OutputError naming the file (``write_failure``).
``check_output`` refuses, before any work is done, a destination that cannot be written, that is not a regular file
(a device such as /dev/null, a FIFO or a socket: renaming over one would replace it, so it is never written, and
``atomic_output`` looks again right before its rename), or that is one of the command's inputs or a file that goes
with one (a model's timeline; a file already in a model folder being read). A temporary file left behind by a killed
writer is removed at the next write to the same name (``remove_stale_partials``); one that a live process is still
writing never is.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from model.errors import UserError

TIMELINE_SUFFIX = ".timeline.safetensors"  # a model file's training snapshots, beside it (model/io/timeline.py)


class OutputError(UserError):
    """A destination that cannot or must not be written; the message says why."""


class InputError(UserError):
    """A file to read that cannot be: missing, a folder, not a regular file, unreadable; the message says why."""


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words ("a FIFO", "a character device", ...)."""
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "not a plain file"


def open_input(path: str | os.PathLike, what: str = "input file", error: type[UserError] = InputError) -> BinaryIO:
    """``path`` opened for reading in binary, after checking that it is a regular file: a missing file, a folder,
    a FIFO, a device (/dev/zero, /dev/stdin) or a socket raises ``error`` (its message names the file and says
    it is not ``what``) before anything is read. Opening never waits (O_NONBLOCK), and the open file is checked
    again, so one replaced between the two looks is refused too. The caller closes the file."""
    path = Path(path)
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as problem:
        raise error(f"{path}: cannot be read ({problem.strerror or problem})") from None
    if stat.S_ISDIR(status.st_mode):
        raise error(f"{path}: is a folder, not a {what}")
    if not stat.S_ISREG(status.st_mode):
        raise error(f"{path}: is not a regular file ({file_kind(status.st_mode)}), not a {what}")
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as problem:
        raise error(f"{path}: cannot be read ({problem.strerror or problem})") from None
    handle = os.fdopen(descriptor, "rb")
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):  # replaced between the two looks
        handle.close()
        raise error(f"{path}: is not a regular file ({file_kind(mode)}), not a {what}")
    return handle


def read_input(path: str | os.PathLike, what: str = "input file", error: type[UserError] = InputError) -> bytes:
    """Every byte of a regular file (``open_input``'s checks first); a failed read raises ``error`` naming the file."""
    with open_input(path, what, error) as handle:
        try:
            return handle.read()
        except OSError as problem:
            raise error(f"{path}: cannot be read ({problem.strerror or problem})") from None


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False


def companions(source: str | os.PathLike) -> list[Path]:
    """The files that go with the input ``source`` and must not be overwritten with it: itself and, for a model file,
    its timeline beside it (``NAME.timeline.safetensors``, model/io/timeline.py)."""
    source = Path(source)
    return [source, source.with_name(source.stem + TIMELINE_SUFFIX)]


def _is_input(path: Path, source: Path) -> bool:
    """Whether writing ``path`` would overwrite the input ``source`` or a file that goes with it (its timeline; for a
    model folder, any file already in it)."""
    if any(_same_file(path, other) or path.resolve() == other.resolve() for other in companions(source)):
        return True
    return source.is_dir() and path.exists() and path.resolve().is_relative_to(source.resolve())


def _not_regular(path: Path) -> str | None:
    """What an existing destination is when it is not a regular file (a device, FIFO or socket: writing over it must
    never replace it, and /dev/null is one), else None. A symbolic link is judged by what it points to."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # nothing there (or a dangling link): a new file is made
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return file_kind(mode)


def check_output(path: str | os.PathLike, inputs: tuple[str | os.PathLike | None, ...] = ()) -> Path:
    """The destination as a Path, after checking that it can be written, is a regular file if it exists (never a
    device, FIFO or socket) and is none of ``inputs`` nor a file that goes with one (a model's timeline)."""
    if not str(path).strip():
        raise OutputError("the output path is empty")
    path = Path(path)
    for source in inputs:
        if source is not None and str(source) and _is_input(path, Path(source)):
            raise OutputError(f"{path}: is an input of this command (or its timeline); choose another output file")
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name")
    kind = _not_regular(path)
    if kind is not None:
        raise OutputError(f"{path}: is {kind}, not a regular file; outputs are written only to files, choose a file name")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or not folder.stat().st_mode & 0o222:
        raise OutputError(f"{path}: the folder {folder} is not writable")  # by its mode, even for root
    if path.exists() and (not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222):
        raise OutputError(f"{path}: the file is read-only")  # by its mode, even for root
    return path


STALE_PARTIAL_SECONDS = 60  # an old-style partial file (no writer id in its name) this old is abandoned


def process_runs(pid: int) -> bool:
    """Whether the process ``pid`` still runs (another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # another user's process (or a number too large to be a process)
    return True


def remove_stale_partials(path: str | os.PathLike) -> list[Path]:
    """Remove the temporary files of earlier writes to ``path`` that were killed: ``.NAME.<pid>-<random>.partial``
    whose writing process no longer runs, and older-style ``.NAME.<random>.partial`` untouched for a minute.
    Never one a live process is writing. Returns what was removed; errors are ignored (this is tidying up)."""
    path = Path(path)
    pattern = re.compile(re.escape(f".{path.name}.") + r"(?:(\d+)-)?[A-Za-z0-9_]{8}\.partial")
    removed: list[Path] = []
    try:
        candidates = list(os.scandir(path.parent if str(path.parent) else "."))
    except OSError:
        return removed
    now = time.time()
    for entry in candidates:
        match = pattern.fullmatch(entry.name)
        if not match:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if match.group(1) is not None:
                pid = int(match.group(1))
                stale = pid != os.getpid() and not process_runs(pid)
            else:
                stale = now - entry.stat(follow_symlinks=False).st_mtime > STALE_PARTIAL_SECONDS
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


@contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a temporary path to write; on success it replaces ``path``, on any error it is removed
    and ``path`` is left untouched. OSErrors become OutputErrors that name the file."""
    path = check_output(path)
    if path.is_symlink():
        path = path.resolve()  # write the file the link points to; the link stays a link
    remove_stale_partials(path)
    # The writer's process id in the name tells a later write whether this file is abandoned.
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".partial", dir=path.parent)
        os.close(descriptor)
    except OSError as error:  # named after the file the user asked for, not the temporary one
        raise OutputError(f"{path}: cannot be written ({failure_reason(error)})") from None
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
        kind = _not_regular(path)
        if kind is not None:  # made a device, FIFO or socket while this was written: never renamed over
            raise OutputError(f"{path}: is {kind}, not a regular file; outputs are written only to files, choose a file name")
        os.replace(temporary, path)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass  # gone already, or the folder went away: nothing of ours is left either way
        failure = write_failure(error, path)
        if failure is None:
            raise
        raise failure from (None if isinstance(error, OSError) else error)


def write_failure(error: BaseException, path: str | os.PathLike) -> OutputError | None:
    """The one message for a write of ``path`` that failed with ``error``, or None for an error that is not a
    failure to write (a UserError, which says what is wrong itself; Ctrl-C). An OSError anywhere in the chain
    (libraries wrap them: matplotlib's PDF writer fails with ``AttributeError: 'Stream' object has no attribute
    'pos'`` when the disk fills under it) gives its reason (the disk is full, the file is too large); another
    exception raised while writing is named as it is."""
    if isinstance(error, UserError) or not isinstance(error, Exception):
        return None
    cause = next((link for link in _chain(error) if isinstance(link, OSError)), None)
    reason = failure_reason(cause) if cause is not None else f"{type(error).__name__}: {error}"
    return OutputError(f"{path}: cannot be written ({reason}); an earlier file is unchanged")


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the exceptions it was raised from or while handling, each once."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def failure_reason(error: OSError) -> str:
    """Why a write failed, in words (what ``atomic_output``'s messages say): a full disk says so whatever layer
    noticed it (numpy's own "N requested and M written" included)."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT) or "requested and" in str(error):
        return "the disk is full"
    if error.errno == errno.EFBIG:
        return "the file would be larger than this system allows"
    return error.strerror or str(error)
