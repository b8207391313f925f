"""The window's Reading box offers a measure registered in one file (tests/uniform_measure.py) with its label and its
line on what it is, and the views draw its shares once it is chosen; a window opened after it is unregistered does
not offer it. (The command line, the AER table and the report card: tests/model/attribution/test_measure_registry.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from model.kinds import AttentionKind
from tests.explorer.gui_helpers import explore_window
from tests.uniform_measure import Uniform, registered_uniform


@pytest.fixture
def uniform():
    with registered_uniform() as measure:
        yield measure


def test_the_reading_box_offers_a_registered_measure_and_the_views_draw_it(uniform, qtbot, open_window, toy_fr_bundle):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))
    box = tab.measure_box
    index = box.findData(Uniform.name)
    assert index >= 0 and box.itemText(index) == Uniform.label
    qtbot.waitUntil(lambda: window.explore.trace is not None and window.explore.trace.n_steps > 0, timeout=60000)
    assert box.model().item(index).isEnabled() and box.itemData(index, Qt.ToolTipRole) == Uniform.what
    box.set_measure(Uniform.name)
    qtbot.waitUntil(lambda: tab.shown is not None and tab.shown.measure == Uniform.name, timeout=60000)
    cross = tab.shown.cross  # [1, 1, steps, source pieces]: equal shares of every source piece
    assert cross.shape[:2] == (1, 1)
    np.testing.assert_allclose(cross, 1 / cross.shape[-1])
    assert Uniform.label in tab.focus_matrix.title


def test_a_window_opened_after_it_is_unregistered_does_not_offer_it(open_window):
    with registered_uniform():
        pass
    window = open_window()
    assert window.explore_tab.measure_box.findData(Uniform.name) == -1 and window.explore_tab.measure_box.count() > 1
