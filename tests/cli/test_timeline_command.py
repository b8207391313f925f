"""``transformer-explorer timeline`` end to end on an injected timeline (the copy run of tests/model/timeline): an
animation, a strip, a difference and the curves, each by the suffix of --out; and its bad inputs, each one line with
no traceback that writes nothing."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest
from PIL import Image

import model.cli.timeline
from model.cli.commands import main
from model.runtime import set_cpu_threads
from tests.conftest import assert_figure, saved_model
from tests.model.timeline.recorded import copy_timeline

TEXT = "a b c d e f"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timeline")
    timeline = copy_timeline()[0]
    (folder / "earlier.gif").write_bytes(b"an earlier animation")
    (folder / "read-only").mkdir(mode=0o500)
    # A copy is saved: saving names the bundle it is given, and the window's tests open the shared one as unsaved.
    return folder, saved_model(dataclasses.replace(timeline.bundle), folder), timeline


@pytest.fixture
def run(workspace, monkeypatch, capsys):
    """main(timeline --model M --text TEXT ...) with the copy run's timeline injected: (exit code, stdout, stderr)."""
    folder, path, timeline = workspace
    monkeypatch.setattr(model.cli.timeline, "open_timeline", lambda name, device="cpu": timeline)
    monkeypatch.chdir(folder)
    set_cpu_threads(1)

    def command(*options: str) -> tuple[int, str, str]:
        code = main(["timeline", "--model", str(path), "--text", TEXT, *options])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return command


def _check_best_aer(line: str) -> None:
    """The summary's AER line: the best head's AER falls from above 0.8 to below 0.1 (its third decimals are the
    machine's arithmetic over 500 training steps)."""
    found = re.fullmatch(
        r"best head's AER: (0\.\d{3}) at step 1 of 500 → (0\.\d{3}) at step 500 of 500 \(50 copy test pairs, seed 0\)", line
    )
    assert found and float(found[1]) > 0.8 and float(found[2]) < 0.1, line


def test_an_animation_a_strip_and_a_difference(run, workspace):
    folder = workspace[0]
    code, out, err = run("--view", "cross", "--layer", "1", "--head", "2", "--snapshots", "0,4,7", "--out", "anim.gif")
    lines = out.splitlines()  # issue 39: the summary the README promises, not only "wrote ..."
    assert (code, err, lines[-1]) == (0, "", "wrote anim.gif")
    assert lines[0] == "of snapshots 0, 4, 7 (of 0–7):"
    _check_best_aer(lines[1])
    assert any("alignment-like from step 500 of 500" in line for line in lines)  # of those three
    assert sum(line.startswith("  1. rate ") for line in lines) == 1
    with Image.open(folder / "anim.gif") as image:
        assert image.n_frames == 3
    assert run("--grid", "--view", "encoder", "--width", "column", "--out", "strip.svg")[0] == 0
    assert_figure(folder / "strip.svg", width=3.3, texts=("step 1", "step 500"))
    assert run("--view", "cross", "--layer", "1", "--diff", "0", "7", "--out", "diff.pdf")[0] == 0
    assert_figure(folder / "diff.pdf", texts=("step 500 minus step 1",))
    assert run("--view", "cross", "--layer", "1", "--head", "mean", "--diff", "3", "3", "--out", "same.png")[0] == 0


def test_the_curves_as_csv_and_figure_with_the_aer_and_the_phase_changes(run, workspace):
    code, out, _ = run("--out", "curves.csv")
    lines = out.splitlines()
    assert code == 0
    _check_best_aer(lines[0])
    assert re.search(r"alignment-like from step (177|250) of 500", lines[1]) and lines[-1] == "wrote curves.csv"
    assert sum(line.startswith("  1. rate ") for line in lines) == 1
    header = (workspace[0] / "curves.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith("snapshot,step,name,") and ",aer," in header
    assert run("--curves", "--aer-pairs", "10", "--snapshots", "0,7", "--out", "curves.png")[0] == 0


def test_a_model_without_a_timeline_is_one_line(workspace, capsys):
    folder, path, _ = workspace
    assert main(["timeline", "--model", str(path), "--text", TEXT, "--out", str(folder / "x.gif")]) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith(
        f"{path}: has no timeline (model.timeline.safetensors is not beside it; training records one unless --no-timeline)"
    )
    assert len(err.splitlines()) == 1 and not (folder / "x.gif").exists()


BAD = [
    (["--layer", "1", "--head", "9", "--out", "x.gif"], "head must be between 1 and 2, not 9"),
    (["--layer", "4", "--out", "x.gif"], "layer must be between 1 and 1, not 4"),
    (["--layer", "1", "--head", "median", "--out", "x.gif"], "head must be a number from 1"),
    (["--view", "cross", "--layer", "1", "--head", "rollout", "--out", "x.png"], "rollout"),
    (["--diff", "0", "8", "--out", "x.png"], "snapshot 8 does not exist: this timeline has snapshots 0 to 7"),
    (["--diff", "0", "1", "--out", "x.gif"], "--diff draws one figure"),
    (["--diff", "0", "1", "--snapshots", "0,1", "--out", "x.png"], "not both"),
    (["--snapshots", "0,99", "--out", "x.gif"], "snapshot 99 does not exist"),
    (["--snapshots", "a,b", "--out", "x.gif"], "--snapshots 'a,b'"),
    (["--out", "x.bmp"], "--out must end in .gif"),
    (["--out", "x"], "--out must end in .gif"),
    (["--curves", "--out", "x.gif"], "--curves is a figure or a table"),
    (["--out", "nowhere/x.gif"], "does not exist"),
    (["--out", "read-only/x.png"], "not writable"),
    (["--head", "1", "--out", "x.gif"], "give --layer too"),
    (["--grid", "--layer", "1", "--out", "x.gif"], "leave out --layer"),
    (["--target", "reference", "--out", "x.gif"], "needs --reference"),
    (["--target", "own", "--reference", "a b", "--out", "x.gif"], "--reference is forced with --target reference"),
    (["--target", "own", "--diff", "0", "7", "--out", "x.png"], "force one target"),
    (["--width", "wide", "--out", "x.png"], "width must be"),
    (["--colormap", "nope", "--out", "x.png"], "unknown colour map"),
    (["--dpi", "5", "--out", "x.gif"], "--dpi must be between 20 and 300"),
    (["--aer-pairs", "-1", "--out", "x.csv"], "0 (none) or more"),
    (["--view", "cross", "--out", "earlier.gif", "--frame-seconds", "0"], "--frame-seconds"),
]


@pytest.mark.parametrize(("options", "message"), BAD, ids=[" ".join(options) for options, _ in BAD])
def test_bad_input_is_one_line_and_writes_nothing(run, workspace, options, message):
    folder = workspace[0]
    before = sorted(os.listdir(folder))
    code, out, err = run(*options)
    assert code != 0 and message in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert sorted(os.listdir(folder)) == before and (folder / "earlier.gif").read_bytes() == b"an earlier animation"
    assert "wrote" not in out
