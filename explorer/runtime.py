"""Every process-wide policy of the window, in one place (the core's own, OpenMP's wait and the CPU
threads of a thread, are in ``model/runtime.py``). No Qt here: the controllers and the runner use it too.

- **Logging**: the ``explorer`` logger writes warnings and errors (an internal error's traceback) to stderr
  (``configure_logging``).

- **GIL hand-over**: every Python call the window makes (slots, pyqtgraph's paint methods) first takes
  the GIL from the training thread; at Python's default 5 ms interval a repaint needing dozens of them
  could stall for 100 ms, so the interval is 1 ms (``apply_window_policies``).
- **Garbage collector**: what lives as long as the app (PyTorch's and Qt's modules, a training run's
  corpus and model) is frozen, so full collections (which hold the GIL) need not scan it
  (``freeze_long_lived``, ``collector_paused``). While a window is open, Python's cyclic collector runs on the
  window's thread only (``WindowThreadCollector``, as calibre does): left automatic, it runs in whichever thread
  allocates, and a job thread that collected a closed window's widgets destroyed them there, where Qt waits for
  the window's thread (the long run of benchmarks/window_states.py hung in a curves job that way).
- **CPU threads**: work in the window's thread and short tasks run PyTorch on one core, a training
  thread on the cores other programs leave free (``for_light_work``, ``for_training``).
- **The None guard**: a PySide6 6.12 reference-count bug on Python before 3.12. There, each call of a
  Qt method that returns nothing (``setText``, ``QPainterPath.moveTo``, ...) gives up one reference to
  ``None`` that it never took, and some calls through Python overrides do the same to ``True`` and
  ``False``. From Python 3.12 these objects are immortal and nothing happens; on 3.11 their counts
  reach zero after some thousands of calls and the interpreter aborts ("Fatal Python error:
  none_dealloc" or "bool_dealloc"). The guard measures the leak once and, only where it exists, adds a
  large reserve to the counts of None, True, False and the cached small integers (objects that are
  never freed, so the reserve is safe). The probe that measures the leak makes Qt calls, so the app passes it
  in (``explorer/app.py``).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import platform
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from model.runtime import set_cpu_threads

GIL_SWITCH_INTERVAL = 0.001  # seconds; Python's default is 0.005
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"


def apply_window_policies(leaks_none: Callable[[], bool]) -> None:
    """Before the QApplication: logging, the None guard (``leaks_none``: the app's Qt probe) and the GIL hand-over."""
    configure_logging()
    protect_none(leaks_none)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)


def end_process(code: int) -> int:
    """The window has closed and its jobs are joined: end the process with ``code``. A job that cannot be joined
    (a model still loading, which cannot poll its token) may be inside PyTorch's C++ code, where the interpreter's
    teardown would crash (a segfault or "terminate called"): with such a thread left, the process ends at once,
    its output flushed (the settings are already written); else ``code`` is returned, for a normal exit."""
    if any(thread is not threading.main_thread() and thread.is_alive() for thread in threading.enumerate()):
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def configure_logging() -> None:
    """Warnings and errors of the window (``explorer``) on stderr, once, unless the program set up logging itself."""
    logger = logging.getLogger("explorer")
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)


def freeze_long_lived() -> None:
    """Once the window and PyTorch are loaded: full collections need not scan them again."""
    gc.freeze()


def thaw() -> None:
    """What was frozen may be collected again: a closed window, or a finished training run's corpus and batches.
    Frozen objects are never collected, so without this every window opened in a process (tests open hundreds)
    and every training run's cyclic garbage would live until the process ends."""
    gc.unfreeze()


class WindowThreadCollector:
    """Python's cyclic garbage collector, run only when a window's thread asks (``check``, from a timer there).

    ``start`` (a window opens) turns automatic collection off, each generation's threshold kept; ``check`` collects
    the generations whose counts passed their thresholds, as the automatic collector would have; ``stop`` (a window
    has closed, its jobs joined) collects on this thread and, when no window is left open, turns automatic
    collection back on: no job thread is left then to collect Qt objects. A closed window's objects are in the
    oldest generation (thawed), so only a full pass frees them; one costs 0.15 s with PyTorch loaded, whatever the
    window held, so ``stop`` makes one at the first closing and every ``FULL_PASS_EVERY``-th after it, the young
    generations otherwise. A process that opens many windows (the tests, the long run of window states) keeps at
    most that many windows' garbage. (Without full passes the long run's resident memory doubled: 1.9 GB after 50
    windows instead of 0.9 GB; with one at every closing the suite spent 48 s of its 6 minutes in them.)"""

    FULL_PASS_EVERY = 8  # closings

    def __init__(self) -> None:
        self.thresholds = gc.get_threshold()
        self.windows = 0
        self.closings = 0

    def start(self) -> None:
        self.windows += 1
        gc.disable()

    def check(self) -> int:
        """Collect what the automatic collector would have by now; the number of unreachable objects found."""
        generation = -1
        for index, (count, threshold) in enumerate(zip(gc.get_count(), self.thresholds)):
            if count <= threshold:
                break
            generation = index
        return gc.collect(generation) if generation >= 0 else 0

    def stop(self) -> None:
        self.windows = max(self.windows - 1, 0)
        gc.collect(2 if self.closings % self.FULL_PASS_EVERY == 0 else 1)
        self.closings += 1
        if not self.windows:
            gc.enable()


COLLECTOR = WindowThreadCollector()  # the process's one: every window starts and stops it
COLLECT_EVERY_MS = 500  # how often a window's thread runs what collection is due


@contextmanager
def collector_paused() -> Iterator[None]:
    """No full garbage-collector passes while a corpus, tokenizers, model and batches are built.

    A full pass holds the GIL, and so freezes the window, for as long as it takes: 100-200 ms once a
    20,000-pair corpus is in memory. What is built here lives until training ends, so afterwards it
    is frozen (``gc.freeze``) and later passes skip it. Building creates no reference cycles to collect.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def for_light_work() -> None:
    """This thread (the window's, or a short task's) runs PyTorch on one core: the rest stay with training."""
    set_cpu_threads(1)


def for_training() -> None:
    """This thread trains: every core for its team (the window and tasks run PyTorch on one)."""
    set_cpu_threads()


RESERVE = 1 << 40  # about 10^12 leaked references before it runs out: years of clicking
LOW_WATER = 1 << 39


def protect_none(leaks_none: Callable[[], bool]) -> bool:
    """Top up None's reference count where ``leaks_none()`` finds the bug; True when the guard is active."""
    if sys.version_info >= (3, 12) or platform.python_implementation() != "CPython":
        return False
    if sys.getrefcount(None) > LOW_WATER:
        return True
    if not leaks_none():
        return False
    for immortal in (None, True, False, *range(-5, 257)):
        ctypes.c_ssize_t.from_address(id(immortal)).value += RESERVE  # ob_refcnt is the first field
    return True
