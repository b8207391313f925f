"""Window responsiveness while the Interventions view works: the event loop must never stall more than 100 ms.

Opens the main window on the default model, shows the Explore tab's Interventions view (which computes the logit
lens, DecoderLens and logit attribution of the sentence in the background), then patches a 12-piece number pair
(the attribution preview, then every exact grid) ``--rounds`` times. Meanwhile a 5 ms QTimer records the gap between
its ticks. Prints, for the readings and for each round of patching, how long the work took, the longest gap and the
99th percentile, and the ratio of the longest gap to the 100 ms target (below 1 meets it).

    QT_QPA_PLATFORM=offscreen python benchmarks/patching_window.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from common import print_table  # noqa: E402
from PySide6.QtCore import QSettings, QTimer  # noqa: E402

from explorer.app import make_application  # noqa: E402
from explorer.main_window import MainWindow  # noqa: E402

CLEAN = "the cat sees the small dog that the boy loves"
CORRUPTED = "the cats see the small dog that the boy loves"
TARGET_MS = 100.0


class GapRecorder:
    """A 5 ms timer's tick gaps, in milliseconds, while it runs."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []
        self._last = 0.0

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append((now - self._last) * 1000)
        self._last = now

    def start(self) -> None:
        self.gaps, self._last = [], time.perf_counter()
        self.timer.start()

    def stop(self) -> list[float]:
        self.timer.stop()
        return self.gaps


def wait(app, until, seconds: float = 120.0) -> float:
    """Process events until ``until()`` (or ``seconds``); returns the seconds it took."""
    started = time.perf_counter()
    while not until() and time.perf_counter() - started < seconds:
        app.processEvents()
        time.sleep(0.001)
    return time.perf_counter() - started


def row(what: str, seconds: float, gaps: list[float]) -> list[str]:
    longest = max(gaps) if gaps else 0.0
    p99 = float(np.percentile(gaps, 99)) if gaps else 0.0
    return [what, f"{seconds * 1000:.0f}", f"{longest:.1f}", f"{p99:.1f}", f"{longest / TARGET_MS:.2f}"]


def default_window():
    """(the application, the main window at 1500×950 with the default model open, decoded and painted)."""
    app = make_application()
    window = MainWindow(QSettings(str(Path(tempfile.mkdtemp()) / "bench.ini"), QSettings.Format.IniFormat))
    window.resize(1500, 950)
    window.show()
    window.open_model("default")
    wait(app, lambda: window.explore.bundle is not None)
    wait(app, lambda: False, 1.0)  # the first decode and paint
    return app, window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    app, window = default_window()
    tab, controller = window.explore_tab, window.controllers.interventions
    view = tab.interventions.view
    recorder, rows = GapRecorder(), []
    recorder.start()
    tab.views.setCurrentWidget(view)
    seconds = wait(app, lambda: not controller.running and "logit lens" in view.results)
    rows.append(row("logit lens, DecoderLens, attribution", seconds, recorder.stop()))
    view.show_tool("patching")
    for index in range(args.rounds):
        view.patching.clean.setText(CLEAN)
        view.patching.corrupted.setText(CORRUPTED)
        view.show_result("patching", None)
        recorder.start()
        view.patching.patch_button.click()
        seconds = wait(app, lambda: not controller.running and "patching" in view.results)
        rows.append(row(f"patching, round {index + 1} (preview, then exact)", seconds, recorder.stop()))
    print(f"window 1500x950, {os.environ['QT_QPA_PLATFORM']} platform; pair: {CLEAN!r} / {CORRUPTED!r}")
    print_table(["work in the background", "ms", "longest gap ms", "p99 gap ms", f"ratio to {TARGET_MS:.0f} ms"], rows)
    window.close()


if __name__ == "__main__":
    main()
