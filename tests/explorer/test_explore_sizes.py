"""The Explore tab from 1280x720 to 2560x1440 (issue 39): every panel that holds data shows it, or says that it does
not (a scroll bar, a row or label ending with "…"). The candidates panel gets about 150 px at 1280x720: its ten rows
drew their labels on top of each other (7 px a row for labels 15 px high). Now each drawn row has a line of its labels'
height, and the candidates that do not fit are folded into the last row, which says how many (the chosen one always
shows). Checked from Qt's geometry: the view box's px per row against the labels' font."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QApplication

from tests.explorer.axis_room import clipped_texts

SENTENCE = "the black cat sees the small dog"
SIZES = [(1280, 720), (1400, 900), (1920, 1080), (2560, 1440)]
PROBABILITIES = np.array([0.925, 2e-4, 1.6e-4, 1.5e-4, 1e-4, 8.9e-5, 8.2e-5, 8e-5, 7.5e-5, 7.4e-5], np.float32)
PIECES = ["</s>", "<s>", ".", "s", "'", "▁chaud", "▁the", "are", "▁plein", "at"]


def settled() -> None:
    for _ in range(3):
        QApplication.processEvents()


def candidate_row_problems(panel) -> list[str]:
    """Each drawn row of the candidates panel has at least its labels' line height; rows not drawn are said."""
    settled()
    axis, box = panel.getAxis("left"), panel.getPlotItem().vb
    ticks = [text for _, text in axis._tickLevels[0]] if axis._tickLevels else []
    (_, _), (low, high) = box.viewRange()
    pitch = box.height() / (high - low)  # px per row
    font = axis.style.get("tickFont") or QFont(QApplication.font())
    line = QFontMetricsF(font).height()
    found = []
    if ticks and pitch + 0.5 < line:
        found.append(f"{len(ticks)} rows of {pitch:.1f} px for labels {line:.1f} px high: they overlap")
    shown = getattr(panel, "shown_rows", list(range(len(panel.tokens))))  # before issue 39: every row drawn
    folded = len(panel.tokens) - len(shown)
    if folded and not any(f"… {folded} more" in text for text in ticks):
        found.append(f"{folded} candidates not drawn and no row says so: {ticks}")
    chosen = [i for i, token in enumerate(panel.token_ids) if int(token) == panel.chosen_id]
    if chosen and chosen[0] not in shown:
        found.append("the chosen candidate is not drawn")
    return found


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_panel_of_the_explore_tab_shows_its_data_or_says_it_does_not(qtbot, open_window, default_bundle, size):
    window = open_window(default_bundle)
    window.resize(*size)
    tab = window.explore_tab
    tab.controls.source.setText(SENTENCE)
    tab.controls.source.returnPressed.emit()
    qtbot.waitUntil(lambda: window.explore.trace is not None and window.explore.finished, timeout=60000)
    settled()
    assert (window.width(), window.height()) == size
    assert len(tab.candidates.token_ids) == 10  # ten candidates and the "other" row: too many for 1280x720 at 9 pt
    assert candidate_row_problems(tab.candidates) == []
    assert tab.focus.hidden_parts() == [] and tab.focus.misplaced_labels() == []
    assert clipped_texts(tab) == []


@pytest.mark.parametrize("height", [100, 120, 147, 300])
def test_candidates_fold_what_does_not_fit_and_keep_the_chosen_one(qtbot, height):
    from explorer.app import make_application
    from explorer.widgets.candidates_view import CandidatesView

    make_application()
    panel = CandidatesView()
    qtbot.addWidget(panel)
    panel.resize(1000, height)
    panel.show()
    clicks = []
    panel.candidate_clicked.connect(lambda step, token: clicks.append((step, token)))
    panel.set_candidates(7, list(range(10)), PIECES, PROBABILITIES, 8, vocabulary_size=1352)  # the 9th chosen (forced)
    assert candidate_row_problems(panel) == []
    assert len(panel.labels) == 11 and 8 in panel.shown_rows  # every row kept for exports; the chosen one drawn
    np.testing.assert_allclose(panel.probabilities, PROBABILITIES)
    last = len(panel.shown_rows) - 1  # a click on the last candidate drawn forces that one, not the row's index
    panel.click_candidate(panel.shown_rows[last])
    assert clicks == [(7, panel.shown_rows[last])]
    if height == 300:
        assert panel.shown_labels == panel.labels  # room for all: nothing folded
    else:
        assert len(panel.shown_rows) < 10 and "Folded for lack of room" in panel.toolTip()
