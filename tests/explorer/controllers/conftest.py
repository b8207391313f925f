"""Fixtures of the controller tests: ``controllers`` is every controller of one window, without a window (and without
Qt), over a runner whose reports the test drains (``controllers.inbox``); every job is joined after the test."""

from __future__ import annotations

import pytest

from explorer.controllers.runner import Inbox, Runner
from explorer.controllers.window import WindowControllers
from tests.explorer.controllers.recording import WAIT_S


@pytest.fixture
def controllers():
    inbox = Inbox()
    built = WindowControllers.build(Runner(inbox))
    built.inbox = inbox
    yield built
    assert built.close(WAIT_S), "a job outlived its test"
