"""The head-importance controller without a window (and without Qt): every head's importance, then the pruning curve,
in a job with progress; Cancel ends a run before its curve; another model clears the results and drops a run; a model
whose heads cannot be gated is refused with the reason. (The view and the grid: tests/explorer/test_importance_view.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.controllers.importance import IMPORTANCE, PRUNING
from model.kinds import AttentionKind
from tests.explorer.controllers.recording import WAIT_S, Recorder

EVENTS = ("progress", "importance_ready", "curve_ready", "running_changed", "message")
RNN_REFUSED = (
    "Head importance is measured where heads can be gated and the model's objective is known (a translation, a language "
    "model, a classifier's labels), not on this model (RNN encoder-decoder with attention)."
)


def n_heads_of(bundle) -> int:
    config = bundle.model.config
    return config.n_heads * (config.n_encoder_layers + 2 * config.n_decoder_layers)  # encoder, decoder, cross


@pytest.fixture
def importance(controllers, toy_fr_bundle):
    """The importance controller with the toy-fr model open."""
    controllers.explore.set_model(toy_fr_bundle[0])
    return controllers.importance


def test_importance_then_the_curve_and_an_rnn_is_refused(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    """Also test_importance_view.py's test_compute_measures_every_head_then_the_pruning_curve (the run) and
    test_the_grid_writes_each_heads_importance_in_its_cell (the table)."""
    explore, importance = controllers.explore, controllers.importance
    events = Recorder(importance, *EVENTS)
    explore.set_model(toy_fr_bundle[0])
    assert not importance.compute(0) and events.of("message")[-1] == ("Head importance needs at least one sentence.",)
    assert importance.compute(6)
    assert controllers.inbox.wait_until(lambda: not importance.running, WAIT_S)
    n_heads = n_heads_of(toy_fr_bundle[0])
    measured, points = importance.importance, importance.curve
    assert measured is not None and points is not None and events.of("curve_ready") == [(None,), (points,)]
    assert measured.n_sentences == 6 and importance.n_sentences == 6 and len(measured.ranking()) == n_heads
    assert [point.n_removed for point in points] == list(range(n_heads + 1))
    assert all(0.0 <= point.first <= 1.0 and 0.0 <= point.second <= 100.0 for point in points)
    progress = events.of("progress")
    assert (IMPORTANCE, 6, 6) in progress and progress[-1] == (PRUNING, n_heads + 1, n_heads + 1)
    table = importance.importance_table(AttentionKind.CROSS)  # [layers, heads], a copy
    assert table.shape == (2, 4) and np.allclose(np.linalg.norm(table, axis=1), 1.0)  # normalised per layer
    assert np.array_equal(table, measured.normalised[AttentionKind.CROSS]) and table is not measured.normalised[AttentionKind.CROSS]
    assert events.of("running_changed") == [(True,), (False,)]
    explore.set_model(toy_fr_rnn_bundle[0])
    assert importance.importance is None and events.of("curve_ready")[-1] == (None,)
    assert importance.unavailable() == RNN_REFUSED
    assert not importance.compute(6) and events.of("message")[-1] == (RNN_REFUSED,)


def test_cancel_ends_a_run_before_its_curve(controllers, importance):
    """Was test_importance_view.py's test of the same name (the run)."""
    events = Recorder(importance, *EVENTS)
    # Cancelled at once: nothing of the run is shown.
    assert importance.compute(200)
    assert importance.running
    importance.cancel()
    assert not importance.running and events.of("message") == [("Head importance cancelled.",)]
    assert events.of("running_changed") == [(True,), (False,)]
    assert controllers.runner.join(WAIT_S)
    controllers.inbox.drain()  # whatever the job had queued is delivered, and dropped
    assert importance.importance is None and events.of("importance_ready") == [] and events.of("curve_ready") == []
    # Cancelled once the importance is known: the curve never comes.
    importance.importance_ready.connect(lambda _importance: importance.cancel())
    assert importance.compute(8)
    assert controllers.inbox.wait_until(lambda: bool(events.of("importance_ready")), WAIT_S)
    assert not importance.running and events.of("message")[-1] == ("Head importance cancelled.",)
    assert controllers.runner.join(WAIT_S)
    controllers.inbox.drain()
    assert events.of("curve_ready") == [] and importance.curve is None and importance.importance is not None


def test_another_model_clears_the_results_and_drops_the_run(controllers, importance, toy_fr_rnn_bundle):
    """Was test_importance_view.py's test_another_model_clears_the_results_and_an_rnn_is_not_measured (the run)."""
    assert importance.compute(8)
    assert controllers.inbox.wait_until(lambda: importance.importance is not None, WAIT_S)
    events = Recorder(importance, *EVENTS)
    controllers.explore.set_model(toy_fr_rnn_bundle[0])  # mid-run (the curve is still being scored) or after it
    cleared = [(name, *args) for name, *args in events.seen if name in ("importance_ready", "curve_ready")]
    assert cleared == [("importance_ready", None), ("curve_ready", None)]
    assert importance.importance is None and importance.curve is None and not importance.running
    assert controllers.runner.join(WAIT_S)
    controllers.inbox.drain()
    cleared = [(name, *args) for name, *args in events.seen if name in ("importance_ready", "curve_ready")]
    assert cleared == [("importance_ready", None), ("curve_ready", None)]  # nothing of the old model's run arrives after
    events.seen.clear()
    assert not importance.compute(8)
    assert events.seen == [("message", RNN_REFUSED)]
