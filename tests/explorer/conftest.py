"""Fixtures of the GUI tests: ``open_window(bundle=None, build=True)`` opens the app's main window as every
GUI test does (tests/explorer/gui_helpers.py: its own settings file, 1300x850, shown, the closing questions
answered), ``window`` is one such window with no model. After the test, whether it passed, failed or raised,
every window the fixture opened is shut: its training stopped and joined, closed, its tasks finished, deleted."""

from __future__ import annotations

import pytest

from tests.explorer.gui_helpers import new_window, shut


@pytest.fixture
def open_window(qtbot, tmp_path):
    """A factory of main windows (all sharing tmp_path/settings.ini, as a user's successive windows do),
    each one shut after the test."""
    opened = []

    def open_(bundle=None, *, build: bool = True):
        window = new_window(qtbot, tmp_path, bundle, build=build)
        opened.append(window)
        return window

    yield open_
    problems = []
    while opened:  # the last opened first; every window is shut even when shutting one went wrong
        problems += shut(opened.pop())
    assert not problems, "; ".join(problems)


@pytest.fixture
def window(open_window):
    """A main window with its own settings file and no model; shut after the test."""
    return open_window()
