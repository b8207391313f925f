"""Issue 39 in the window, on the shipped default model and its timeline (3 + 3 layers of 4 heads, 8 snapshots), at the
window's default size (1400 x 900): the Over training view measures its curves on its own when shown, names every head
of its roles strip, says what the shaded bands are, and lists the phase changes with the rate they are ranked by."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QImage, QPainter

SENTENCE = "the black cat sees the small dog"
WAIT_MS = 120000  # a bound on waiting for a state, not a timing claim


@pytest.fixture
def default_window(qtbot, open_window):
    """A 1400 x 900 window with the shipped default model open (its timeline found) and SENTENCE translated."""
    window = open_window()
    window.resize(1400, 900)
    window.open_model("default")
    qtbot.waitUntil(lambda: window.explore.bundle is not None, timeout=WAIT_MS)
    tab = window.explore_tab
    tab.controls.source.setText(SENTENCE)
    tab.controls.source.returnPressed.emit()
    qtbot.waitUntil(lambda: tab.over_training.bar.isVisible() and not window.controllers.timeline.running, timeout=WAIT_MS)
    return window, tab


def drawn_labels(axis) -> list[str]:
    """The tick labels an axis draws at its size now (pyqtgraph leaves out a level that does not fit)."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _rect, _flags, text in specs[2]] if specs else []


def test_the_curves_come_on_their_own_every_head_named_the_bands_explained(qtbot, default_window):
    window, tab = default_window
    view, curves = tab.over_training.curves_view, window.controllers.curves
    tab.views.setCurrentWidget(view)  # no button pressed
    qtbot.waitUntil(lambda: curves.curves is not None and not curves.running, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: len(view.plots) == 5 and view.plots[-1].vb.height() > 0, timeout=WAIT_MS)
    roles = view.plots[-1]
    expected = [f"L{layer}H{head}" for layer in (1, 2, 3) for head in (1, 2, 3, 4)]
    assert drawn_labels(roles.getAxis("left")) == expected  # was 2 of the 12
    assert "shaded" in view.legend.text() and "largest phase changes" in view.legend.text()
    rates = [float(view.changes.item(row).text().split("rate ")[1].split(":")[0]) for row in range(view.changes.count())]
    assert len(rates) == 10 and rates == sorted(rates, reverse=True)
