"""The neuron view's axis titles have the room they need in a 1400×900 window (issue 39: "nension (every 5th)" and
"scaled score (x0.0…" were cut at the plots' edges), its bars read scores as they are, with no SI scale factor, and
its title shows a query token such as "</s>" (it read as an HTML tag: 'query 8 “”')."""

from __future__ import annotations

import dataclasses

import numpy as np
from PySide6.QtGui import QTextDocument

from tests.explorer.axis_room import axis_texts, clipped_texts
from tests.explorer.gui_helpers import explore_window

WAIT_MS = 60_000  # a bound on waiting for a job, not a timing claim


def test_every_axis_title_fits_and_no_scale_factor(qtbot, open_window, default_bundle):
    window, tab = explore_window(open_window, default_bundle, "the black cat sees the small dog")
    window.resize(1400, 900)
    view, controller = tab.neuron.view, window.controllers.neuron
    tab.views.setCurrentWidget(view)
    qtbot.waitUntil(lambda: not controller.running and view.row is not None, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: view.attention.plot.getAxis("left").geometry().height() > 0, timeout=WAIT_MS)
    qtbot.wait(50)  # the layout settles (not a timing claim: what is measured is geometry)
    clipped = clipped_texts(view)
    assert clipped == [], clipped
    shown = QTextDocument()
    shown.setHtml(view.title.text())
    assert shown.toPlainText().endswith("query 8 “</s>”")  # the token read as text, not as a tag
    tiny = dataclasses.replace(view.row, scores=view.row.scores * 1e-4)  # scores of a few thousandths
    view.show_row(tiny)
    qtbot.wait(50)
    assert not [text for text in axis_texts(view) if "x0.0" in text or "×0.0" in text or "(x1e" in text]
    assert clipped_texts(view) == []
    assert np.isfinite(view.row.scores).any()
