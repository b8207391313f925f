"""The alignment table (issue 18) in its view: every measure and head of the explored model scored against toy-fr's
gold alignments in a job of the runner, one column per measure with its best reading in bold and named in the last
row; a run can be cancelled and is joined when the runner closes, a model without gold alignments is refused with a
message, and another model clears the table. (The controller alone, its runs, cancelling, closing and failures:
tests/explorer/controllers/test_alignment_controller.py.)"""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from explorer.controllers.window import WindowControllers
from explorer.qt_runner import gui_runner
from explorer.tabs.explore.measures import wire_alignment
from explorer.widgets.alignment_view import AER_ROLE, BEST_BACKGROUND, AlignmentView
from model.attribution.measures import MEASURES
from tests.conftest import tiny_bundle

CHEAP_MEASURES = ("attention", "norm", "alti+", "shift-att")
TIMEOUT_MS = 120000  # a slow machine; nothing here is timed


@pytest.fixture
def scoring(qtbot, toy_fr_bundle):
    """(Explore controller, alignment controller, view) with the toy-fr model open; every job joined after the test."""
    from explorer.app import make_application

    make_application()
    controllers = WindowControllers.build(gui_runner())
    controllers.explore.set_model(toy_fr_bundle[0])
    view = AlignmentView()
    wire_alignment(view, controllers.alignment)
    qtbot.addWidget(view)
    yield controllers.explore, controllers.alignment, view
    assert controllers.runner.close(60), "the alignment job outlived its test"


def column_values(view: AlignmentView, column: int) -> list[float]:
    """The AER of every filled cell of a column, the last ("best") row aside, top to bottom."""
    table = view.table
    items = [table.item(row, column) for row in range(table.rowCount() - 1)]
    return [item.data(AER_ROLE) for item in items if item is not None]


