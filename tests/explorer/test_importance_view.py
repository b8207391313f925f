"""Head importance in its view: Compute and Cancel reach the importance controller, whose progress, importance and
pruning curve reach the bar, the lines and the least important heads; the model grid writes each head's importance in
its cell; another model clears the view. What the controller measures, cancels and refuses:
tests/explorer/controllers/test_importance_controller.py."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from explorer.controllers.window import WindowControllers
from explorer.qt_runner import gui_runner
from explorer.tabs.explore.measures import wire_importance
from explorer.widgets.importance_view import ImportanceView
from explorer.widgets.model_grid import ModelGrid

WAIT_MS = 120_000  # a generous bound on a run of a few sentences, not a timing claim


@pytest.fixture
def measured(qtbot, toy_fr_bundle):
    """The Explore controller with the tiny toy-fr model, the importance controller and its view; every job joined
    after the test."""
    from explorer.app import make_application

    make_application()
    controllers = WindowControllers.build(gui_runner())
    controllers.explore.set_model(toy_fr_bundle[0])
    view = ImportanceView()
    wire_importance(view, controllers.importance)
    qtbot.addWidget(view)
    yield controllers.explore, controllers.importance, view
    assert controllers.runner.close(WAIT_MS / 1000), "the importance job outlived its test"


def n_heads_of(bundle) -> int:
    config = bundle.model.config
    return config.n_heads * (config.n_encoder_layers + 2 * config.n_decoder_layers)  # encoder, decoder, cross


def test_compute_measures_every_head_then_the_pruning_curve(qtbot, measured, toy_fr_bundle):
    """Compute reaches the controller with the sentences chosen; its progress, importance and curve reach the view.
    (What the run measures: tests/explorer/controllers/test_importance_controller.py.)"""
    session, importance_session, view = measured
    curves = []
    importance_session.curve_ready.connect(curves.append)
    view.sentences.setValue(10)  # the box's least
    with qtbot.waitSignals([importance_session.importance_ready, importance_session.curve_ready], timeout=WAIT_MS):
        view.compute_button.click()
        assert view.cancel_button.isEnabled() and importance_session.running
    qtbot.waitUntil(lambda: not view.cancel_button.isEnabled(), timeout=WAIT_MS)
    n_heads = n_heads_of(toy_fr_bundle[0])
    importance, points = importance_session.importance, curves[-1]
    assert importance.n_sentences == 10 and importance_session.n_sentences == 10
    bar = view.progress_bar
    assert bar.value() == bar.maximum() == n_heads + 1 and bar.format() == f"pruning curve {n_heads + 1}/{n_heads + 1}"
    # The view: both lines over every count, the least important heads, the summary.
    assert list(view.exact_line.getData()[0]) == list(range(n_heads + 1))
    assert np.allclose(view.exact_line.getData()[1], [point.first for point in points])
    assert np.allclose(view.bleu_line.getData()[1], [point.second / 100 for point in points])
    assert view.least_table.rowCount() == min(12, n_heads)
    assert view.least_table.item(0, 1).text() == importance.ranking()[0][0].describe()
    assert f"of {n_heads} heads can go before exact match drops by 0.05" in view.summary.text()
    assert not importance_session.running and importance_session.runner.join(WAIT_MS / 1000)


def test_the_grid_writes_each_heads_importance_in_its_cell(qtbot):
    """The model grid with an importance table [layers, heads] (the controller's, normalised per layer: its tests)."""
    table = np.random.default_rng(3).random((2, 4))
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    grid = ModelGrid()
    qtbot.addWidget(grid)
    grid.resize(500, 300)
    grid.show()
    grid.set_weights(np.random.default_rng(0).random((2, 4, 3, 5)))
    grid.set_importance(table)
    labels = grid.visible_importance_labels()
    assert len(labels) == 8
    assert sorted(label.toPlainText() for label in labels) == sorted(f"{value:.2f}" for value in table.ravel())
    grid.set_weights(np.random.default_rng(1).random((2, 4, 4, 6)))  # the next decoding step: the numbers stay
    grid.resize(700, 420)
    assert len(grid.visible_importance_labels()) == 8
    step_rows, step_columns = grid._cell
    positions = {(label.pos().x(), label.pos().y()) for label in grid.visible_importance_labels()}
    assert positions == {(head * step_columns, layer * step_rows) for layer in range(2) for head in range(4)}
    grid.set_masked({(0, 1)})  # knocked-out heads keep their numbers
    assert len(grid.visible_importance_labels()) == 8
    grid.set_weights(np.zeros((2, 4, 0, 5)))  # step 0: a message, no cells, no numbers
    assert grid.visible_importance_labels() == []
    grid.set_weights(np.random.default_rng(2).random((2, 4, 3, 5)))
    assert len(grid.visible_importance_labels()) == 8
    grid.set_importance(None)
    assert grid.visible_importance_labels() == []


def test_cancel_ends_a_run_before_its_curve(qtbot, measured):
    """Cancel reaches the controller, and the view shows the run's end (what cancelling does: the controller's tests)."""
    _session, importance_session, view = measured
    view.sentences.setValue(200)
    view.compute_button.click()
    assert importance_session.running and view.cancel_button.isEnabled()
    view.cancel_button.click()
    assert not importance_session.running and not view.cancel_button.isEnabled()
    assert view.note.text() == "Head importance cancelled."
    assert importance_session.runner.join(WAIT_MS / 1000)
    QApplication.processEvents()  # whatever the job had queued is delivered, and dropped
    assert view.least_table.rowCount() == 0 and view.summary.text() == ""


def test_another_model_clears_the_results_and_an_rnn_is_not_measured(qtbot, measured, toy_fr_rnn_bundle):
    """Another model clears the view; the controller's refusal reaches its note (what is cleared and why an RNN is
    refused: the controller's tests)."""
    session, importance_session, view = measured
    with qtbot.waitSignal(importance_session.importance_ready, timeout=WAIT_MS):
        importance_session.compute(8)
    assert view.least_table.rowCount() > 0
    session.set_model(toy_fr_rnn_bundle[0])  # mid-run (the curve is still being scored) or after it
    assert not view.cancel_button.isEnabled()
    assert importance_session.runner.join(WAIT_MS / 1000)
    QApplication.processEvents()
    assert view.least_table.rowCount() == 0 and view.summary.text() == "" and view.progress_bar.format() == ""
    view.compute_button.click()
    assert not importance_session.running and view.note.text() == importance_session.unavailable()
    assert "a classifier's labels), not on this model" in view.note.text()
