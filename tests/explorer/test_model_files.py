"""The window and bad model files: a crafted, damaged or non-regular file gets a message naming the problem and
never becomes the active model; closing the window ends the process even while a load is still running."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from model.io import checkpoint
from tests.conftest import tiny_bundle
from tests.model.io.test_model_files import CASES, crafted_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small():
    bundle, _ = tiny_bundle("copy", size=300)
    return bundle, checkpoint.to_bytes(bundle)


def refused(qtbot, window, path) -> str:
    window.error_box = None
    window.open_model(str(path))
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=20000)
    text = window.error_box.text()
    window.error_box.close()
    return text


def test_crafted_files_and_a_fifo_never_become_the_active_model(qtbot, tmp_path, open_window, small):
    bundle, data = small
    window = open_window(bundle)
    for case, (content, expected) in crafted_files(data).items():
        path = tmp_path / f"{case}.safetensors"
        path.write_bytes(content)
        text = refused(qtbot, window, path)
        assert expected in text and str(path) in text and "still open" in text, case
        assert window.explore.bundle is bundle, case
    assert len(crafted_files(data)) == len(CASES)
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    assert "is not a regular file (a FIFO)" in refused(qtbot, window, fifo)
    assert window.explore.bundle is bundle
    good = tmp_path / "good.safetensors"
    good.write_bytes(data)
    window.open_model(str(good))  # the window still opens a sound file afterwards
    qtbot.waitUntil(lambda: window.explore.bundle is not bundle, timeout=20000)
    assert window.explore.bundle.path == str(good)


def test_closing_the_window_ends_the_process_while_a_load_still_runs(tmp_path):
    script = textwrap.dedent(f"""
        import threading
        from PySide6.QtCore import QSettings, QTimer
        from explorer.app import make_application
        from explorer.main_window import MainWindow
        from model.io import checkpoint

        started = threading.Event()
        def never_ending_load(path, device="cpu"):  # as a read from a file that never ends would
            started.set()
            threading.Event().wait()
        checkpoint.load = never_ending_load
        app = make_application()
        window = MainWindow(QSettings({str(tmp_path / "settings.ini")!r}, QSettings.IniFormat))
        window.show()
        window.open_model("default")
        def close_when_loading():
            if started.is_set():
                window.close()
                app.quit()
            else:
                QTimer.singleShot(50, close_when_loading)
        QTimer.singleShot(0, close_when_loading)
        app.exec()
        print("window closed")
    """)
    environment = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )  # a hang guard: before the fix it never exits
    assert "window closed" in result.stdout, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
