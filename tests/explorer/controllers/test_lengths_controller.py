"""The length experiment's controller without a window (explorer/controllers/lengths.py): a run in a job with
progress, its result, a point opening its scheme's model and sentence in the Explore controller, Save, Cancel, and bad
settings in one message."""

from __future__ import annotations

from pathlib import Path

from explorer.controllers.lengths import LengthsController
from model.cli.recorded import lengths_record
from model.lengths.experiment import LengthSettings
from model.provenance.embed import read_record
from tests.explorer.controllers.recording import WAIT_S, Recorder

TINY = LengthSettings(train_max=3, test_max=5, schemes=("sinusoidal", "none"), steps=10, train_pairs=100, per_length=2)
EVENTS = ("progress", "ready", "running_changed", "message", "opened")


def test_a_run_its_points_and_its_files(controllers, tmp_path):
    lengths = LengthsController(controllers.explore, controllers.runner, tmp_path)
    events = Recorder(lengths, *EVENTS)
    assert not lengths.open_point("none", 4) and "Run the length experiment first" in events.of("message")[-1][0]
    assert lengths.run(TINY) and lengths.running
    assert controllers.inbox.wait_until(lambda: not lengths.running, WAIT_S)
    result = lengths.result
    assert result is not None and events.of("ready")[-1] == (result,) and len(result.rows) == 10
    stages = {args[0] for args in events.of("progress")}
    assert {"sinusoidal: training", "none: training", "none: reading"} <= stages
    assert events.of("running_changed") == [(True,), (False,)]
    assert lengths.open_point("none", 4)
    row = lengths.row("none", 4)
    assert row is not None and events.of("opened")[-1] == ("none", 4)
    bundle = controllers.explore.bundle
    assert bundle is not None and Path(bundle.path) == Path(result.models["none"]) and controllers.explore.text == row.example
    assert bundle.config.positional_encoding == "none"
    assert lengths.save(tmp_path / "l.csv") == tmp_path / "l.csv" and lengths.save(tmp_path / "l.svg")
    for name in ("l.csv", "l.svg"):  # the lengths command of these settings, as the command line records it
        assert read_record(tmp_path / name).command == lengths_record(TINY).command
    assert not lengths.save(tmp_path / "l.txt") and "could not be saved" in events.of("message")[-1][0]


def test_bad_settings_are_one_message_and_cancel_stops_a_run(controllers, tmp_path):
    lengths = LengthsController(controllers.explore, controllers.runner, tmp_path)
    events = Recorder(lengths, *EVENTS)
    assert not lengths.run(LengthSettings(train_max=10, test_max=5)) and not lengths.running
    assert events.of("message")[-1][0].startswith("The length experiment cannot run: --test-max 5 is below --train-max 10")
    assert lengths.run(LengthSettings(train_max=3, test_max=5, schemes=("rope",), steps=5000, train_pairs=100))
    lengths.cancel()
    assert not lengths.running and events.of("message")[-1] == ("Length experiment cancelled.",)
    assert controllers.runner.join(WAIT_S)
    assert lengths.result is None
