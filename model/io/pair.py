"""A model file and its timeline are written as a pair: after a failure, a kill or a power cut at any moment, the folder
holds the new model with its new timeline, or the old model with its old timeline (or none, if it had none), never one
model beside another's timeline.

Two files cannot be replaced in one step, so the save is a small two-phase commit:

1. both are written in full to temporary files beside them (``model.files.atomic_output``) and synced; a failure here
   (a full disk, a file-size limit that the model fits and its timeline does not) removes both, and nothing changed;
2. the old timeline is hard-linked to ``.NAME.timeline.safetensors.previous`` and a journal, ``.NAME.pair.json``, records
   the old and the new model's digests; then the timeline is renamed into place and the model LAST;
3. the backup and the journal are removed.

The only moment the pair on disk disagrees is between the two renames of step 2, and the journal marks it. Whoever
next looks at the timeline (``settle``: every reader of a timeline, every save) finishes the save: the model file on
disk carries the new digest (its rename happened) and the backup goes; or it does not, and the old timeline is put
back (or the new one removed, when the model had none). A journal whose writer still runs is left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from model.errors import UserError
from model.files import TIMELINE_SUFFIX, OutputError, atomic_output, check_output, open_input, process_runs, remove_stale_partials
from model.io.header import MAX_HEADER_BYTES, json_header

MODEL_DIGEST_KEY = "tensor_sha256"  # the model file's digest of its tensors (model/io/checkpoint.py)
TIMELINE_MODEL_KEY = "model_sha256"  # the timeline's record of the model it belongs to (model/io/timeline.py)
REMOVE = "remove"  # the timeline beside the model goes (it belongs to the model the file held before)

_saving: set[Path] = set()  # journals of this process's saves in progress (another thread must not settle them)
_lock = threading.Lock()


class _Unreadable(UserError):
    pass


def timeline_of(model_path: str | os.PathLike) -> Path:
    path = Path(model_path)
    return path.with_name(path.stem + TIMELINE_SUFFIX)


def journal_of(model_path: str | os.PathLike) -> Path:
    path = Path(model_path)
    return path.with_name(f".{path.name}.pair.json")


def backup_of(model_path: str | os.PathLike) -> Path:
    timeline = timeline_of(model_path)
    return timeline.with_name(f".{timeline.name}.previous")


def header_field(path: str | os.PathLike, key: str) -> str | None:
    """A metadata field of the safetensors file at ``path``, from its header alone; None when it has none or the file
    is missing, not a regular file or unreadable."""
    try:
        with open_input(path, "safetensors file", _Unreadable) as handle:  # never a FIFO or a device: it would block
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8)
            (header_size,) = struct.unpack("<Q", head) if len(head) == 8 else (0,)
            head += handle.read(min(header_size, MAX_HEADER_BYTES))
        metadata = json_header(head, size, str(path), _Unreadable, "unreadable")[1]
    except (OSError, UserError):
        return None
    value = (metadata or {}).get(key)
    return value if isinstance(value, str) else None


def settle(model_path: str | os.PathLike) -> None:
    """Finish a save of the model at ``model_path`` that was stopped between its two renames (see above); nothing when
    there is no journal, or its writer still runs. Errors are ignored (tidying up: a reader refuses a timeline of
    another model by its digest anyway)."""
    journal = journal_of(model_path)
    with _lock:
        if journal in _saving or not journal.is_file():
            return
        try:
            record = json.loads(journal.read_text(encoding="utf-8"))
            pid, new = int(record["pid"]), record["new_model"]
        except (OSError, ValueError, KeyError, TypeError):
            with suppress(OSError):
                journal.unlink()  # not one this app wrote whole: nothing to finish
            return
        if pid != os.getpid() and process_runs(pid):
            return  # another process is saving right now
        _finish(Path(model_path), new)
        for path in (Path(model_path), timeline_of(model_path)):
            remove_stale_partials(path)  # the dead writer's temporary files
        with suppress(OSError):
            journal.unlink()


def _finish(model_path: Path, new: str) -> None:
    """Commit (the model's rename happened: drop the backup) or roll back (restore the old timeline)."""
    backup, timeline = backup_of(model_path), timeline_of(model_path)
    if header_field(model_path, MODEL_DIGEST_KEY) == new:
        with suppress(OSError):
            backup.unlink()
        return
    with suppress(OSError):
        if backup.exists():
            os.replace(backup, timeline)  # the old model's own timeline, back beside it
        elif header_field(timeline, TIMELINE_MODEL_KEY) == new:
            timeline.unlink()  # ours, and the old model had none


def write_pair(model_path: str | os.PathLike, model_bytes: bytes, digest: str, timeline: bytes | Path | str | None) -> None:
    """Write the model file's bytes (tensor digest ``digest``) to ``model_path`` together with its ``timeline``: the
    timeline file's bytes, a timeline file to copy, ``REMOVE`` (the one there goes) or None (left as it is: it is
    this model's, or there is none). Both or neither (see above); an OutputError names the file that failed."""
    model_path = check_output(model_path)
    settle(model_path)
    if timeline is None:
        with atomic_output(model_path) as temporary:
            _write(temporary, model_bytes)
        return
    try:
        check_output(timeline_of(model_path))  # before anything is written
    except OutputError as error:
        raise OutputError(f"{error}; so {model_path} was not saved either (a model and its timeline are saved together)") from None
    journal = journal_of(model_path)
    with _lock:
        _saving.add(journal)
    try:
        with atomic_output(model_path) as temporary:
            _write(temporary, model_bytes)
            with _timeline_written(model_path, timeline) as written:
                _prepare(model_path, digest, written)
        _commit(model_path)
    except BaseException:
        with _lock:
            _saving.discard(journal)
        settle(model_path)  # a failure between the renames: the old pair back
        raise
    with _lock:
        _saving.discard(journal)


@contextmanager
def _timeline_written(model_path: Path, timeline: bytes | Path | str) -> Iterator[bool]:
    """Within it, the new timeline is written in full to a temporary file (none when it is to be removed); it is renamed
    into place (or the old one removed) when the block ends. Yields whether a new timeline is written."""
    path = timeline_of(model_path)
    if isinstance(timeline, str) and timeline == REMOVE:
        yield False
        with suppress(FileNotFoundError):
            path.unlink()
        return
    try:
        with atomic_output(path) as temporary:
            if isinstance(timeline, bytes):
                _write(temporary, timeline)
            else:
                shutil.copyfile(timeline, temporary)
            yield True
    except OutputError as error:
        if not str(error).startswith(str(path)):
            raise
        raise OutputError(f"{error}; so {model_path} was not saved either (a model and its timeline are saved together)") from None


def _write(temporary: Path, data: bytes) -> None:
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())  # synced before the first rename, so the gap between the two stays short


def _prepare(model_path: Path, digest: str, new_timeline: bool) -> None:
    """Before the first rename: the old timeline kept under the backup's name, and the journal that says so."""
    timeline, backup = timeline_of(model_path), backup_of(model_path)
    with suppress(FileNotFoundError):
        backup.unlink()  # a finished save's leftover (settle removed any that mattered)
    kept = False
    if timeline.is_file():
        try:
            os.link(timeline, backup)
        except OSError:  # a file system without hard links
            shutil.copy2(timeline, backup)
        kept = True
    record = {
        "pid": os.getpid(),
        "old_model": header_field(model_path, MODEL_DIGEST_KEY),
        "new_model": digest,
        "backup": backup.name if kept else None,
        "new_timeline": new_timeline,
    }
    with atomic_output(journal_of(model_path)) as temporary:
        _write(temporary, json.dumps(record).encode("utf-8"))


def _commit(model_path: Path) -> None:
    for path in (backup_of(model_path), journal_of(model_path)):
        with suppress(FileNotFoundError):
            path.unlink()
