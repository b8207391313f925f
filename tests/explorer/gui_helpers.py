"""Helpers for the GUI tests: the main window as every GUI test opens it, and the closing that always follows.

Tests never call ``new_window`` themselves: they ask for the ``open_window`` (or ``window``) fixture of
tests/explorer/conftest.py, which opens windows with it and shuts each one after the test whatever
happened (passed, failed or raised), so no window, training thread or task outlives its test.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QCoreApplication, QEvent, QSettings, QThreadPool
from PySide6.QtWidgets import QApplication, QMessageBox

TASKS_TIMEOUT_S = 60  # a load or a corpus preview still running when the test ends gets this long to report


def new_window(qtbot, tmp_path, bundle=None, build: bool = True):
    """A main window with its own settings file (tmp_path/settings.ini), 1300x850, shown; the questions asked
    on closing are answered (stop the training, discard an unsaved model); ``bundle`` opened when given.
    ``build=False`` shows the frame only, as the app does at start-up (the tabs come with ``build()``)."""
    from explorer.app import make_application
    from explorer.main_window import MainWindow

    make_application()
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    window = MainWindow(settings, build=build)
    window.ask_to_stop_training = lambda: QMessageBox.Yes
    window.ask_to_keep_trained_model = lambda *_args: QMessageBox.Discard  # tests that care replace it again
    window.resize(1300, 850)
    qtbot.addWidget(window)
    window.show()
    if bundle is not None:
        window.session.set_model(bundle)
    return window


def explore_window(open_window, bundle, sentence: str):
    """A window (from the ``open_window`` fixture) with ``bundle`` open and ``sentence`` typed into the Explore
    tab and translated (Enter)."""
    window = open_window(bundle)
    tab = window.explore_tab
    tab.controls.source.setText(sentence)
    tab.controls.source.returnPressed.emit()
    return window, tab


def close_window(window) -> None:
    """Close as a user would, in the middle of a test (what closing saves is checked after it); no training
    thread may outlive the window. The fixture that opened the window still deletes it after the test."""
    window.close()
    training = window.training_tab.training
    if training is not None:
        assert not training.thread.isRunning()


def _training(window):
    """The window's training run (running or ended), or None; asks nothing that would build the Train tab."""
    from explorer.main_window import TRAIN_TAB

    if not getattr(window, "built", False) or TRAIN_TAB not in window._built_tabs:
        return None
    return window.training_tab.training


def _wait_for_tasks(window) -> bool:
    """Let the window's model loads (daemon threads) and the pool's tasks (corpus previews, timing probes,
    Export all) finish and deliver their results while the window still exists; True when they all did."""
    deadline = time.monotonic() + TASKS_TIMEOUT_S
    while getattr(window, "_tasks", None) and time.monotonic() < deadline:
        QApplication.processEvents()
        time.sleep(0.01)
    pool_done = QThreadPool.globalInstance().waitForDone(max(1, int(1000 * (deadline - time.monotonic()))))
    QApplication.processEvents()
    return pool_done and not getattr(window, "_tasks", None)


def shut(window) -> list[str]:
    """Close a window for good, even after a failed test: stop (and join) its training, close it, wait for
    its tasks, let Qt deliver what is pending, and delete it. Returns what went wrong (nothing, normally):
    the fixture reports it after every window is shut."""
    import shiboken6

    if not shiboken6.isValid(window):  # deleted already
        return []
    problems = []
    try:
        training = _training(window)
        if training is not None and training.is_running():
            window.training_tab.stop(keep=False)  # cancel and join the training thread
        window.close()  # closed already (by the test, or by pytest-qt just before): nothing happens
        QApplication.processEvents()
        if not _wait_for_tasks(window):
            problems.append(f"a task of the window was still running {TASKS_TIMEOUT_S} s after the test")
        if training is not None and training.thread.isRunning():
            problems.append("the training thread outlived its window")
    except Exception as error:  # noqa: BLE001 - reported by the fixture; the window is deleted all the same
        problems.append(f"closing the window raised {type(error).__name__}: {error}")
    finally:
        window.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # processEvents alone leaves it
        QApplication.processEvents()
    return problems
