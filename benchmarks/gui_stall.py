"""Window responsiveness while training: the event loop must never stall more than 100 ms.

Opens the main window, starts training from the Train tab (corpus preparation, tokenizers and
the training steps all run in the worker thread), and meanwhile a 5 ms QTimer records the gap
between its ticks. Prints the longest stall and the 99th percentile, with the steps trained.

    QT_QPA_PLATFORM=offscreen python benchmarks/gui_stall.py [--seconds 30] [--corpus toy-fr]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--corpus", default="toy-fr")
    parser.add_argument("--corpus-size", type=int, default=20000)
    args = parser.parse_args()

    from PySide6.QtCore import QSettings, QTimer

    from explorer.app import make_application
    from explorer.main_window import MainWindow

    app = make_application()
    window = MainWindow(QSettings(os.devnull, QSettings.IniFormat))
    window.ask_to_stop_training = lambda: __import__("PySide6.QtWidgets").QtWidgets.QMessageBox.Yes
    window.resize(1400, 900)
    window.show()
    tab = window.training_tab
    window.tabs.setCurrentWidget(tab)
    tab.form.corpus.setCurrentText(args.corpus)
    tab.form.corpus_size.setValue(args.corpus_size)
    tab.form.epochs.setValue(100)
    # As in the app: the default model is open (PyTorch imported) before the user clicks Start.
    from explorer.app import open_first_model

    open_first_model(window, None)
    deadline = time.perf_counter() + 60
    while window.explore.bundle is None and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.01)
    for _ in range(50):  # let the first decode and paint finish
        app.processEvents()
        time.sleep(0.01)
    modules_before = set(__import__("sys").modules)
    gaps: list[float] = []
    started = time.perf_counter()
    last = [started]

    stalls: list[tuple[float, float, str]] = []  # (seconds since start, stall ms, what training was doing)

    def tick():
        now = time.perf_counter()
        gaps.append(now - last[0])
        if now - last[0] > 0.1:
            stalls.append((last[0] - started, 1000 * (now - last[0]), tab.progress_label.text()[:60]))
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    timer.start()
    tab.start_button.click()
    QTimer.singleShot(int(args.seconds * 1000), app.quit)
    app.exec()
    timer.stop()
    steps = tab.last_progress.step if tab.last_progress else 0
    window.close()
    imported = sorted({m.split(".")[0] for m in set(__import__("sys").modules) - modules_before})
    gaps_ms = np.array(gaps) * 1000  # the first gap holds the Start click
    print(
        f"{args.seconds:.0f} s of training {args.corpus} ({args.corpus_size} pairs) from the Train tab: "
        f"{steps} steps, {len(gaps_ms)} timer ticks of 5 ms"
    )
    print(
        f"longest event-loop stall: {gaps_ms.max():.1f} ms (target <= 100 ms); 99th percentile "
        f"{np.percentile(gaps_ms, 99):.1f} ms; median {np.median(gaps_ms):.1f} ms; wall {time.perf_counter() - started:.0f} s"
    )
    print(f"packages first imported after Start: {', '.join(imported) or 'none'}")
    for at, stall, doing in stalls[:10]:
        print(f"  stall of {stall:.0f} ms at {at:.1f} s ({doing})")


if __name__ == "__main__":
    main()
