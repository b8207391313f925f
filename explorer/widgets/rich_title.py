"""A plot title in rich text (its coloured ● and ■ name the lines and squares) that wraps to the width its plot has
and asks for none: pyqtgraph's title (a LabelItem) asks for its whole text's width, so on a narrow window the curves
over training were wider than their view and cut at the right with nothing saying so (issue 39).

``fit_title(plot)`` puts one in place of a PlotItem's title; ``PlotItem.setTitle`` sets its text as before. Its row
of the plot's layout is as high as its lines (the explorer/widgets/heatmap_title.py way, for plain text).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QSizeF, Qt
from PySide6.QtGui import QTextOption

NO_WIDTH_YET = 10_000.0  # before it is laid out: one line per paragraph


class RichTitle(pg.LabelItem):
    """A LabelItem that wraps its text at word boundaries to its own width (its lines centred)."""

    def __init__(self, plot: pg.PlotItem, size: str = "9pt") -> None:
        self.plot = plot
        self._fitted = (-1.0, -1.0)  # (width, height) last fitted: refit only when one changes
        super().__init__(" ", parent=plot, size=size)
        option = QTextOption(Qt.AlignmentFlag.AlignHCenter)
        option.setWrapMode(QTextOption.WrapMode.WordWrap)
        self.item.document().setDefaultTextOption(option)

    def setText(self, text, **args) -> None:  # noqa: N802 - LabelItem's name
        self._fitted = (-1.0, -1.0)
        super().setText(text, **args)
        self.setToolTip(self.item.toPlainText() if self.item.toPlainText().strip() else "")

    def resizeEvent(self, ev) -> None:  # noqa: N802 - Qt's name
        self.updateMin()

    def updateMin(self) -> None:  # noqa: N802 - LabelItem's name: its minimum is no width, the height of its lines
        if not hasattr(self, "plot") or not self.isVisibleTo(self.plot):  # not built yet, or hidden (PlotItem.setTitle(None))
            return
        width = self.size().width()
        self.item.setTextWidth(width if width > 1 else NO_WIDTH_YET)
        self.item.setPos(0, 0)
        height = float(self.item.boundingRect().height()) if self.item.toPlainText().strip() else 0.0
        if (width, height) == self._fitted:
            return
        self._fitted = (width, height)
        self._sizeHint = {
            Qt.SizeHint.MinimumSize: (0.0, height),
            Qt.SizeHint.PreferredSize: (0.0, height),
            Qt.SizeHint.MaximumSize: (-1.0, -1.0),
            Qt.SizeHint.MinimumDescent: (0.0, 0.0),
        }
        self.setMinimumSize(QSizeF(0.0, height))
        self.setMaximumHeight(height)
        self.plot.layout.setRowFixedHeight(0, height)
        self.updateGeometry()


def fit_title(plot: pg.PlotItem, size: str = "9pt") -> RichTitle:
    """Put a RichTitle in place of ``plot``'s title (its text kept)."""
    old = plot.titleLabel
    plot.layout.removeItem(old)
    old.hide()
    old.setParentItem(None)
    title = RichTitle(plot, size)
    plot.titleLabel = title
    plot.layout.addItem(title, 0, 1)
    return title
