"""Helpers for the GUI tests: a main window with its own settings file, closed and checked after.

Every window ``make_window`` opens is recorded; the autouse fixture in tests/explorer/conftest.py closes
it after the test whatever happened (passed, failed or raised), so no window or training thread
outlives its test.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from model.io import checkpoint

OPENED: list = []  # windows opened by the running test, closed by tests/explorer/conftest.py


def make_window(qtbot, tmp_path, bundle=None):
    from explorer.app import make_application
    from explorer.main_window import MainWindow

    make_application()
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    window = MainWindow(settings)
    window.ask_to_stop_training = lambda: QMessageBox.Yes
    window.ask_to_keep_trained_model = lambda *_args: QMessageBox.Discard  # tests that care replace it again
    window.resize(1300, 850)
    OPENED.append(window)
    qtbot.addWidget(window)
    window.show()
    if bundle is not None:
        window.session.set_model(bundle)
    return window


def explore_window(qtbot, tmp_path, bundle, sentence: str):
    """A window with ``bundle`` open and ``sentence`` typed into the Explore tab and translated (Enter)."""
    window = make_window(qtbot, tmp_path, bundle)
    tab = window.explore_tab
    tab.controls.source.setText(sentence)
    tab.controls.source.returnPressed.emit()
    return window, tab


def close_window(window) -> None:
    """Close as a user would; no training thread may outlive the window."""
    window.close()
    training = window.training_tab.training
    if training is not None:
        assert not training.thread.isRunning()


def saved_model(bundle, tmp_path, name="model.safetensors"):
    path = tmp_path / name
    checkpoint.save(bundle, path)
    return path


def shut(window) -> None:
    """Close a window for good, even after a failed test: stop (and join) its training, close it,
    let Qt deliver what is pending, and delete it."""
    from PySide6.QtWidgets import QApplication

    if getattr(window, "built", False) and window.is_training():
        window.training_tab.stop(keep=False)  # cancel and join the training thread
    window.close()
    QApplication.processEvents()
    window.deleteLater()
    QApplication.processEvents()
