"""A wrapping line of status text that changes often (the progress of a training run, five times a second).

A QLabel asks its layout for a new geometry on every ``setText``; the request climbs to the window through every
ancestor, and a QSplitter on the way repaints all it holds. While training, the Train tab's progress line made the
whole tab (its curves, samples table and buttons) repaint four times a second: Python on the window's thread that
took the interpreter lock from the training thread and, beside niced background jobs, cost training a tenth of its
speed (benchmarks/train_under_load.py). A ``StatusLine`` repaints only itself, and asks for a new layout only when its
wrapped height changes. Its width is what the layout gives it, so a long text never widens the window; its context
menu copies the text.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QAction, QGuiApplication, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

WRAPPED = Qt.TextFlag.TextWordWrap | Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
TALLEST = 100_000  # px: the height the wrapped text is measured in


class StatusLine(QWidget):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = text
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.setMinimumWidth(1)
        copy = QAction("Copy", self)
        copy.triggered.connect(lambda: QGuiApplication.clipboard().setText(self._text))
        self.addAction(copy)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 - QLabel's name, which this replaces
        """Show ``text``: a repaint of this line, and a new layout only when the wrapped text's height changes."""
        if text == self._text:
            return
        height = self.heightForWidth(self.width())
        self._text = text
        if self.heightForWidth(self.width()) != height:
            self.updateGeometry()
        self.update()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt's name
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt's name
        margins = self.contentsMargins()
        room = QRect(0, 0, max(width - margins.left() - margins.right(), 1), TALLEST)
        lines = self.fontMetrics().boundingRect(room, int(WRAPPED), self._text or " ")
        return lines.height() + margins.top() + margins.bottom()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        width = self.fontMetrics().horizontalAdvance(self._text)
        return QSize(width, self.heightForWidth(max(self.width(), 1) if self.isVisible() else max(width, 1)))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(1, self.fontMetrics().height())

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(WRAPPED), self._text)
