"""Start-up as a user sees it: from launching the app to the window on screen, and to the default model
decoded in it (the Explore tab's sentence translated). Targets on a quiet machine: the window at once
(well under a second), the model decoded within 3 s.

Each run is a fresh process (the interpreter's own start counts); the best of --runs is printed.

    python benchmarks/startup.py [--runs 3]          (offscreen; under Xvfb: DISPLAY=:99 QT_QPA_PLATFORM=xcb)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = textwrap.dedent("""
    import sys, time
    from PySide6.QtCore import QSettings, QTimer
    from explorer.app import make_application, open_first_model
    from explorer.main_window import MainWindow
    app = make_application()
    window = MainWindow(QSettings("/dev/null", QSettings.IniFormat), build=False)
    window.show()
    app.processEvents()
    print("shown", time.time(), flush=True)
    def build():
        window.build()
        open_first_model(window, None)
    QTimer.singleShot(30, build)
    def check():
        session = window.explore
        if session is not None and getattr(session, "trace", None) is not None and session.trace.n_steps > 0:
            print("decoded", time.time(), flush=True)
            app.quit()
    timer = QTimer()
    timer.timeout.connect(check)
    timer.start(5)
    app.exec()
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    shown, decoded = [], []
    for _ in range(args.runs):
        started = time.time()
        output = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120).stdout
        marks = dict(line.split() for line in output.splitlines() if line.startswith(("shown", "decoded")))
        shown.append(float(marks["shown"]) - started)
        decoded.append(float(marks["decoded"]) - started)
    print(
        f"platform {env['QT_QPA_PLATFORM']}, best of {args.runs}: window shown after {min(shown):.2f} s "
        f"(target < 1 s), default model decoded after {min(decoded):.2f} s (target <= 3 s); "
        f"all runs: shown {', '.join(f'{s:.2f}' for s in shown)}; decoded {', '.join(f'{s:.2f}' for s in decoded)}"
    )


if __name__ == "__main__":
    main()