def test_scoring_fills_one_column_per_measure_with_its_best_reading_in_bold(qtbot, scoring, tmp_path):
    _session, alignment, view = scoring
    with qtbot.waitSignal(alignment.ready, timeout=TIMEOUT_MS) as ready:
        assert alignment.compute(6, CHEAP_MEASURES)
        assert not view.score_button.isEnabled() and view.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: not alignment.running, timeout=TIMEOUT_MS)
    result = ready.args[0]
    assert result is alignment.table and [m.measure for m in result.measures] == list(CHEAP_MEASURES)
    table = view.table
    assert table.columnCount() == len(CHEAP_MEASURES) and not table.editTriggers()
    for column, measured in enumerate(result.measures):
        header = table.horizontalHeaderItem(column)
        assert header.text() == MEASURES[measured.measure].label and header.toolTip() == MEASURES[measured.measure].what
        # The cells, top to bottom, are the measure's readings in the core's order, at the core's values.
        assert column_values(view, column) == pytest.approx([aer for _, aer in measured.places()])
        best_row = view.best_cells[column]
        cell = table.item(best_row, column)
        assert cell.font().bold() and cell.background().color() == BEST_BACKGROUND
        assert cell.data(AER_ROLE) == pytest.approx(measured.best()[1]) and cell.text() == f"{measured.best()[1]:.3f}"
        others = [table.item(row, column) for row in range(table.rowCount() - 1) if row != best_row]
        assert not any(item.font().bold() for item in others if item is not None)
        reading = table.verticalHeaderItem(best_row).text()
        assert table.item(table.rowCount() - 1, column).text() == f"{reading}: {measured.best()[1]:.3f}"
    rows = [table.verticalHeaderItem(row).text() for row in range(table.rowCount())]
    n_layers, n_heads = result.measures[0].head_aer.shape
    assert rows[: n_layers * n_heads] == [f"L{layer} H{head}" for layer in range(1, n_layers + 1) for head in range(1, n_heads + 1)]
    assert rows[n_layers * n_heads :] == [f"L{layer} (layer)" for layer in range(1, n_layers + 1)] + ["best"]
    alti = CHEAP_MEASURES.index("alti+")  # defined per layer: no head readings
    assert table.item(0, alti) is None and table.item(n_layers * n_heads, alti) is not None
    assert view.progress.value() == view.progress.maximum() and view.score_button.isEnabled()
    view.pairs.setValue(12)
    view.seed.setValue(4)
    assert "12 toy-fr test pairs (held out of training) drawn with seed 4" in view.note.text()
    assert "--aer-pairs 12 --aer-seed 4" in view.note.text()

    # Saved as CSV; a file that cannot be written is a message.
    messages = []
    view.message.connect(messages.append)
    assert view.save_csv(str(tmp_path / "aer.csv"))
    lines = (tmp_path / "aer.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "measure,reading,aer,pairs,seed" and len(lines) == 1 + sum(len(m.places()) for m in result.measures)
    assert not view.save_csv(str(tmp_path / "missing" / "aer.csv"))
    assert "could not be saved" in messages[-1] and view.status.text() == messages[-1]


def test_cancel_stops_the_run_early_and_stop_joins_it(qtbot, scoring):
    """Cancel reaches the controller and the view shows the run's end; what cancelling and closing do to the run:
    tests/explorer/controllers/test_alignment_controller.py."""
    _session, alignment, view = scoring
    messages = []
    alignment.message.connect(messages.append)
    with qtbot.waitSignal(alignment.running_changed, timeout=TIMEOUT_MS, check_params_cb=lambda running: not running):
        assert alignment.compute(400, ("attention",))
        assert not view.score_button.isEnabled() and view.cancel_button.isEnabled()
        view.cancel_button.click()
    assert len(messages) == 1 and "cancelled" in messages[0] and view.status.text() == messages[0]
    assert view.table.rowCount() == 0 and view.score_button.isEnabled() and not view.cancel_button.isEnabled()
    assert alignment.runner.join(60)


def test_a_model_without_gold_alignments_gives_a_message_and_no_run(qtbot, scoring):
    """The controller's reason reaches the view, and Score reaches the controller (which refuses: its tests)."""
    session, alignment, view = scoring
    copy_model, _ = tiny_bundle("copy", size=100)
    session.set_model(copy_model)
    assert view.status.text() == alignment.unavailable() and "toy-fr" in view.status.text()
    messages, runs = [], []
    alignment.message.connect(messages.append)
    alignment.running_changed.connect(runs.append)
    view.score_button.click()
    assert len(messages) == 1 and "Gold word alignments exist for toy-fr only" in messages[0]
    assert view.status.text() == messages[0]
    assert not runs and not alignment.running and view.table.rowCount() == 0


def test_another_model_clears_the_table_and_drops_a_run(qtbot, scoring, toy_fr_bundle):
    """Another model clears the view's table; a run dropped by it gives the buttons back (the run itself: the
    controller's tests)."""
    session, alignment, view = scoring
    with qtbot.waitSignal(alignment.ready, timeout=TIMEOUT_MS):
        alignment.compute(5, ("attention",))
    qtbot.waitUntil(lambda: not alignment.running, timeout=TIMEOUT_MS)
    assert view.table.rowCount() > 0 and view.save_button.isEnabled()
    with qtbot.waitSignal(alignment.ready) as cleared:
        session.set_model(toy_fr_bundle[0])
    assert cleared.args == [None] and alignment.table is None
    assert view.table.rowCount() == 0 and view.table.columnCount() == 0 and not view.save_button.isEnabled()
    # A model change during a run cancels it: the buttons come back at once and its table never arrives.
    assert alignment.compute(400, ("attention",))
    assert view.cancel_button.isEnabled()
    thread = alignment.runner.current("alignment-table").thread
    session.set_model(None)
    assert view.score_button.isEnabled() and not view.cancel_button.isEnabled() and view.table.rowCount() == 0
    thread.join(60)  # the dropped job ends at its next pair
    QApplication.processEvents()  # its end is delivered, and dropped
    assert view.table.rowCount() == 0 and view.score_button.isEnabled()


def test_single_map_and_layer_wide_measures_have_their_own_rows(qtbot, scoring):
    """A table as the core gives it (no run): a saliency's one map, a rollout's layers, ties resolved as the core."""
    import numpy as np

    from model.attribution.alignment_table import AlignmentTable, MeasureAlignment

    _session, alignment, view = scoring
    heads = np.array([[0.5, 0.4], [0.4, 0.6]])
    table = AlignmentTable(
        [
            MeasureAlignment("attention", heads, np.array([0.45, 0.5])),
            MeasureAlignment("alti+", np.array([[0.3], [0.2]]), np.array([0.3, 0.2])),
            MeasureAlignment("grad-input", np.array([[0.35]]), np.array([0.35])),
        ],
        n_pairs=7,
    )
    view.show_table(table)
    grid = view.table
    rows = [grid.verticalHeaderItem(row).text() for row in range(grid.rowCount())]
    assert rows == ["L1 H1", "L1 H2", "L2 H1", "L2 H2", "L1 (layer)", "L2 (layer)", "one map", "best"]
    texts = [[grid.item(row, column).text() if grid.item(row, column) else "" for column in range(3)] for row in range(8)]
    assert texts == [
        ["0.500", "", ""],
        ["0.400", "", ""],
        ["0.400", "", ""],
        ["0.600", "", ""],
        ["0.450", "0.300", ""],
        ["0.500", "0.200", ""],
        ["", "", "0.350"],
        ["L1 H2: 0.400", "L2 (layer): 0.200", "one map: 0.350"],
    ]
    assert view.best_cells == {0: 1, 1: 5, 2: 6}  # the first of two equal heads, as MeasureAlignment.best()
    assert grid.item(1, 0).font().weight() == QFont.Bold and not grid.item(2, 0).font().bold()
    assert "through layers 1 to 2" in grid.item(5, 1).toolTip() and "7 pairs" in grid.item(5, 1).toolTip()


def test_a_failing_run_is_an_internal_error_with_its_traceback_logged(qtbot, scoring, monkeypatch):
    """A failure's message reaches the view and Score comes back (the message and the log: the controller's tests)."""
    import explorer.controllers.alignment as controller

    def broken(*_args, **_kwargs):
        raise ValueError("the measure broke")

    monkeypatch.setattr(controller, "alignment_table", broken)
    _session, alignment, view = scoring
    with qtbot.waitSignal(alignment.message, timeout=TIMEOUT_MS) as said:
        assert alignment.compute(5, ("attention",))
    assert said.args == ["The alignment table could not be computed: internal error: the measure broke"]
    qtbot.waitUntil(lambda: view.score_button.isEnabled(), timeout=TIMEOUT_MS)
    assert view.status.text() == said.args[0] and view.table.rowCount() == 0
