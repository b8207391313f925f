"""The one way the window runs work off its thread: jobs on named channels, with cancellation, supersession,
progress, errors and joining on close. No Qt here: reports reach the window's thread through ``deliver``, a
function that runs a callable there later (explorer/qt_runner.py's for the app, ``Inbox`` for tests and scripts).

- ``submit(channel, work, ...)`` runs ``work(job)`` on a daemon thread of its own. A newer job on the same channel
  supersedes the older: the older's token is cancelled and whatever it still reports is dropped.
- The work polls its ``CancelToken`` (``job.cancelled``, ``job.check()``, or ``job.token.on_cancel`` for a core
  loop with its own flag) and reports through ``job.progress(...)`` and ``job.deliver(callback, ...)``.
- Its end comes back on the window's thread: ``on_done(value)``, ``on_cancelled()`` or ``on_error(text)``, then
  ``on_end()``. A ``UserError`` is the user's to read (its message); any other exception is a bug: ``on_error``
  gets "internal error: ..." and its full traceback is logged (logger ``explorer``), never swallowed.
- ``cancel(channel)`` asks the job to stop and still reports its end; ``cancel(channel, drop=True)`` stops
  listening to it at once. ``close(timeout_s)`` cancels every job, drops every later report and joins the threads:
  all but those of work that cannot poll its token (``joinable=False``: reading a file the user named, which may
  never end), whose daemon threads are left to end on their own, reporting nothing.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from explorer.runtime import for_light_work
from model.errors import UserError

LOG = logging.getLogger("explorer")

Deliver = Callable[[Callable[[], None]], None]  # runs a callable on the window's thread, later


class Cancelled(Exception):
    """Raised by ``Job.check()`` once the job is cancelled: the work ends there."""


def describe_error(error: BaseException) -> str:
    """One line for an error: its message (the first line of a RuntimeError's), else its type."""
    text = str(error)
    if "out of memory" in text.lower():
        return "the GPU ran out of memory: try a smaller batch size or model, or train on the CPU"
    if text:
        return text.splitlines()[0] if isinstance(error, RuntimeError) else text
    return type(error).__name__


def user_message(error: BaseException) -> str:
    """What the window shows for an error: a UserError's message, "internal error: ..." for anything else."""
    if isinstance(error, UserError):
        return str(error) or type(error).__name__
    return f"internal error: {describe_error(error)}"


class CancelToken:
    """A flag the work polls; callbacks registered with ``on_cancel`` run once when it is set (in that thread)."""

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._flag.is_set()

    def is_cancelled(self) -> bool:
        """The flag as a function (what the core's ``stop=`` and ``cancelled=`` arguments take)."""
        return self._flag.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the token is cancelled (or ``timeout_s`` passes); True when it is cancelled."""
        return self._flag.wait(timeout_s)

    def cancel(self) -> None:
        with self._lock:
            if self._flag.is_set():
                return
            self._flag.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the token is cancelled (at once when it is already)."""
        with self._lock:
            if not self._flag.is_set():
                self._callbacks.append(callback)
                return
        callback()


@dataclass
class Handlers:
    """What a job's end calls on the window's thread (each optional)."""

    on_done: Callable[[Any], object] | None = None
    on_error: Callable[[str], None] | None = None
    on_cancelled: Callable[[], None] | None = None
    on_end: Callable[[], None] | None = None


@dataclass(eq=False)
class Job:
    """One run of ``work`` on a channel, as the work and the controllers see it."""

    runner: Runner
    channel: str
    number: int
    token: CancelToken = field(default_factory=CancelToken)
    on_progress: Callable[..., None] | None = None
    handlers: Handlers = field(default_factory=Handlers)
    thread: threading.Thread | None = None

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled

    def check(self) -> None:
        """Raise ``Cancelled`` once the job is cancelled (the work calls it between its parts)."""
        if self.token.cancelled:
            raise Cancelled

    def progress(self, *args: Any) -> None:
        """From the work: ``on_progress(*args)`` on the window's thread, while this job is listened to."""
        if self.on_progress is not None:
            self.runner.post(self, self.on_progress, *args)

    def deliver(self, callback: Callable[..., None], *args: Any) -> None:
        """From the work: ``callback(*args)`` on the window's thread, while this job is listened to."""
        self.runner.post(self, callback, *args)

    @property
    def current(self) -> bool:
        """Whether the runner still listens to this job (read on the window's thread)."""
        return self.runner.current(self.channel) is self


class Runner:
    """Jobs on named channels, their reports delivered on the window's thread through ``deliver``."""

    def __init__(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._current: dict[str, Job] = {}  # read and changed on the window's thread only
        self._threads: list[threading.Thread] = []
        self._numbers = 0
        self.closed = False

    # --- on the window's thread -----------------------------------------------------------------
    def submit(
        self,
        channel: str,
        work: Callable[[Job], Any],
        *,
        on_done: Callable[[Any], object] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_progress: Callable[..., None] | None = None,
        on_cancelled: Callable[[], None] | None = None,
        on_end: Callable[[], None] | None = None,
        policy: Callable[[], None] = for_light_work,
        after_previous: bool = False,
        joinable: bool = True,
    ) -> Job:
        """Run ``work(job)`` on a thread of its own, superseding the job running on ``channel``. ``policy`` sets the
        thread's CPU threads (light work by default); ``after_previous``: start once the superseded job's thread
        has ended (work that must not run twice at once, such as the measures); ``joinable=False``: work that cannot
        poll its token (a read that may never end), which ``join`` and ``close`` do not wait for."""
        previous = self._current.get(channel)
        self.cancel(channel, drop=True)
        self._numbers += 1
        job = Job(self, channel, self._numbers, on_progress=on_progress)
        job.handlers = Handlers(on_done, on_error, on_cancelled, on_end)
        wait_for = previous.thread if after_previous and previous is not None else None
        job.thread = threading.Thread(target=self._run, args=(job, work, policy, wait_for), name=channel, daemon=True)
        if joinable:
            self._threads = [*(thread for thread in self._threads if thread.is_alive()), job.thread]
        if self.closed:  # a job after close: cancelled at once, never reported
            job.token.cancel()
        else:
            self._current[channel] = job
        job.thread.start()
        return job

    def current(self, channel: str) -> Job | None:
        return self._current.get(channel)

    def is_running(self, channel: str) -> bool:
        return channel in self._current

    def cancel(self, channel: str, drop: bool = False) -> bool:
        """Cancel the channel's job (True when one was running); ``drop``: its reports, its end included, are dropped."""
        job = self._current.get(channel)
        if job is None:
            return False
        job.token.cancel()
        if drop:
            del self._current[channel]
        return True

    def close(self, timeout_s: float = 30.0) -> bool:
        """Cancel every job, drop whatever they still report, and join their threads (``timeout_s`` in all); True
        when every thread has ended."""
        self.closed = True
        for job in list(self._current.values()):
            job.token.cancel()
        self._current.clear()
        return self.join(timeout_s)

    def join(self, timeout_s: float) -> bool:
        """Wait for every joinable job's thread (``timeout_s`` in all); True when they have all ended."""
        deadline = time.monotonic() + max(timeout_s, 0.0)
        for thread in list(self._threads):
            thread.join(max(deadline - time.monotonic(), 0.0))
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        return not self._threads

    # --- from any thread ------------------------------------------------------------------------
    def post(self, job: Job, callback: Callable[..., None], *args: Any) -> None:
        """Deliver ``callback(*args)`` on the window's thread if ``job`` is still listened to then."""
        self._send(lambda: self._call_if_current(job, callback, args), job)

    def _send(self, callback: Callable[[], None], job: Job) -> None:
        """Hand ``callback`` to the window's thread, unless the runner has closed."""
        if self.closed:
            return
        try:
            self._deliver(callback)
        except RuntimeError:  # the delivery's Qt object is gone: the window has closed
            LOG.debug("a report of the %s job came after the window closed", job.channel)

    def _call_if_current(self, job: Job, callback: Callable[..., None], args: tuple) -> None:
        if self.closed or self._current.get(job.channel) is not job:
            return
        try:
            callback(*args)
        except Exception as bug:  # noqa: BLE001 - a bug in a report's handler: logged and shown, never lost
            LOG.error("internal error handling a report of the %s job", job.channel, exc_info=bug)
            job.token.cancel()
            self._finish(job, None, user_message(bug))

    def _finish(self, job: Job, value: Any, error: str | None) -> None:
        """The job's end on the window's thread: its handlers, unless it is no longer listened to."""
        if self.closed or self._current.get(job.channel) is not job:
            return  # superseded, dropped, or the window closed
        del self._current[job.channel]
        handlers = job.handlers
        try:
            if error is not None:
                if handlers.on_error is not None:
                    handlers.on_error(error)
            elif job.token.cancelled:
                if handlers.on_cancelled is not None:
                    handlers.on_cancelled()
            elif handlers.on_done is not None:
                handlers.on_done(value)
        except Exception as bug:  # noqa: BLE001 - a bug in an end handler: logged and shown, never lost
            LOG.error("internal error handling the end of the %s job", job.channel, exc_info=bug)
            if handlers.on_error is not None and error is None:
                handlers.on_error(user_message(bug))
        finally:
            if handlers.on_end is not None:
                handlers.on_end()

    def _run(self, job: Job, work: Callable[[Job], Any], policy: Callable[[], None], wait_for: threading.Thread | None) -> None:
        """The job's thread: the work, then its end delivered to the window's thread."""
        value, error = None, None
        try:
            if wait_for is not None:
                wait_for.join()
            job.check()
            policy()
            value = work(job)
        except Cancelled:
            job.token.cancel()
        except UserError as user_error:
            error = user_message(user_error)
        except Exception as bug:  # noqa: BLE001 - a bug: logged with its traceback and shown as an internal error
            LOG.error("internal error in the %s job", job.channel, exc_info=bug)
            error = user_message(bug)
        self._send(lambda: self._finish(job, value, error), job)


class Inbox:
    """A ``deliver`` for code without an event loop (tests, scripts): reports wait until that thread drains them."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()

    def __call__(self, callback: Callable[[], None]) -> None:
        self._queue.put(callback)

    def drain(self) -> int:
        """Run every report waiting now; how many there were."""
        count = 0
        while True:
            try:
                callback = self._queue.get_nowait()
            except queue.Empty:
                return count
            callback()
            count += 1

    def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 60.0) -> bool:
        """Run reports as they come until ``predicate()`` holds; False when ``timeout_s`` passes first."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                callback = self._queue.get(timeout=min(left, 0.05))
            except queue.Empty:
                continue
            callback()
        return True
