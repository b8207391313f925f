"""The analysis of a timeline on a tiny copy run: the diagonal forms (the issue's "Done when": the best head's AER
against the known copy alignment falls from above 0.8 to below 0.1), traces forced along one output compare cell by
cell, curves hold one value per snapshot and head, onsets and phase changes point at real snapshots, and a snapshot
minus itself is exactly zero."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.kinds import AttentionKind
from model.timeline.changes import ONSET_THRESHOLD, alignment_onsets, log_step_distances, phase_changes
from model.timeline.difference import difference_levels, difference_panel, difference_trace
from model.timeline.source import SnapshotRecord, SnapshotSource, TimelineError, choose_snapshots, snapshot_name
from model.timeline.traces import decode_own, snapshot_traces
from model.timeline.views import ViewSpec, view_panel
from tests.model.timeline.conftest import SENTENCE
from tests.model.timeline.recorded import COPY_STEPS


def test_the_diagonal_forms_on_the_copy_corpus(timeline, curves):
    best = curves.best_aer()  # [N] the best cross head's AER at each snapshot
    assert best[0] > 0.8 and best[-1] < 0.1, best
    assert curves.aer_where == "50 copy test pairs, seed 0"  # the copy corpus's gold alignment: the diagonal
    first, _ = decode_own(timeline.bundle_at(0), SENTENCE)
    last, _ = decode_own(timeline.bundle_at(len(timeline.snapshots) - 1), SENTENCE)
    assert last.target_tokens == [f"▁{word}" for word in SENTENCE.split()] + ["</s>"]  # the final model copies
    assert first.target_tokens != last.target_tokens  # the first snapshot did not yet
    final = timeline.bundle.model.state_dict()
    assert all(torch.equal(final[name], value) for name, value in timeline.states[-1].items())  # the last is the final


def test_the_fake_source_satisfies_the_protocol_and_names_its_snapshots(timeline):
    assert isinstance(timeline, SnapshotSource) and isinstance(timeline.snapshots[0], SnapshotRecord)
    assert [r.step for r in timeline.snapshots] == [1, 3, 8, 22, 63, 177, 250, COPY_STEPS]
    assert snapshot_name(timeline, 5) == "step 177 of 500"
    assert choose_snapshots(timeline, [6, 0, 6]) == [0, 6]
    with pytest.raises(TimelineError, match="snapshot 8 does not exist: this timeline has snapshots 0 to 7"):
        choose_snapshots(timeline, [8])


def test_every_snapshot_is_forced_along_the_final_translation(timeline, traces):
    own, _ = decode_own(timeline.bundle_at(7), SENTENCE)
    assert [item.index for item in traces] == list(range(8)) and all(item.forced for item in traces)
    assert all(item.trace.target_tokens == own.target_tokens for item in traces)
    assert {item.trace.matrix("cross").shape for item in traces} == {own.matrix("cross").shape}
    np.testing.assert_allclose(traces[-1].trace.cross, own.cross, atol=1e-6)  # the final model: its own decoding
    reference = snapshot_traces(timeline, SENTENCE, [0, 7], target="reference", reference="f e d")
    assert [item.trace.target_tokens for item in reference] == [["▁f", "▁e", "▁d", "</s>"]] * 2
    with pytest.raises(TimelineError, match="--reference"):
        snapshot_traces(timeline, SENTENCE, [0], target="reference")


def test_curves_hold_one_value_per_snapshot_and_head(curves):
    n = len(curves.indices)
    assert n == 8 and curves.steps.shape == (n,) and len(curves.names) == n and curves.train_loss.shape == (n,)
    assert set(curves.kinds) == set(AttentionKind)
    for kind in curves.kinds:
        for table in (curves.entropy, curves.normalised_entropy, curves.roles, curves.matrix_change):
            assert table[kind].shape == (n, 1, 2)
        assert np.isnan(curves.matrix_change[kind][0]).all() and np.isfinite(curves.matrix_change[kind][1:]).all()
    assert curves.aer is not None and curves.aer.shape == (n, 1, 2) and curves.importance is None
    assert curves.roles[AttentionKind.CROSS][-1].tolist() == [["alignment-like", "alignment-like"]]
    bleu = curves.validation["bleu"]  # validations at steps 250 and 500 only
    assert np.isnan(bleu[:6]).all() and np.isfinite(bleu[6:]).all()


def test_alignment_onsets_are_the_first_snapshot_that_stays_under_the_threshold(curves):
    # (which snapshot the heads align at depends on the machine's arithmetic over 500 steps: 177 or 250 here)
    assert curves.onsets and all(onset.step in curves.steps for onset in curves.onsets)
    for onset in curves.onsets:
        position = curves.indices.index(onset.index)
        assert (curves.aer[position:, onset.layer, onset.head] < ONSET_THRESHOLD).all()
        assert curves.aer[position - 1, onset.layer, onset.head] >= ONSET_THRESHOLD
    dips = np.array([0.9, 0.2, 0.5, 0.25, 0.1]).reshape(5, 1, 1)  # under, back over, then under for good
    (onset,) = alignment_onsets(dips, [0, 1, 2, 3, 4], [1, 10, 100, 1000, 10000], list("abcde"))
    assert (onset.index, onset.step, onset.name, onset.aer) == (3, 1000, "d", 0.25)
    assert alignment_onsets(np.array([0.1, 0.5]).reshape(2, 1, 1), [0, 1], [1, 2], ["a", "b"]) == []


def test_phase_changes_are_ranked_and_point_at_consecutive_snapshots(curves):
    changes = curves.phase_changes
    assert [c.rank for c in changes] == list(range(1, len(changes) + 1)) and len(changes) == 10
    assert all(a.score >= b.score for a, b in zip(changes, changes[1:]))
    for change in changes:
        position = curves.indices.index(change.before)
        assert curves.indices[position + 1] == change.after and change.step_after == curves.steps[position + 1]
        layer, head = change.heads[0]
        if change.measure == "aer":
            assert change.value_after == curves.aer[position + 1, layer, head]


def test_phase_changes_are_normalised_by_log_step_distance():
    steps = [1, 10, 100, 110, 1000]
    np.testing.assert_allclose(log_step_distances(steps), np.diff(np.log1p(steps)))
    aer = np.array([[0.9, 0.9], [0.9, 0.5], [0.9, 0.5], [0.9, 0.3], [0.9, 0.3]]).reshape(5, 1, 2)  # [N, layers, heads]
    first, second = phase_changes({("aer", AttentionKind.CROSS): aer}, [0, 1, 2, 3, 4], steps)
    assert (first.before, first.after, first.heads) == (2, 3, [(0, 1)])  # 0.2 over 100 -> 110 beats 0.4 over 1 -> 10
    assert (second.before, second.after, second.value_before, second.value_after) == (0, 1, 0.9, 0.5)


def test_each_phase_change_shows_the_rate_it_is_ranked_by(curves):
    """Issue 39: the list read unsorted (#1 "attention moved by 0.502", #2 "0.983"): it is ranked by the change per unit
    of log step, which it now shows first, so the list reads sorted; the log-step distance divides the change shown."""
    rates = []
    for change in curves.phase_changes:
        text = change.describe()
        assert text.startswith(f"{change.rank}. rate {change.score:.2f}: steps ")
        assert text.endswith(f" over {change.distance:.2f} log step")
        rates.append(float(text.split("rate ")[1].split(":")[0]))
        shown = change.value_after - (0 if change.measure == "attention" else change.value_before)
        assert abs(shown) / change.distance == pytest.approx(change.score)
    assert rates == sorted(rates, reverse=True) and len(rates) > 1


def test_a_snapshot_minus_itself_is_exactly_zero(traces):
    same = difference_trace(traces[3], traces[3])
    assert all(not same.matrix(kind).any() for kind in same.kinds)
    view = ViewSpec(AttentionKind.CROSS, 0, 1)
    assert not difference_panel(traces[3], traces[3], view).values.any()
    encoder = ViewSpec(AttentionKind.ENCODER)
    grid = difference_panel(traces[0], traces[-1], encoder)  # NaN gaps between the cells
    later, earlier = view_panel(traces[-1].trace, encoder), view_panel(traces[0].trace, encoder)
    np.testing.assert_array_equal(grid.values, later.values - earlier.values)
    low, high = difference_levels(grid.values)
    assert low == -high and high == np.nanmax(np.abs(grid.values)) > 0
    assert difference_levels(np.zeros((2, 2))) == (-1.0, 1.0)


def test_own_decodings_of_different_lengths_have_no_difference(timeline):
    own = snapshot_traces(timeline, SENTENCE, [0, 7], target="own")
    assert not any(item.forced for item in own) and own[0].trace.n_steps != own[1].trace.n_steps
    with pytest.raises(TimelineError, match="force one target"):
        difference_trace(own[0], own[1])


def test_views_name_what_the_trace_lacks(traces):
    trace = traces[0].trace
    for view, message in (
        (ViewSpec(AttentionKind.CROSS, 0, 5), "head must be between 1 and 2, not 6"),
        (ViewSpec(AttentionKind.CROSS, 3), "layer must be between 1 and 1, not 4"),
        (ViewSpec(AttentionKind.CROSS, None, 1), "give the layer too"),
        (ViewSpec(AttentionKind.CROSS, 0, "rollout"), "rollout"),
    ):
        with pytest.raises(TimelineError, match=message):
            view.check(trace)
