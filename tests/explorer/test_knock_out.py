"""Knocking heads out in the window: Ctrl+click on a model-grid cell masks that head of the kind shown, the sentence
is decoded again at once through the masked model (the trace, its captions and the grid say which heads are out),
Ctrl+click again or "Restore heads" puts them back, and another model starts with every head."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtCore import QPointF, Qt

from model.kinds import AttentionKind
from model.nn.masking import Head
from tests.explorer.gui_helpers import explore_window


def ctrl_click(grid, layer: int, head: int) -> None:
    """What a Ctrl+click on the cell (layer, head) does: the grid's click handler, at the cell's centre, with the
    modifier held."""
    (step_rows, step_columns), (rows, columns) = grid._cell, grid._cell_size
    point = grid.plot.vb.mapViewToScene(QPointF(head * step_columns + columns / 2, layer * step_rows + rows / 2))
    grid._on_clicked(SimpleNamespace(scenePos=lambda: point, modifiers=lambda: Qt.ControlModifier))


def test_ctrl_click_knocks_a_head_out_and_the_translation_follows(qtbot, open_window, toy_fr_bundle, toy_fr_rnn_bundle):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    session = window.explore
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))
    tab.views.setCurrentWidget(tab.grid)
    before = list(session.trace.chosen_ids)
    messages = []
    session.message.connect(messages.append)
    ctrl_click(tab.grid, 1, 2)
    assert session.masked_heads == (Head(AttentionKind.CROSS, 1, 2),)
    assert session.trace.masked_heads == ["cross:2:3"] and "cross L2 H3 knocked out" in messages[-1]
    assert tab.grid.masked == {(1, 2)} and sum(item.isVisible() for item in tab.grid.mask_items) == 1
    assert tab.restore_button.isVisible()
    for head in range(4):  # the whole last layer of cross-attention: the translation changes
        if head != 2:
            session.toggle_head(Head(AttentionKind.CROSS, 1, head))
    assert len(session.masked_heads) == 4 and list(session.trace.chosen_ids) != before
    assert tab.grid.masked == {(1, 0), (1, 1), (1, 2), (1, 3)}
    ctrl_click(tab.grid, 1, 0)  # Ctrl+click again: that head is back
    assert Head(AttentionKind.CROSS, 1, 0) not in session.masked_heads and len(session.masked_heads) == 3
    tab.restore_button.click()
    assert session.masked_heads == () and list(session.trace.chosen_ids) == before and not tab.restore_button.isVisible()
    assert tab.grid.masked == set()
    # A plain click still focuses the head.
    tab.grid.cell_clicked.emit(0, 1)
    assert (tab.state.layer, tab.state.head) == (0, 1)
    # Another model starts with every head; an RNN's one attention cannot be knocked out.
    session.toggle_head(Head(AttentionKind.ENCODER, 0, 0))
    session.set_model(toy_fr_rnn_bundle[0])
    assert session.masked_heads == ()
    session.toggle_head(Head(AttentionKind.CROSS, 0, 0))
    assert session.masked_heads == () and "the app's Transformers, Hugging Face layouts" in messages[-1]
