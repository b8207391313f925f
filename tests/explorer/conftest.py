"""Fixtures of the GUI tests: every window a test opened is closed after it, passed or failed; ``window``
is a main window with its own settings file and no model."""

from __future__ import annotations

import pytest

from tests.explorer.gui_helpers import OPENED, make_window, shut


@pytest.fixture(autouse=True)
def _windows_closed():
    """Close every window the test opened (through make_window or explore_window), whatever happened."""
    yield
    while OPENED:
        shut(OPENED.pop())


@pytest.fixture
def window(qtbot, tmp_path):
    """A main window with its own settings file; closed after the test."""
    return make_window(qtbot, tmp_path)
