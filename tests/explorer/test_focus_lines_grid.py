"""The focus heatmap's labels, zoom and auto range, the lines view's focused head, the model grid at
step 0 and the token chips (offscreen), in the explore window at its default size (1300x850)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QGraphicsRectItem

from explorer.widgets.heatmap import ordinal, shown_labels
from explorer.widgets.model_grid import pool_extreme
from model.data.token_labels import display_labels

SENTENCE = "the black cat sees the small dog"  # 13 source pieces for the toy-fr tokenizer, 8 words


@pytest.fixture
def explore(open_window, toy_fr_bundle):
    window = open_window(toy_fr_bundle[0])
    tab = window.explore_tab
    tab.controls.source.setText(SENTENCE)
    tab.controls.source.returnPressed.emit()
    QApplication.processEvents()
    return window, tab


def painted(view) -> dict[str, list[tuple[int, str, object]]]:
    """The labels each axis of a heatmap drew when the view was last painted."""
    QApplication.processEvents()  # axis sizes settle (a layout pass) before painting
    view.grab()
    return {side: view.plot.getAxis(side).drawn for side in ("left", "top")}


def assert_readable(drawn, horizontal: bool) -> None:
    """Labels that do not overlap one another along the axis."""
    rects = [rect for _, _, rect in drawn]
    starts = [rect.left() if horizontal else rect.top() for rect in rects]
    ends = [rect.right() if horizontal else rect.bottom() for rect in rects]
    assert all(end <= start + 0.5 for end, start in zip(ends, starts[1:]))


def wheel(view, modifiers) -> None:
    viewport = view.viewport()
    centre = QPointF(viewport.width() / 2, viewport.height() / 2)
    event = QWheelEvent(
        centre,
        QPointF(viewport.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 240),
        Qt.NoButton,
        modifiers,
        Qt.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(viewport, event)


def test_every_key_and_query_of_a_13_piece_sentence_is_labelled(explore):
    window, tab = explore
    trace = window.explore.trace
    pieces = trace.source_tokens
    assert len(pieces) == 13
    tab.kind.setCurrentIndex(tab.kind.findData("encoder"))
    drawn = painted(tab.focus)
    shown = display_labels(pieces)
    for side in ("left", "top"):
        assert [index for index, _, _ in drawn[side]] == list(range(13))
        assert [text for _, text, _ in drawn[side]] == shown  # "▁black" reads "black", "at" reads "·at"
        assert tab.focus.plot.getAxis(side).point_size >= 7
    assert "black" in shown and "·at" in shown and not any("▁" in text for text in shown)
    assert_readable(drawn["left"], horizontal=False)
    top = tab.focus.plot.getAxis("top")
    assert_readable(drawn["top"], horizontal=not top.rotated)
    # cross-attention after 13 steps: 13 queries, 13 keys
    window.explore.go_to_step(13)
    tab.kind.setCurrentIndex(tab.kind.findData("cross"))
    drawn = painted(tab.focus)
    assert [index for index, _, _ in drawn["left"]] == list(range(13))
    assert [text for _, text, _ in drawn["left"]] == display_labels(window.explore.trace.target_tokens)
    assert [index for index, _, _ in drawn["top"]] == list(range(13))
    # word level: 8 words on the key axis, every one labelled, as they are
    tab.word_level.setChecked(True)
    drawn = painted(tab.focus)
    words = trace.word_level().source_tokens
    assert [text for _, text, _ in drawn["top"]] == words == ["the", "black", "cat", "sees", "the", "small", "dog", "</s>"]
    assert tab.focus.key_labels == words  # the data (what exports write) keeps the trace's labels
    cell = tab.focus.describe_cell(0, 2)
    assert "'cat'" in cell and "▁" not in cell


def test_zooming_in_on_80_tokens_labels_every_visible_row_and_column(explore):
    _, tab = explore
    labels = [f"▁word{index}" for index in range(80)]
    values = np.random.default_rng(0).random((80, 80)).astype(np.float32)
    tab.focus.set_matrix(values, labels, labels, "80 tokens")
    drawn = painted(tab.focus)
    left = tab.focus.plot.getAxis("left")
    assert left.every > 1 and 0 < len(drawn["left"]) < 80  # 80 rows do not fit: every n-th is labelled
    assert left.point_size == 7
    assert_readable(drawn["left"], horizontal=False)
    # The axis says so, with the n, and how to see them all (side by side uses the same view).
    assert left.labelText == f"query (every {ordinal(left.every)})"
    row = next(row for row in range(45, 50) if row % left.every)  # one thinning would skip
    tab.focus.set_highlighted_row(row)  # the current step's query stays labelled when thinned
    drawn = painted(tab.focus)
    assert row in [index for index, _, _ in drawn["left"]]
    assert_readable(drawn["left"], horizontal=False)
    tab.focus.plot.vb.setYRange(30, 40, padding=0)  # as Ctrl+wheel or a drag would
    drawn = painted(tab.focus)
    assert [index for index, _, _ in drawn["left"]] == list(range(30, 40))
    assert [text for _, text, _ in drawn["left"]] == [f"word{index}" for index in range(30, 40)]
    assert left.every == 1 and left.point_size > 7  # ten rows leave room for a larger font
    assert left.labelText == "query"  # every row shown is labelled: nothing to say
    tab.focus.plot.vb.setXRange(50, 60, padding=0)
    drawn = painted(tab.focus)
    assert [index for index, _, _ in drawn["top"]] == list(range(50, 60))
    assert_readable(drawn["top"], horizontal=not tab.focus.plot.getAxis("top").rotated)


def test_focus_zooms_with_ctrl_wheel_only_and_auto_range_is_the_matrix(explore):
    _, tab = explore
    focus = tab.focus
    n_queries, n_keys = focus.values.shape
    assert n_queries > 0 and n_keys == 13
    start = focus.plot.vb.viewRange()
    wheel(focus, Qt.NoModifier)
    assert focus.plot.vb.viewRange() == start  # a plain wheel scrolls past the view
    wheel(focus, Qt.ControlModifier)
    (x0, x1), (y0, y1) = focus.plot.vb.viewRange()
    assert x1 - x0 < start[0][1] - start[0][0] and y1 - y0 < start[1][1] - start[1][0]
    focus.plot.autoBtnClicked()  # the "A" button: the range follows at the next paint
    painted(focus)
    (x0, x1), (y0, y1) = focus.plot.vb.viewRange()
    assert (x0, x1, y0, y1) == pytest.approx((0, n_keys, 0, n_queries), abs=1e-9)
    assert focus.outline.isVisible() and focus.highlighted_row == n_queries - 1  # the window aid stays


def test_lines_view_draws_the_focused_head_on_top_with_display_labels(explore):
    window, tab = explore
    tab.views.setCurrentWidget(tab.lines)
    lines = tab.lines
    assert lines.focused_head is None  # mean over heads: every head alike
    alphas = {key: item.pen().color().alphaF() for key, item in lines.line_items.items() if item.isVisible()}
    assert alphas and all(alpha >= 0.5 / 8 - 1e-3 for alpha in alphas.values())
    tab.grid.cell_clicked.emit(0, 2)  # focus head 3 of layer 1
    assert lines.focused_head == 2
    shown = {key: item for key, item in lines.line_items.items() if item.isVisible()}
    focused = [item for (head, _), item in shown.items() if head == 2]
    others = [item for (head, _), item in shown.items() if head != 2]
    assert focused and others
    assert min(item.zValue() for item in focused) > max(item.zValue() for item in others)
    for (head, band), item in shown.items():
        full = (band + 0.5) / 8
        expected = full if head == 2 else full * 0.2
        assert item.pen().color().alphaF() == pytest.approx(expected, abs=0.01)
    trace = window.explore.trace
    assert lines.display_key_labels == display_labels(trace.source_tokens)
    assert lines.key_labels == trace.source_tokens  # raw pieces kept for the data
    assert lines.key_axis.tokens == lines.display_key_labels and not any("▁" in t for t in lines.key_axis.tokens)
    tab.head_box.setCurrentText("max over heads")
    assert lines.focused_head is None


def test_model_grid_at_step_0_says_so_and_draws_no_frames(explore):
    window, tab = explore

    def visible(kind):
        return [item for item in tab.grid.plot.items if isinstance(item, kind) and item.isVisible()]

    tab.controls.reset_button.click()
    assert window.explore.trace.n_steps == 0
    grid = tab.grid
    assert grid.weights.shape[2] == 0 and grid.empty
    assert not visible(QGraphicsRectItem)  # no selection frames (they were red lines)
    assert not grid.image.isVisible()
    messages = [item.toPlainText() for item in visible(type(grid.message))]
    assert messages == ["Step 0: no target token yet — press Step ▶ (Alt+Right)"]
    tab.kind.setCurrentIndex(tab.kind.findData("decoder"))
    assert grid.empty and grid.message.isVisible() and not visible(QGraphicsRectItem)
    tab.kind.setCurrentIndex(tab.kind.findData("encoder"))  # the source is encoded at step 0
    assert not grid.empty and grid.image.isVisible() and not grid.message.isVisible()
    np.testing.assert_allclose(grid.image.image[:13, :13], window.explore.trace.encoder_self[0, 0], atol=1e-6)
    assert len(visible(QGraphicsRectItem)) == 4  # mean over heads: layer 1's four heads framed
    tab.kind.setCurrentIndex(tab.kind.findData("cross"))
    tab.controls.forward_button.click()
    assert not grid.empty and grid.image.isVisible() and grid.weights.shape[2] == 1


def test_token_chips_show_display_labels_and_click_through_to_their_step(explore, qtbot):
    window, tab = explore
    trace = window.explore.trace
    source = tab.source_tokens
    assert source.tokens == trace.source_tokens and "▁black" in source.tokens
    assert source.display_tokens == display_labels(trace.source_tokens)
    assert "black" in source.display_tokens and "·at" in source.display_tokens
    assert not any("▁" in text for text in source.display_tokens + tab.target_tokens.display_tokens)
    assert tab.target_tokens.display_tokens[0] == "␣"  # this tiny model's lone word marker
    chips = tab.target_tokens.chip_rects
    assert len(chips) == trace.n_steps
    qtbot.mouseClick(tab.target_tokens, Qt.LeftButton, pos=chips[4].center().toPoint())
    assert window.explore.trace.n_steps == 5 and tab.target_tokens.current == 4
    tab.target_tokens.setFocus()
    qtbot.keyClick(tab.target_tokens, Qt.Key_Left)
    qtbot.keyClick(tab.target_tokens, Qt.Key_Return)
    assert window.explore.trace.n_steps == 4


def test_the_grid_pools_a_difference_by_its_largest_magnitude():
    """A long sentence's cells are pooled into blocks: weights by their largest value, a difference of two snapshots
    by the value farthest from 0, so a loss of attention shows as strongly as a gain."""
    weights = np.array([[0.1, 0.9, 0.2, 0.3], [0.0, 0.4, 0.5, 0.6]])  # [Q, K]
    np.testing.assert_array_equal(pool_extreme(weights, 1, 2), [[0.9, 0.6]])
    difference = np.array([[0.1, -0.9, 0.2, 0.3], [0.0, 0.4, -0.5, 0.6]])
    np.testing.assert_array_equal(pool_extreme(difference, 1, 2), [[-0.9, 0.6]])
    np.testing.assert_array_equal(pool_extreme(difference, 2, 4), difference)  # nothing to pool


@pytest.mark.parametrize("width,expected", [(1600, "head 16"), (600, "h16"), (330, "16")])
def test_sixteen_heads_titles_fit_their_columns(qtbot, width, expected):
    """An NLLB-size model (16 heads) in a narrow pane: "head 1" … "head 16" ran into each other over the columns
    (seen under Xvfb at 1400×900); the titles shorten to "h16", then "16", as the columns narrow, and widen back."""
    from PySide6.QtGui import QFontMetrics

    from explorer.widgets.model_grid import ModelGrid

    grid = ModelGrid()
    qtbot.addWidget(grid)
    grid.resize(width, 500)
    grid.show()
    qtbot.waitExposed(grid)
    weights = np.random.default_rng(0).random((12, 16, 4, 6)).astype(np.float32)  # [layers, heads, queries, keys]
    grid.set_weights(weights / weights.sum(-1, keepdims=True), (0.0, 1.0))
    qtbot.wait(50)
    ticks = grid.plot.getAxis("top")._tickLevels[0]  # [(position, title)] as drawn
    assert ticks[-1][1] == expected
    metrics = QFontMetrics(grid.font())
    column_px = grid.plot.vb.width() / 16
    assert all(metrics.horizontalAdvance(title) < column_px for _, title in ticks)  # none runs into the next
    grid.resize(1600, 500)
    qtbot.wait(50)
    assert grid.plot.getAxis("top")._tickLevels[0][-1][1] == "head 16"


def test_wordpiece_labels_are_read_as_pieces_as_every_marked_scheme_is():
    """BERT's WordPiece continuations ("##ous") are shown as the other views show them ("·ous"), as SentencePiece's and
    byte-level BPE's marks are; unmarked word-level labels stay as they are."""
    assert shown_labels(["[CLS]", "the", "h", "##ous", "##e", "[SEP]"]) == ["[CLS]", "the", "h", "·ous", "·e", "[SEP]"]
    assert shown_labels(["the", "house", "is"]) == ["the", "house", "is"]
