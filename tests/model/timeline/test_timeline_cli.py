"""``train --timeline N``, ``--no-timeline`` and ``--timeline-storage``: the timeline beside the model, its count, and
the model file itself exactly as without one (recording changes nothing of training)."""

from __future__ import annotations

import json
import struct
from functools import partial

import pytest

import model.training.trainer
from model.cli.commands import main
from model.io import checkpoint
from model.io.timeline import load_timeline, timeline_path
from model.runtime import CoreFollower

TINY = ["--corpus", "copy", "--corpus-size", "300", "--layers", "2", "--d-model", "32", "--heads", "4", "--d-ff", "64"]
TINY += ["--vocab-size", "100", "--max-steps", "15", "--valid-every", "5", "--valid-decode", "5", "--warmup", "10"]


def _contents(path) -> tuple[dict, bytes]:
    """A safetensors file's header (its metadata's order aside: safetensors writes it in no fixed order) and data."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size]), data[8 + size :]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    """The same sums in the same order in every run, so that two runs of one seed give the same weights."""
    monkeypatch.setattr(model.training.trainer, "CoreFollower", partial(CoreFollower, most=1, sample=lambda: None))


def test_timeline_n_writes_at_most_n_snapshots_beside_the_model(tmp_path, capsys):
    out = tmp_path / "m.safetensors"
    assert main(["train", *TINY, "--out", str(out), "--timeline", "4"]) == 0
    assert "its timeline (4 snapshots" in capsys.readouterr().err
    timeline = load_timeline(out, checkpoint.load(out))
    assert [s.step for s in timeline.snapshots][0] == 0 and len(timeline) == 4 and timeline.snapshots[-1].step == 15
    assert timeline.storage == "float16" and all(s.validation for s in timeline.snapshots if s.step in (5, 10, 15))
    plain = tmp_path / "plain.safetensors"
    assert main(["train", *TINY, "--out", str(plain), "--no-timeline", "--quiet"]) == 0
    assert not timeline_path(plain).exists()
    assert _contents(plain) == _contents(out)  # the model file is exactly what it is without a timeline
    compact = tmp_path / "compact.safetensors"
    assert main(["train", *TINY, "--out", str(compact), "--timeline", "4", "--timeline-storage", "int8", "--quiet"]) == 0
    assert load_timeline(compact, checkpoint.load(compact)).storage == "int8"
    assert timeline_path(compact).stat().st_size < timeline_path(out).stat().st_size


def test_bad_timeline_options_are_one_line_before_any_training(tmp_path, capsys):
    out = tmp_path / "m.safetensors"
    for options, expected in (
        (["--timeline", "1"], "--timeline must be at least 2"),
        (["--timeline", "0"], "--no-timeline records none"),
        (["--timeline-storage", "int4"], "invalid choice"),
    ):
        assert main(["train", *TINY, "--out", str(out), *options]) in (1, 2)
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err, err
    timeline_path(out).mkdir()  # where the timeline would go: refused before training, not after
    assert main(["train", *TINY, "--out", str(out), "--quiet"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "is a folder" in lines[0] and not out.exists(), lines
    assert main(["train", *TINY, "--out", str(out), "--quiet", "--no-timeline"]) == 0  # no timeline: no need for it
