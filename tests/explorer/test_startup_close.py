"""Closing the window at any moment of its start-up ends the process cleanly (exit 0): before the tabs are built,
while the default model is still loading (a job that cannot be joined, inside PyTorch), and once it is decoded.
Each case is the real ``transformer-explorer`` start (the launcher, ``run_app``) in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

DRIVER = textwrap.dedent("""
    import sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    import explorer.app
    from explorer.launcher import main

    point = sys.argv[1]
    make_application = explorer.app.make_application

    def reached(window):
        if point == "frame":
            return not window.built
        if point == "loading":
            return window.built and window.is_opening()
        return window.built and window.explore.trace is not None  # "decoded"

    def close_at_the_point():
        windows = [w for w in QApplication.topLevelWidgets() if type(w).__name__ == "MainWindow"]
        if windows and reached(windows[0]):
            print("closing at", point, "| settings:", windows[0].settings_label.text(), flush=True)
            windows[0].close()
        else:
            QTimer.singleShot(1, close_at_the_point)

    def make_and_watch(argv=None):
        app = make_application(argv)
        QTimer.singleShot(0, close_at_the_point)
        return app

    explorer.app.make_application = make_and_watch
    sys.exit(main([]))
""")


@pytest.mark.parametrize("point", ["frame", "loading", "decoded"])
def test_closing_during_start_up_exits_cleanly(tmp_path, point):
    environment = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, point], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )
    assert f"closing at {point}" in result.stdout, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
