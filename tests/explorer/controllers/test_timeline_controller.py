"""The timeline's controllers without a window (and without Qt), on the copy run's snapshots
(tests/model/timeline/recorded.py): a model's timeline is found in a job, a snapshot is explored keeping the
sentence, step and heads knocked out, a newer position supersedes one still decoding, play advances and stops at
the end, a snapshot minus itself is zero, two snapshots go side by side named by their steps, and the curves are
measured with progress, cancelled, and lead from a phase change to its pair of snapshots."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from explorer.controllers.timeline import DIFFERENCE, SIDE_BY_SIDE, describe_record, symmetric_levels
from explorer.controllers.timeline_curves import DECODING, MEASURING
from model.kinds import AttentionKind
from model.nn.masking import Head
from model.timeline.source import TimelineError
from tests.explorer.controllers.recording import WAIT_S, Recorder
from tests.model.timeline.recorded import copy_timeline

SENTENCE = "a b c d e f"


@pytest.fixture
def timeline(controllers):
    """(controllers, the copy run's timeline): its final model explored with SENTENCE, its timeline shown."""
    source = copy_timeline()[0]
    controllers.timeline.find = lambda bundle: source if bundle is source.bundle else None
    controllers.explore.set_model(source.bundle)
    assert controllers.explore.translate(SENTENCE)
    assert controllers.inbox.wait_until(lambda: controllers.timeline.source is not None, WAIT_S)
    return controllers, source


def settle(controllers) -> None:
    assert controllers.inbox.wait_until(lambda: not controllers.timeline.running, WAIT_S)


def test_a_model_without_a_timeline_has_none_and_a_bad_one_is_a_message(controllers, copy_bundle):
    copy_bundle = copy_bundle[0]
    opened = Recorder(controllers.timeline, "opened", "message")
    controllers.explore.set_model(copy_bundle)
    settle(controllers)
    assert controllers.timeline.source is None and opened.of("opened") == []  # nothing shown, nothing to hide
    assert controllers.explore.snapshot == ""

    def damaged(_bundle):
        raise TimelineError("copy.timeline.safetensors: a byte is flipped")

    controllers.timeline.find = damaged
    controllers.explore.set_model(copy_bundle)
    settle(controllers)
    assert controllers.timeline.source is None and controllers.explore.bundle is copy_bundle
    assert opened.of("message")[-1] == (
        "The model's timeline cannot be shown: copy.timeline.safetensors: a byte is flipped. The model opened without it.",
    )


def test_a_snapshot_is_explored_keeping_the_sentence_step_and_heads(timeline):
    controllers, source = timeline
    explore, line = controllers.explore, controllers.timeline
    assert line.index == 7 and explore.snapshot == "step 500 of 500" and explore.bundle is source.bundle
    final = explore.trace
    explore.toggle_head(Head(AttentionKind.ENCODER, 0, 1))
    explore.go_to_step(3)
    events = Recorder(explore, "snapshot_changed", "weights_changed")
    line.move(2)
    assert explore.bundle is source.bundle  # until the job is done
    settle(controllers)
    assert explore.snapshot == "step 8 of 500" and explore.bundle is not source.bundle and explore.opened is source.bundle
    assert events.of("snapshot_changed") == [("step 8 of 500",)] and len(events.of("weights_changed")) == 1
    assert explore.text == SENTENCE and explore.current_step == 3 and explore.trace.n_steps == 3
    assert explore.trace.masked_heads == ["encoder:1:2"]
    assert not np.allclose(explore.trace.cross, final.at_step(3).cross)  # an early snapshot attends otherwise
    assert not explore.has_unsaved_training()
    line.move(7)  # the last snapshot is the model as opened, itself
    settle(controllers)
    assert explore.bundle is source.bundle and explore.snapshot == "step 500 of 500"
    with pytest.raises(TimelineError, match="snapshot 8 does not exist"):
        line.move(8)


def test_a_newer_position_supersedes_one_still_decoding(timeline):
    controllers, _source = timeline
    shown = Recorder(controllers.timeline, "shown", "moved")
    for index in (1, 2, 4):
        controllers.timeline.move(index)
    settle(controllers)
    assert shown.of("moved") == [(1,), (2,), (4,)] and shown.of("shown") == [(4,)]
    assert controllers.explore.snapshot == "step 63 of 500" and len(controllers.timeline.kept()) <= 3


def test_play_goes_through_the_snapshots_and_stops_at_the_end(timeline):
    controllers, _source = timeline
    line = controllers.timeline
    playing = Recorder(line, "playing_changed")
    line.play()  # at the last snapshot: from the first
    assert line.playing and line.index == 0 and line.moving
    line.advance()  # the first is still decoding: the tick waits
    assert line.index == 0
    visited = [0]
    while line.playing:
        settle(controllers)
        line.advance()
        visited.append(line.index)
    assert visited == [0, 1, 2, 3, 4, 5, 6, 7, 7] and playing.of("playing_changed") == [(True,), (False,)]
    line.loop = True
    line.play()
    settle(controllers)
    line.move(7)
    settle(controllers)
    line.advance()
    assert line.index == 0 and line.playing
    line.pause()
    assert not line.playing


def test_a_snapshot_minus_itself_is_zero_and_minus_another_is_not(timeline):
    controllers, _source = timeline
    explore, line = controllers.explore, controllers.timeline
    line.move(4)
    settle(controllers)
    compared = Recorder(line, "compare_changed")
    line.compare_with(4)
    settle(controllers)
    assert compared.of("compare_changed") == [(4, DIFFERENCE)] and line.differing
    partner = line.partner(explore.trace)
    for kind in explore.trace.kinds:
        assert np.array_equal(partner.matrix(kind), explore.trace.matrix(kind))
    assert line.partner(explore.trace) is partner  # decoded once per trace
    line.compare_with(0)
    settle(controllers)
    difference = explore.trace.cross - line.partner(explore.trace).cross
    assert np.abs(difference).max() > 0.05 and line.describe_comparison() == "step 63 of 500 minus step 1"
    low, high = symmetric_levels(difference)
    assert low == -high and high == pytest.approx(np.abs(difference).max())
    assert symmetric_levels(np.zeros(3)) == (-1.0, 1.0)
    explore.go_to_step(2)  # the difference follows the step
    assert line.partner(explore.trace).cross.shape == explore.trace.cross.shape
    line.compare_with(None)
    assert line.partner(explore.trace) is None and not line.differing


def test_two_snapshots_side_by_side_are_named_by_their_steps(timeline):
    controllers, source = timeline
    line, compare = controllers.timeline, controllers.compare
    changed = Recorder(compare, "changed")
    line.move(3)
    settle(controllers)
    line.compare_with(7, SIDE_BY_SIDE)
    settle(controllers)
    assert controllers.inbox.wait_until(lambda: not compare.running, WAIT_S)
    panels = changed.of("changed")[-1][0]
    assert [panel.name for panel in panels] == [
        f"{source.bundle.describe().split(':')[0]}, step 22 of 500",
        f"{source.bundle.describe().split(':')[0]}, step 500 of 500",
    ]
    assert panels[0].choice == panels[1].choice  # the head chosen for the opened model, on both sides
    line.compare_with(None)
    assert compare.bundle is None


def test_curves_are_measured_with_progress_and_lead_to_a_phase_change(timeline):
    controllers, source = timeline
    curves = controllers.curves
    seen = Recorder(curves, "progress", "ready", "head_chosen", "running_changed")
    assert curves.compute()
    assert controllers.inbox.wait_until(lambda: not curves.running, WAIT_S)
    measured = curves.curves
    assert measured is not None and seen.of("ready") == [(measured,)] and len(measured.indices) == 8
    stages = [stage for stage, _done, _total in seen.of("progress")]
    assert stages.count(DECODING) == 8 and stages.count(MEASURING) == 8
    assert measured.best_aer()[0] > 0.8 and measured.best_aer()[-1] < 0.1  # the diagonal forms
    assert seen.of("running_changed") == [(True,), (False,)]
    change = measured.phase_changes[0]
    curves.go_to_change(0)
    settle(controllers)
    assert (controllers.timeline.index, controllers.timeline.compare_index) == (change.after, change.before)
    assert seen.of("head_chosen") == [(change.kind, *change.heads[0])]
    assert curves.cached_traces(SENTENCE, curves.options()) is not None
    # Cancelled: the curves shown stay; another model clears them.
    assert curves.compute(importance_pairs=5)
    curves.cancel()
    assert controllers.inbox.wait_until(lambda: not curves.running, WAIT_S)
    assert curves.curves is measured
    controllers.explore.set_model(None)
    assert curves.curves is None and seen.of("ready")[-1] == (None,)
    assert "no timeline" in curves.unavailable() and not curves.compute()


def test_shown_the_curves_follow_the_sentence_on_their_own(timeline):
    """Issue 39: the README says the Over training view computes its curves in the background; they waited for a button.
    Shown, the view's curves are measured for the sentence explored, and again for another one; not while hidden, and
    a phase change chooses its head through the Explore controller, as the user's boxes do."""
    controllers, _source = timeline
    curves, explore = controllers.curves, controllers.explore
    assert controllers.inbox.wait_until(lambda: not curves.running, WAIT_S)
    assert curves.curves is None  # hidden: nothing measured
    curves.set_shown(True)
    assert curves.running
    assert controllers.inbox.wait_until(lambda: curves.curves is not None and not curves.running, WAIT_S)
    assert curves.traces_of == (SENTENCE, curves.options()) and not curves.curves.importance
    explore.go_to_step(2)  # the same sentence: nothing measured again
    assert not curves.running
    assert explore.translate("a b c")
    assert controllers.inbox.wait_until(lambda: curves.traces_of is not None and curves.traces_of[0] == "a b c", WAIT_S)
    chosen = Recorder(explore, "view_changed")
    change = next(c for c in curves.curves.phase_changes if c.kind is not explore.view.kind)
    curves.go_to_change(curves.curves.phase_changes.index(change))
    layer, head = change.heads[0]
    assert (explore.view.kind, explore.view.layer, explore.view.head) == (change.kind, layer, head)
    assert chosen.of("view_changed") == [(explore.view,)]
    curves.set_shown(False)
    assert explore.translate("a b")
    assert not curves.running and curves.traces_of[0] == "a b c"


def test_a_record_is_described_with_its_loss_and_validation():
    record = SimpleNamespace(train_loss=2.31449, validation={"bleu": 12.345, "exact_match": 0.05, "note": "x", "n": 2000.0})
    assert describe_record(record) == "training loss 2.314 · validation: bleu 12.3, exact_match 0.05, n 2,000"
    assert describe_record(SimpleNamespace(train_loss=math.nan, validation=None)) == (
        "no training loss yet · no validation at this step"
    )


def test_each_snapshot_writes_its_own_output_when_asked(timeline):
    controllers, source = timeline
    explore, line = controllers.explore, controllers.timeline
    final_tokens = explore.trace.target_tokens
    line.move(0)
    settle(controllers)
    assert explore.trace.target_tokens == final_tokens and not explore.trace.forced.any()  # made to write it, unmarked
    line.move(1)
    settle(controllers)
    line.set_same_output(False)  # the snapshot shown decodes again, on its own
    settle(controllers)
    own = controllers.explore.trace
    assert own.target_tokens != final_tokens and explore.finished  # step 3's model writes its own, and stops
    assert len(own.target_tokens) == explore.total_steps


def test_the_session_is_kept_a_new_model_drops_a_move_and_the_side_by_side_reads_alike(timeline):
    controllers, source = timeline
    explore, line, compare = controllers.explore, controllers.timeline, controllers.compare
    explore.set_model(source.bundle, trained=True)  # as if just trained here, not saved
    assert controllers.inbox.wait_until(lambda: line.source is not None, WAIT_S)
    line.move(2)
    settle(controllers)
    assert explore.has_unsaved_training() and explore.opened is source.bundle and explore.bundle is not source.bundle
    line.compare_with(6, SIDE_BY_SIDE)
    settle(controllers)
    assert compare.stepper.target_ids() == explore.stepper.target_ids()  # both snapshots write the same tokens
    line.move(5)
    explore.set_model(None)  # before the move is shown: it never is
    settle(controllers)
    assert explore.bundle is None and line.source is None and explore.snapshot == "" and compare.bundle is None
