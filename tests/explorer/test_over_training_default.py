"""Issue 39 in the window, on the shipped default model and its timeline (3 + 3 layers of 4 heads, 8 snapshots), at the
window's default size (1400 x 900): the Over training view measures its curves on its own when shown, names every head
of its roles strip, says what the shaded bands are, and lists the phase changes with the rate they are ranked by; a
snapshot side by side with the final model says whose head and AER it shows, its own AER, and that its output is forced."""

from __future__ import annotations

from html import escape

import pytest
from PySide6.QtGui import QImage, QPainter

from explorer.controllers.timeline import SIDE_BY_SIDE
from model.inspection.alignment import measured_aer

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


def test_a_snapshot_beside_the_final_model_says_whose_head_and_aer_it_shows(qtbot, default_window):
    """Issue 39: "step 30 of 7,174 … layer 3, head 1, the best-aligning head: AER 0.104" was the final model's AER (at
    step 30 that head is uniform), and the snapshot's "Translation:" was the final model's output, forced."""
    window, tab = default_window
    line, compare = window.controllers.timeline, window.controllers.compare
    compare.aer_pairs = 40  # fewer pairs than the default 200: the same computation, sooner
    index = next(i for i in range(line.count) if line.source.snapshots[i].step == 30)
    line.compare_with(index, SIDE_BY_SIDE)
    qtbot.waitUntil(lambda: not line.running and not compare.running and len(tab.compare_view.panels) == 2, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: tab.compare_view.panels[1].own_aer is not None, timeout=WAIT_MS)
    final, snapshot = tab.compare_view.panels
    choice = final.choice
    assert (choice.layer, choice.head, snapshot.choice) == (2, 0, choice)  # layer 3, head 1, on both sides
    own = float(measured_aer(line.source.bundle_at(index), 40, 0).head_aer[0, 2, 0])
    assert snapshot.own_aer == pytest.approx(own) and own > 0.7 > choice.corpus_aer  # uniform at step 30
    left, right = (heading.text() for heading in tab.compare_view.headings)
    assert f"the best-aligning head: AER {choice.corpus_aer:.3f}" in left and "<br>Translation: " in left
    assert escape(f"the final model's best-aligning head: AER there {choice.corpus_aer:.3f}") in right
    assert f"at this snapshot AER {own:.3f}" in right
    assert escape("<br>Translation (forced to the final model's output): ".replace("<br>", "")) in right
