"""While a window is open, Python's cyclic garbage collector runs on the window's thread only (explorer/runtime.py's
WindowThreadCollector): a job thread that allocates never collects the window's Qt objects. Left automatic, a curves
job of benchmarks/window_states.py's long run collected a closed window's widgets in its own thread and hung there."""

from __future__ import annotations

import gc
import threading

from PySide6.QtCore import QObject

from explorer.runtime import COLLECT_EVERY_MS, COLLECTOR


class Cycle:
    """Cyclic garbage holding a Qt object: only a collection frees it."""

    def __init__(self) -> None:
        self.me = self
        self.qt = QObject()


def test_a_job_thread_never_collects_qt_objects_while_a_window_is_open(qtbot, window):
    assert not gc.isenabled() and COLLECTOR.windows >= 1
    destroyed_in: list[str] = []
    cycle = Cycle()
    cycle.qt.destroyed.connect(lambda *_: destroyed_in.append(threading.current_thread().name))
    del cycle  # garbage now, in a cycle

    def allocate() -> None:  # enough live containers to start collections of every generation, were it automatic
        kept = [[[] for _ in range(gc.get_threshold()[0] * 2)] for _ in range(gc.get_threshold()[1] * 2)]
        assert gc.get_count()[0] > gc.get_threshold()[0] and kept

    job = threading.Thread(target=allocate, name="job")
    job.start()
    job.join()
    assert destroyed_in == []  # the job allocated past every threshold and collected nothing
    kept = [[] for _ in range(gc.get_threshold()[0] * 2)]  # the window's thread allocates: a collection is due
    qtbot.waitUntil(lambda: destroyed_in != [], timeout=10 * COLLECT_EVERY_MS)
    del kept
    assert destroyed_in == [threading.main_thread().name]


def test_closing_the_last_window_gives_automatic_collection_back(open_window):
    COLLECTOR.stop()  # the suite's own hold on collection (tests/explorer/conftest.py) lifted: only windows count
    try:
        assert COLLECTOR.windows == 0 and gc.isenabled()  # earlier tests' windows are shut
        first, second = open_window(), open_window()
        assert not gc.isenabled() and COLLECTOR.windows == 2
        first.close()  # another window is open: its thread collects
        assert not gc.isenabled() and COLLECTOR.windows == 1
        second.close()
        assert gc.isenabled() and COLLECTOR.windows == 0
    finally:
        COLLECTOR.start()


def test_closings_free_the_oldest_generation_at_the_first_and_every_eighth(monkeypatch):
    from explorer import runtime

    passes: list[int] = []
    monkeypatch.setattr(runtime.gc, "collect", lambda generation=2: passes.append(generation) or 0)
    monkeypatch.setattr(runtime.gc, "enable", lambda: None)
    monkeypatch.setattr(runtime.gc, "disable", lambda: None)
    collector = runtime.WindowThreadCollector()
    for _ in range(2 * collector.FULL_PASS_EVERY + 1):
        collector.start()
        collector.stop()
    every = collector.FULL_PASS_EVERY
    assert passes == ([2] + [1] * (every - 1)) * 2 + [2]  # a closed window's objects are in the oldest generation
