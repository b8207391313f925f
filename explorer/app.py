"""Start the desktop app: the QApplication, plot colours from the system palette, the main window,
and the first model (a path given on the command line, else the shipped ``default``)."""

from __future__ import annotations

import sys

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from explorer.runtime import apply_window_policies, end_process
from explorer.settings_values import open_settings
from model.io.shipped import shipped_models


def apply_palette_to_plots() -> None:
    """pyqtgraph draws its own backgrounds: take them from the light or dark system palette."""
    import pyqtgraph as pg  # deferred: the plots' library loads after the QApplication, as the window starts

    palette = QGuiApplication.palette()
    pg.setConfigOptions(
        antialias=True,
        imageAxisOrder="row-major",
        background=palette.color(QPalette.ColorRole.Base),
        foreground=palette.color(QPalette.ColorRole.Text),
    )


def leaks_none() -> bool:
    """Whether Qt calls that return nothing give up references to None they never took (explorer/runtime.py)."""
    colour = QColor(0, 0, 0)
    before = sys.getrefcount(None)
    for _ in range(100):
        colour.setAlphaF(0.5)
    return sys.getrefcount(None) < before - 50


def make_application(argv: list[str] | None = None) -> QApplication:
    apply_window_policies(leaks_none)  # logging, the None guard and the GIL hand-over (explorer/runtime.py)
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    assert isinstance(app, QApplication)
    QCoreApplication.setOrganizationName("TransformerExplorer")
    QCoreApplication.setApplicationName("Transformer Explorer")
    apply_palette_to_plots()
    return app


def open_first_model(window, path: str | None) -> None:
    """The model named on the command line, else the shipped default; without one, the window says
    how to get a model (status bar and the Explore tab)."""

    if path:
        window.open_model(path)
    elif "default" in shipped_models():
        window.open_model(str(shipped_models()["default"]))


def run_app(argv: list[str]) -> int:
    """``transformer-explorer [MODEL]``: open the window; returns the exit code once it has closed (or ends the
    process, where a job could not be joined: ``end_process``)."""
    app = make_application()
    from explorer.main_window import MainWindow  # deferred: after the QApplication and its policies

    # The frame shows now; the tabs load PyTorch next. Settings that cannot be read leave the defaults.
    window = MainWindow(open_settings(), build=False)
    window.show()

    def build():
        if window.closed_early:  # closed (or Ctrl+Q) before the tabs were built: the app just ends
            return
        window.build()
        open_first_model(window, argv[0] if argv else None)

    QTimer.singleShot(30, build)
    code = app.exec()
    if window.built:
        window.close_controllers()  # every job cancelled and joined (a training run stops within a step)
    return end_process(code)
