"""The ``export`` command on a disk that fills while it writes (the kernel's file size limit: every write past it
fails with EFBIG, in the middle of matplotlib's, Pillow's, numpy's or csv's writing): one line on stderr naming
the file, no traceback, exit status 1, an earlier file of that name byte-identical, no temporary file left. The
core's side, a real full tmpfs included, is in tests/model/test_full_disk.py."""

from __future__ import annotations

import pytest

from model.cli.commands import main as cli_main
from tests.conftest import saved_model
from tests.file_limits import file_size_limit, partial_files

EARLIER = b"the earlier file, which must survive"
LIMIT = 100  # bytes: less than any of the files (an NPY header alone is 128), more than nothing: writing has begun


@pytest.fixture(scope="module")
def model_file(copy_bundle, tmp_path_factory):
    return saved_model(copy_bundle[0], tmp_path_factory.mktemp("model"))


def assert_one_line_naming(stderr: str, path) -> None:
    """One line saying that ``path`` (or a file in that folder) cannot be written."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith(f"transformer-explorer export: error: {path}") and ": cannot be written (" in lines[0], lines


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf", ".csv", ".npy"])
def test_an_export_onto_a_full_disk_is_one_line_and_keeps_the_earlier_file(tmp_path, model_file, capsys, suffix):
    out = tmp_path / f"cross{suffix}"
    out.write_bytes(EARLIER)
    command = ["export", "--model", str(model_file), "--text", "a b c d", "--dpi", "60", "--out", str(out)]
    with file_size_limit(LIMIT):
        code = cli_main(command)
    captured = capsys.readouterr()
    assert code == 1 and "wrote" not in captured.out
    assert_one_line_naming(captured.err, out)
    assert out.read_bytes() == EARLIER and not partial_files(tmp_path)


def test_export_all_onto_a_full_disk_is_one_line_and_keeps_the_earlier_files(tmp_path, model_file, capsys):
    folder = tmp_path / "all"
    folder.mkdir()
    earlier = {name: EARLIER + name.encode() for name in ("index.csv", "cross_L1_H1.png", "cross_L1_H1.npy")}
    for name, data in earlier.items():
        (folder / name).write_bytes(data)
    command = ["export", "--model", str(model_file), "--text", "a b c d", "--all", "--dpi", "60", "--out", str(folder)]
    with file_size_limit(LIMIT):
        code = cli_main(command)
    captured = capsys.readouterr()
    assert code == 1 and "wrote" not in captured.out
    assert_one_line_naming(captured.err, folder)
    assert (folder / "index.csv").read_bytes() == earlier["index.csv"]  # written last, so never reached
    for name, data in earlier.items():
        written = (folder / name).read_bytes()
        assert written == data or len(written) > len(data), name  # the earlier file, or a whole new one
    assert not partial_files(tmp_path)
