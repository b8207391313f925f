"""Plain observer events: what the Qt-free controllers emit and the views (or other controllers) listen to.

An ``Event`` is a list of callbacks: ``connect(callback)``, ``disconnect(callback)``, ``emit(*args)`` (calling the
event emits it too, so one event can be connected to another, or to a Qt signal's slot). Controllers emit on the
window's thread only: the runner (explorer/controllers/runner.py) brings every worker's report there first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Event:
    """Callbacks called, in the order connected, each time the event is emitted."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._callbacks: list[Callable[..., Any]] = []

    def connect(self, callback: Callable[..., Any]) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., Any] | None = None) -> None:
        """Forget ``callback`` (every callback when None); forgetting one never connected does nothing."""
        if callback is None:
            self._callbacks.clear()
        elif callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for callback in list(self._callbacks):  # a callback may connect or disconnect others
            callback(*args)

    def __call__(self, *args: Any) -> None:
        self.emit(*args)

    def __repr__(self) -> str:
        return f"Event({self.name!r}, {len(self._callbacks)} callbacks)"
