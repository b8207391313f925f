"""A progress bar leaving busy mode at its minimum stops the style's busy animation (Fusion kept repainting it, and
every widget behind it, 60 times a second until the first chunk of progress: a fifth of the Train tab's speed beside
niced jobs)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QProgressBar

from explorer.widgets.progress_bar import show_busy, show_counted


class PaintCounter(QObject):
    """Counts the paint events of one widget."""

    def __init__(self, widget: QProgressBar) -> None:
        super().__init__()
        self.widget, self.paints = widget, 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.widget and event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def paints_after_busy(qtbot, leave, enough: int | None = None) -> int:
    """Paints of a shown bar in the half second after it left busy mode through ``leave(bar)`` (with ``enough``: until
    more than that many came, or 5 s: a busy machine delivers a running animation's frames late, not never)."""
    bar = QProgressBar()
    qtbot.addWidget(bar)
    bar.show()
    qtbot.waitExposed(bar)
    show_busy(bar)
    qtbot.wait(200)  # the busy animation runs
    leave(bar)
    qtbot.wait(100)
    counter = PaintCounter(bar)
    QApplication.instance().installEventFilter(counter)
    try:
        if enough is None:
            qtbot.wait(500)
        else:
            qtbot.waitUntil(lambda: counter.paints > enough, timeout=5000)
    finally:
        QApplication.instance().removeEventFilter(counter)
    return counter.paints


def test_leaving_busy_mode_at_zero_stops_the_animation(qtbot):
    assert paints_after_busy(qtbot, lambda bar: show_counted(bar, 0, 1000)) <= 2


def test_the_plain_switch_kept_animating(qtbot):
    """What the helper works around (if Qt fixes it, this fails and the helper's repaint can go)."""

    def plain(bar: QProgressBar) -> None:
        bar.setRange(0, 1000)
        bar.setValue(0)

    assert QApplication.instance().style().name().lower() == "fusion"  # the style measured (Qt's default here)
    assert paints_after_busy(qtbot, plain, enough=10) > 10


def test_counted_values_are_clamped(qtbot):
    bar = QProgressBar()
    qtbot.addWidget(bar)
    show_counted(bar, 7, 0)
    assert (bar.minimum(), bar.maximum(), bar.value()) == (0, 1, 1)
    show_counted(bar, -3, 10)
    assert bar.value() == 0
