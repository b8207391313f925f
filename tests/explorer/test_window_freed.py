"""A closed window's objects are freed: the app freezes what lives as long as it (``gc.freeze``, so full collections
skip PyTorch's and Qt's modules), and frozen objects are never collected; closing a window thaws them. Before, every
window opened in one process stayed in memory (30 MB each with a model open: the long run of window states grew by
0.6-0.8 GB a minute)."""

from __future__ import annotations

import gc
import weakref

from tests.conftest import tiny_bundle
from tests.explorer.gui_helpers import shut
from tests.explorer.window_actions import open_window


def test_a_closed_window_and_its_model_are_collected(tmp_path):
    window = open_window(str(tmp_path), (1300, 850))  # held by nothing else (the qtbot fixtures keep theirs)
    try:
        window.explore.set_model(tiny_bundle()[0])
        controller, model = weakref.ref(window.explore), weakref.ref(window.explore.bundle.model)
    finally:
        assert not shut(window)
    del window
    gc.collect()
    assert controller() is None, "the window's controller outlived the window"
    assert model() is None, "the open model outlived the window"
