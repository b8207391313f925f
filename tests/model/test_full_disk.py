"""A disk that fills (or fails) while a file is written: every export (PNG, SVG, PDF, CSV, NPY, Export all) ends in
one OutputError naming the file, whichever layer noticed (matplotlib's PDF writer fails with its own
AttributeError when its header cannot be written), and leaves an earlier file of that name byte-identical with
no temporary file beside it. The failures are real: the kernel's file size limit (EFBIG), a flush that fails
(ENOSPC, EIO), and, where the machine allows a private mount, a 200 KB tmpfs that fills (ENOSPC)."""

from __future__ import annotations

import errno
import json
import textwrap

import pytest

from model.errors import UserError
from model.figures.export import ExportRequest, export_all, export_view
from model.files import OutputError, atomic_output, write_failure
from tests.file_limits import failing_sync, file_size_limit, partial_files, run_on_small_disk
from tests.model.figures.test_figures import synthetic_trace

FORMATS = (".png", ".svg", ".pdf", ".csv", ".npy")
EARLIER = b"the earlier file, which must survive"


def test_write_failure_finds_the_os_error_however_a_library_wrapped_it(tmp_path):
    path = tmp_path / "f.pdf"
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise AttributeError("'Stream' object has no attribute 'pos'")  # noqa: B904 - as matplotlib does
    except AttributeError as wrapped:
        failure = write_failure(wrapped, path)
    assert failure is not None and str(failure) == f"{path}: cannot be written (the disk is full); an earlier file is unchanged"
    assert "larger than this system allows" in str(write_failure(OSError(errno.EFBIG, "File too large"), path))
    assert "Input/output error" in str(write_failure(OSError(errno.EIO, "Input/output error"), path))
    assert "(RuntimeError: libpng write error)" in str(write_failure(RuntimeError("libpng write error"), path))
    for not_a_write_failure in (UserError("a bad choice"), KeyboardInterrupt()):
        assert write_failure(not_a_write_failure, path) is None


def test_a_backend_error_while_writing_is_one_message_and_leaves_nothing(tmp_path):
    path = tmp_path / "f.svg"
    path.write_bytes(EARLIER)
    with pytest.raises(OutputError, match=r"f\.svg: cannot be written \(ValueError: broken\); an earlier file is unchanged"):
        with atomic_output(path) as temporary:
            temporary.write_bytes(b"half")
            raise ValueError("broken")
    assert path.read_bytes() == EARLIER and not partial_files(tmp_path)


@pytest.fixture(scope="module")
def whole_sizes(tmp_path_factory) -> dict[str, int]:
    """The size of each format's file of the trace below, written with room to spare."""
    folder = tmp_path_factory.mktemp("whole")
    trace = synthetic_trace(7)
    return {suffix: export_view(trace, ExportRequest(dpi=60), folder / f"f{suffix}").stat().st_size for suffix in FORMATS}


@pytest.mark.parametrize("share", [0.0, 0.6])  # how much of the file fits: nothing (PDF: not its header), more than half
@pytest.mark.parametrize("suffix", FORMATS)
def test_every_format_past_the_file_size_limit_is_one_message(tmp_path, whole_sizes, suffix, share):
    path = tmp_path / f"focus{suffix}"
    path.write_bytes(EARLIER)
    with file_size_limit(int(whole_sizes[suffix] * share)), pytest.raises(OutputError) as raised:
        export_view(synthetic_trace(7), ExportRequest(dpi=60), path)
    assert str(raised.value).startswith(f"{path}: cannot be written (the file would be larger than this system allows)")
    assert path.read_bytes() == EARLIER and not partial_files(tmp_path)


@pytest.mark.parametrize("code, reason", [(errno.ENOSPC, "the disk is full"), (errno.EIO, "Input/output error")])
def test_a_flush_that_fails_is_one_message_for_every_format(tmp_path, monkeypatch, code, reason):
    trace = synthetic_trace(5)
    for suffix in FORMATS:
        path = tmp_path / f"focus{suffix}"
        path.write_bytes(EARLIER)
        message = f"focus\\{suffix}: cannot be written \\({reason}\\)"
        with failing_sync(monkeypatch, code), pytest.raises(OutputError, match=message):
            export_view(trace, ExportRequest(dpi=60), path)
        assert path.read_bytes() == EARLIER
    assert not partial_files(tmp_path)


def test_export_all_on_a_full_disk_is_one_message_once_every_writer_has_ended(tmp_path):
    trace = synthetic_trace(6)
    folder = tmp_path / "all"
    folder.mkdir()
    (folder / "index.csv").write_bytes(EARLIER)
    (folder / "cross_L1_H1.png").write_bytes(EARLIER)
    with file_size_limit(900), pytest.raises(OutputError, match="cannot be written") as raised:
        export_all(trace, folder, ExportRequest(dpi=60), formats=(".png", ".csv", ".npy", ".pdf"))
    assert str(raised.value).count("cannot be written") == 1
    assert not partial_files(folder)  # the PNG writers had finished before it raised
    assert (folder / "index.csv").read_bytes() == EARLIER
    png = folder / "cross_L1_H1.png"
    assert png.read_bytes() == EARLIER or png.read_bytes().startswith(b"\x89PNG")  # the earlier one, or a whole new one


SMALL_DISK_SCRIPT = textwrap.dedent("""
    import json, os
    from pathlib import Path
    from model.figures.export import ExportRequest, export_all, export_view
    from model.files import OutputError
    from tests.model.figures.test_figures import synthetic_trace

    disk, trace, outcome = Path(os.environ["DISK"]), synthetic_trace(7), {}
    filler = disk / "filler"

    def fill(room):
        with open(filler, "wb") as handle:  # the disk full, then `room` bytes given back
            try:
                handle.write(b"0" * 1_000_000)
            except OSError:
                pass
        os.truncate(filler, max(0, filler.stat().st_size - room))

    for name in ("focus.png", "focus.svg", "focus.pdf", "focus.csv", "focus.npy", "all"):
        path = disk / name
        if name == "all":
            path.mkdir()
            path = path / "index.csv"
        path.write_bytes(b"earlier")
        fill(4096 if name.endswith((".png", ".svg", ".pdf")) else 0)
        try:
            if name == "all":
                export_all(trace, disk / "all", ExportRequest(dpi=150))
            else:
                export_view(trace, ExportRequest(dpi=150), path)
            message = None
        except OutputError as error:
            message = str(error)
        left = sorted(p.name for p in disk.rglob("*.partial"))
        outcome[name] = [message, path.read_bytes() == b"earlier", left]
        filler.unlink()
    print(json.dumps(outcome))
""")


def test_a_real_small_disk_that_fills_during_each_write(tmp_path):
    result = run_on_small_disk(SMALL_DISK_SCRIPT, tmp_path)
    if result is None:
        pytest.skip("this machine cannot mount a private tmpfs (unshare)")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    for name, (message, earlier_kept, partials) in outcome.items():
        assert message is not None and "cannot be written (the disk is full)" in message, (name, message)
        assert earlier_kept and partials == [], (name, earlier_kept, partials)
