"""A plot title that wraps to the width the plot has: up to ``MAX_LINES`` lines, the last one ended with "…" when
the text needs more, the whole text in its tooltip.

pyqtgraph's own title (a LabelItem) asks for the whole text's width as its minimum on every resize, so a long title
(integrated gradients' completeness gap, the source share, the snapshot) made the plot wider than its panel: the last
key columns, the colour bar and both ends of the title were cut off with nothing saying so. This one asks for no
width at all and takes the height its lines need.
"""

from __future__ import annotations

import html
import re

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QGuiApplication, QTextLayout, QTextOption
from PySide6.QtWidgets import QGraphicsGridLayout

MAX_LINES = 4
ELLIPSIS = "…"
PADDING = 2.0  # px above and below the lines


def plain_lines(text: str) -> list[str]:
    """The title's lines as read: "<br>" breaks a line, other tags are dropped, entities read as characters."""
    parts = re.split(r"<br\s*/?>|\n", text or "")
    return [html.unescape(re.sub(r"<[^>]+>", "", part)).strip() for part in parts]


def wrap_lines(paragraphs: list[str], font: QFont, width: float, max_lines: int = MAX_LINES) -> tuple[list[str], bool]:
    """(lines, elided): ``paragraphs`` broken at word boundaries (anywhere in a word longer than ``width``) into
    lines at most ``width`` px wide; past ``max_lines`` the last line ends with "…"."""
    metrics = QFontMetricsF(font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    lines: list[str] = []
    for paragraph in paragraphs:
        if not paragraph:
            continue
        layout = QTextLayout(paragraph, font)
        layout.setTextOption(option)
        layout.beginLayout()
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(max(width, 1.0))
            lines.append(paragraph[line.textStart() : line.textStart() + line.textLength()].strip())
        layout.endLayout()
    if len(lines) <= max_lines:
        return lines, False
    rest = " ".join(lines[max_lines - 1 :])
    last = metrics.elidedText(rest, Qt.TextElideMode.ElideRight, max(width, 1.0))
    return [*lines[: max_lines - 1], last if last.endswith(ELLIPSIS) else last + ELLIPSIS], True


class WrappedTitle(pg.GraphicsWidget):
    """The title row of a PlotItem (``layout``'s row 0): ``text`` holds the whole title, ``lines`` what is drawn."""

    def __init__(self, layout: QGraphicsGridLayout, max_lines: int = MAX_LINES) -> None:
        super().__init__()
        self.plot_layout, self.max_lines = layout, max_lines
        self.text = ""
        self.lines: list[str] = []
        self.elided = False
        self.font = QFont(QGuiApplication.font())
        self.setMinimumWidth(0)
        self.setPreferredWidth(0)  # the plot's width never comes from its title
        self._height = -1.0

    def setText(self, text: str, **_style) -> None:  # noqa: N802 - LabelItem's name (PlotItem.setTitle calls it)
        self.text = text or ""
        self.setToolTip(self.full_text())
        self._wrap()

    def full_text(self) -> str:
        return "\n".join(line for line in plain_lines(self.text) if line)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._wrap()

    def _wrap(self) -> None:
        width = self.size().width()
        if width > 0:
            self.lines, self.elided = wrap_lines(plain_lines(self.text), self.font, width, self.max_lines)
        else:  # not laid out yet: one line per paragraph until the width is known
            self.lines, self.elided = [line for line in plain_lines(self.text) if line], False
        line_height = QFontMetricsF(self.font).height()
        height = round(len(self.lines) * line_height + 2 * PADDING) if self.lines else 0.0
        if height != self._height:
            self._height = height
            self.setMinimumHeight(height)
            self.setMaximumHeight(height)
            self.plot_layout.setRowFixedHeight(0, height)
        self.update()

    def paint(self, painter, *_args) -> None:
        painter.setFont(self.font)
        painter.setPen(pg.mkPen(pg.getConfigOption("foreground")))
        line_height = QFontMetricsF(self.font).height()
        width = self.size().width()
        for index, line in enumerate(self.lines):
            rect = QRectF(0, PADDING + index * line_height, width, line_height)
            painter.drawText(rect, int(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter), line)
