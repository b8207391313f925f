"""Issue 39, item 10: an output is never a device, FIFO or socket, nor a file of an input (the model being read, its
timeline). Before the fix ``lens --out X.png`` with X.png a character device printed "wrote X.png" and X.png was then a
regular file (as root, ``--out /dev/null`` would have replaced the system's /dev/null).

Every command that writes is asked to write over a device node made here (the numbers of /dev/null): it must exit 1
with one line saying what the file is, and leave the device a device. A FIFO and a socket are refused too, and so is
what the window's exports call (``atomic_output``, re-checked right before its rename).
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
from pathlib import Path

import pytest

from model.files import OutputError, atomic_output, check_output
from model.io import checkpoint
from model.io.checkpoint import CheckpointError
from model.io.shipped import resolve_model

TEXT = "the cat sees the dog"
OUT = "@OUT"  # stands for the device's path in the arguments below

COMMANDS = {
    "export": ("export", "--model", "copy", "--text", "a b c", "--out", OUT + ".png"),
    "export-csv": ("export", "--model", "copy", "--text", "a b c", "--out", OUT + ".csv"),
    "export-html": ("export", "--model", "copy", "--text", "a b c", "--out", OUT + ".html"),
    "lens": ("lens", "--model", "default", "--text", TEXT, "--out", OUT + ".png"),
    "patch": ("patch", "--model", "default", "--clean", TEXT, "--corrupt", "the cats see the dog", "--out", OUT + ".csv"),
    "neuron": ("neuron", "--model", "default", "--text", TEXT, "--out", OUT + ".png"),
    "neuron-shares": ("neuron", "--model", "default", "--text", TEXT, "--out", "row.csv", "--shares", OUT + ".csv"),
    "qk": ("qk", "no-index", "--kind", "decoder", "--layer", "1", "--out", OUT + ".png"),
    "report-card": ("report-card", "--model", "copy", "--n", "5", "--out", OUT + ".csv"),
    "timeline": ("timeline", "--model", "copy", "--text", "a b c", "--out", OUT + ".gif"),
    "heads-aer-table": ("heads", "--model", "default", "--corpus", "toy-fr", "--aer-table", OUT + ".csv"),
    "attribute": ("attribute", "--model", "default", "--text", TEXT, "--measure", "norm", "--out", OUT + ".npz"),
    "compare": ("compare", "--model", "default", "--with", "rnn-bahdanau", "--text", TEXT, "--out", OUT + ".png"),
    "trace": ("trace", "--model", "default", "--text", TEXT, "--out", OUT + ".npz"),
    "search-csv": ("search", "no-index", "--token", "the", "--csv", OUT + ".csv"),
    "train": ("train", "--corpus", "copy", "--max-steps", "1", "--out", OUT + ".safetensors"),
    "train-timeline": ("train", "--corpus", "copy", "--max-steps", "1", "--out", "m.safetensors"),
}


def make_device(path: Path) -> Path:
    """A character device at ``path`` with /dev/null's numbers; the test is skipped where that is not permitted."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as error:
        pytest.skip(f"cannot make a device node here ({error})")
    return path


def _arguments(name: str) -> tuple[list[str], str]:
    """The command's arguments with the device's file name in place, and that name."""
    arguments = list(COMMANDS[name])
    if name == "train-timeline":
        return arguments, "m.timeline.safetensors"
    index = next(i for i, argument in enumerate(arguments) if argument.startswith(OUT))
    arguments[index] = "device" + arguments[index].removeprefix(OUT)
    return arguments, arguments[index]


def _refused(result: tuple[int, str, str], kind: str) -> str:
    code, out, err = result
    assert code == 1, (code, out, err)
    assert "wrote" not in out and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and kind in lines[0] and "not a regular file" in lines[0], err
    return lines[0]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_refuses_a_device_as_its_output_and_leaves_it(run, tmp_path, name):
    arguments, target = _arguments(name)
    device = make_device(tmp_path / target)
    _refused(run(*arguments), "a character device")
    assert stat.S_ISCHR(os.stat(device).st_mode) and os.stat(device).st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [target]  # nothing else written, no temporary left


