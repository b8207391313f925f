"""Numbered, cancellable worker runs: what the alignment table and head importance sessions share.

One run is current at a time. Each has its own number, its own cancel flag (a ``threading.Event`` its work reads)
and its own thread; starting another, or dropping the current one, sets the old flag and bumps the number, so
whatever the old thread still reports (through queued signals carrying its number) is recognised and dropped.
``stop`` drops the current run and joins every thread not yet ended (the window calls it when it closes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Runs:
    def __init__(self, name: str, daemon: bool = True):
        self.name = name
        self.daemon = daemon
        self.number = 0  # the current run's number (or the last one's)
        self.cancel: threading.Event | None = None  # the current run's flag; None when nothing runs
        self.threads: list[threading.Thread] = []  # every worker not yet joined (a dropped one may still be ending)

    @property
    def active(self) -> bool:
        return self.cancel is not None

    def start(self, work: Callable[..., None], *args) -> None:
        """Drop the current run and start ``work(number, cancel, *args)`` on a thread of its own."""
        self.drop()
        self.number += 1
        self.cancel = threading.Event()
        thread = threading.Thread(target=work, args=(self.number, self.cancel, *args), name=self.name, daemon=self.daemon)
        self.threads = [*(old for old in self.threads if old.is_alive()), thread]
        thread.start()

    def is_current(self, number: int) -> bool:
        """Whether a report of run ``number`` is still listened to."""
        return number == self.number and self.cancel is not None

    def finish(self, number: int) -> bool:
        """Run ``number`` has ended on its own: True when it was the current run (now none is)."""
        if not self.is_current(number):
            return False
        self.cancel = None
        return True

    def drop(self) -> bool:
        """Cancel the current run and stop listening to it; True when one was running."""
        if self.cancel is None:
            return False
        self.cancel.set()
        self.cancel = None
        self.number += 1
        return True

    def stop(self, wait_ms: int) -> bool:
        """Drop the current run and join every thread (``wait_ms`` in all); True when they have all ended."""
        self.drop()
        deadline = time.monotonic() + max(wait_ms, 0) / 1000
        for thread in self.threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self.threads = [thread for thread in self.threads if thread.is_alive()]
        return not self.threads
