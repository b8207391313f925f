"""A one-line label that ends with "…" when its text is wider than the room its row leaves it, the whole text in its
tooltip (issue 39: the timeline bar's snapshot line was cut mid-word at 1300 px, with nothing saying more was there).

It asks for its whole text's width (its size hint) but needs only a few characters (its minimum), so a long text
never widens the window; it elides once laid out and again on every resize, and shows the whole text again once there is room.
``text()`` is what is shown, ``full_text`` the whole.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

MINIMUM_CHARACTERS = "Snapsh…"  # the least it shows: the start of its text and the ellipsis


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.full_text = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        """Show ``text`` whole until the row has made room for it (or not): elided once laid out."""
        self.full_text = text or ""
        super().setText(self.full_text)
        self.updateGeometry()  # the size hint follows the whole text
        QTimer.singleShot(0, self, self._elide)  # after the layout pass (a resize elides as well)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self.full_text) + margins.left() + margins.right() + 2 * self.margin()
        return QSize(width, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(MINIMUM_CHARACTERS) + margins.left() + margins.right()
        return QSize(width, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt's name: a style sheet's font changes the width needed
        super().changeEvent(event)
        if event.type() in (event.Type.FontChange, event.Type.StyleChange):
            self._elide()

    def _elide(self) -> None:
        room = self.contentsRect().width() - 2 * self.margin()
        shown = self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideRight, max(room, 0))
        if shown != super().text():
            super().setText(shown)