def test_a_fifo_and_a_socket_are_refused_too(run, tmp_path):
    os.mkfifo(tmp_path / "pipe.png")
    _refused(run("lens", "--model", "default", "--text", TEXT, "--out", "pipe.png"), "a FIFO")
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe.png").st_mode)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock.csv")  # relative: tmp_path is the working folder (an AF_UNIX path is short)
        _refused(run("report-card", "--model", "copy", "--n", "5", "--out", "sock.csv"), "a socket")
        assert stat.S_ISSOCK(os.stat(tmp_path / "sock.csv").st_mode)


def test_a_link_to_a_device_is_refused(run, tmp_path):
    device = make_device(tmp_path / "null")
    (tmp_path / "link.png").symlink_to(device)
    _refused(run("lens", "--model", "default", "--text", TEXT, "--out", "link.png"), "a character device")
    assert stat.S_ISCHR(os.stat(device).st_mode) and (tmp_path / "link.png").is_symlink()


def test_the_windows_exports_are_refused_by_the_core_call_they_use(tmp_path):
    """The window writes every export, figure, table and model through ``atomic_output``: a device is refused before
    any work, and one made while the file was being written is never renamed over."""
    device = make_device(tmp_path / "figure.png")
    with pytest.raises(OutputError, match="figure.png: is a character device, not a regular file"):
        with atomic_output(device) as temporary:
            temporary.write_bytes(b"never")
    late = tmp_path / "late.png"
    with pytest.raises(OutputError, match="late.png: is a character device"):
        with atomic_output(late) as temporary:
            temporary.write_bytes(b"written")
            make_device(late)  # appears while the figure is drawn
    assert stat.S_ISCHR(os.stat(late).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png", "late.png"]  # no temporary left


def test_the_window_export_of_a_figure_is_refused(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from model.figures.saving import save_figure

    device = make_device(tmp_path / "figure.svg")
    with pytest.raises(OutputError, match="is a character device"):
        save_figure(Figure(), device)
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_an_inputs_timeline_is_an_input_too(tmp_path):
    """A model's timeline goes with it: an output onto the timeline of the model being read is refused, and so is
    saving a model (the window's "Save as") over the timeline of the file it was opened from."""
    model = tmp_path / "copy.safetensors"
    shutil.copyfile(resolve_model("copy"), model)
    timeline = tmp_path / "copy.timeline.safetensors"
    shutil.copyfile(resolve_model("copy").with_name(timeline.name), timeline)
    before = timeline.read_bytes()
    with pytest.raises(OutputError, match="is an input of this command"):
        check_output(timeline, (model,))
    bundle = checkpoint.load(model)
    with pytest.raises(CheckpointError, match="is an input of this command"):
        checkpoint.save(bundle, timeline)
    assert timeline.read_bytes() == before
    checkpoint.save(bundle, model)  # saved in place: allowed, and its timeline is kept
    assert timeline.read_bytes() == before


def test_a_file_inside_a_model_folder_being_read_is_an_input(tmp_path):
    folder = tmp_path / "pretrained"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(OutputError, match="is an input of this command"):
        check_output(folder / "config.json", (folder,))
    assert check_output(folder / "new.png", (folder,)) == folder / "new.png"  # a new file beside it is fine


@pytest.mark.parametrize(
    "arguments",
    [
        ("index", "--model", "copy", "--corpus", "copy", "--limit", "5", "--quiet", "--out", "device"),
        ("export", "--model", "copy", "--text", "a b c", "--all", "--out", "device"),
    ],
)
def test_a_folder_output_that_is_a_device_is_refused_and_left(run, tmp_path, arguments):
    device = make_device(tmp_path / "device")
    code, out, err = run(*arguments)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert stat.S_ISCHR(os.stat(device).st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["device"]
