"""Writes that fail as they do on a full disk, for the tests of every export path (tests/model/test_full_disk.py,
tests/cli/test_export_full_disk.py, tests/explorer/test_export_full_disk.py).

- ``file_size_limit(n)``: the kernel itself refuses every write past ``n`` bytes of any file (RLIMIT_FSIZE, with
  SIGXFSZ ignored so the write fails with EFBIG instead of killing the process): the real failure, reached in the
  middle of whatever library is writing (matplotlib's PDF writer, Pillow, numpy, csv), in every thread.
- ``failing_sync(errno)``: the data is written but flushing it to the disk fails (ENOSPC on a full disk where
  blocks are allocated late, EIO on a failing one): the failure that reaches ``atomic_output`` itself.
- ``run_on_small_disk(script)``: ``script`` in a process of its own with a real 200 KB tmpfs at ``$DISK``
  (a private mount in a user namespace: ``unshare``), where writes fail with ENOSPC; None where this machine
  offers no such namespace (the tests that need it skip).
- ``partial_files(folder)``: the temporary files an atomic write left in ``folder`` (none, always).
"""

from __future__ import annotations

import errno as errors
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """While inside: no file of this process grows past ``limit`` bytes; a write past it fails with EFBIG."""
    if resource is None or not hasattr(signal, "SIGXFSZ"):
        pytest.skip("no file size limit (RLIMIT_FSIZE) on this system")
    import matplotlib.pyplot  # noqa: F401 - its font cache is written before the limit, not under it

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


@contextmanager
def failing_sync(monkeypatch, code: int = errors.ENOSPC) -> Iterator[None]:
    """While inside: flushing a written file to the disk fails with ``code`` (ENOSPC, EIO)."""

    def fsync(_descriptor: int) -> None:
        raise OSError(code, os.strerror(code))

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fsync)
        yield


def partial_files(folder: Path) -> list[str]:
    return sorted(path.name for path in Path(folder).rglob("*.partial"))


SMALL_DISK_KB = 200


def run_on_small_disk(script: str, tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess | None:
    """Run ``script`` (Python) with a real tmpfs of 200 KB mounted at the folder in ``$DISK``; None when this machine
    cannot mount one (no ``unshare``, or user namespaces disabled)."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return None
    disk = tmp_path / "disk"
    disk.mkdir()
    program = tmp_path / "on_small_disk.py"
    program.write_text(script, encoding="utf-8")
    mount = f'mount -t tmpfs -o size={SMALL_DISK_KB}k tmpfs "$DISK" || exit 77; exec "$PYTHON" "$PROGRAM"'
    environment = {**os.environ, "DISK": str(disk), "PYTHON": sys.executable, "PROGRAM": str(program), "PYTHONPATH": str(ROOT)}
    try:
        result = subprocess.run(
            [unshare, "--user", "--map-root-user", "--mount", "sh", "-c", mount],
            env=environment,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except OSError:
        return None
    if result.returncode == 77 or (result.returncode != 0 and "unshare" in result.stderr and not result.stdout):
        return None
    return result
