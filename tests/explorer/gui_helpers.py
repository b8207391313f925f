"""Helpers for the GUI tests: the main window as every GUI test opens it, and the closing that always follows.

Tests never call ``new_window`` themselves: they ask for the ``open_window`` (or ``window``) fixture of
tests/explorer/conftest.py, which opens windows with it and shuts each one after the test whatever
happened (passed, failed or raised), so no window, training run or other job outlives its test.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QSettings
from PySide6.QtWidgets import QApplication, QMessageBox

JOBS_TIMEOUT_S = 60  # a load or a corpus preview still running when the test ends gets this long to end


def new_window(qtbot, tmp_path, bundle=None, build: bool = True, settings=None):
    """A main window with its own settings file (tmp_path/settings.ini, or ``settings``: a QSettings or the app's
    SettingsValues), 1300x850, shown; the questions asked on closing are answered (stop the training, discard an
    unsaved model); ``bundle`` opened when given. ``build=False`` shows the frame only, as the app does at start-up
    (the tabs come with ``build()``)."""
    from explorer.app import make_application
    from explorer.main_window import MainWindow

    make_application()
    if settings is None:
        settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    window = MainWindow(settings, build=build)
    window.ask_to_stop_training = lambda: QMessageBox.Yes
    window.ask_to_keep_trained_model = lambda *_args: QMessageBox.Discard  # tests that care replace it again
    window.resize(1300, 850)
    qtbot.addWidget(window)
    window.show()
    if bundle is not None:
        window.explore.set_model(bundle)
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
    """Close as a user would, in the middle of a test (what closing saves is checked after it); no job (training
    included) may outlive the window. The fixture that opened the window still deletes it after the test."""
    window.close()
    assert window.runner.closed and not window.controllers.training.running
    assert window.runner.join(0), "a job outlived its window"


def shut(window) -> list[str]:
    """Close a window for good, even after a failed test: close it (training stopped, every job cancelled and
    joined), let Qt deliver what is pending (the runner drops it), and delete it. Returns what went wrong
    (nothing, normally): the fixture reports it after every window is shut."""
    import shiboken6

    if not shiboken6.isValid(window):  # deleted already
        return []
    problems = []
    try:
        window.close()  # closed already (by the test, or by pytest-qt just before): nothing happens
        if getattr(window, "built", False) and not window.close_controllers():
            problems.append(f"a job of the window was still running {JOBS_TIMEOUT_S} s after the test")
        QApplication.processEvents()
    except Exception as error:  # noqa: BLE001 - reported by the fixture; the window is deleted all the same
        problems.append(f"closing the window raised {type(error).__name__}: {error}")
    finally:
        window.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # processEvents alone leaves it
        QApplication.processEvents()
    return problems
