"""The runner's Qt bridge: a ``deliver`` (explorer/controllers/runner.py) that runs each report of a worker on the
window's thread, through a queued signal of a QObject that lives there."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot

from explorer.controllers.runner import Runner


class GuiThreadDelivery(QObject):
    """Called from any thread with a callable: the callable runs later on the thread this object was made in."""

    _posted = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self._posted.connect(self._run, Qt.ConnectionType.QueuedConnection)

    def __call__(self, callback: Callable[[], None]) -> None:
        self._posted.emit(callback)

    @Slot(object)
    def _run(self, callback: Callable[[], None]) -> None:
        callback()


def gui_runner() -> Runner:
    """A runner whose reports arrive on the calling (the window's) thread."""
    return Runner(GuiThreadDelivery())
