"""What the GUI tests measure of plots' text: every axis title (and plot title) of a widget's pyqtgraph plots, and
whether it has the room it needs (a rotated left or right title is as long as its axis is high at most, a top or bottom
one as its axis is wide; a plot's pyqtgraph title as wide as the plot: a title that wraps itself is left to its
own tests); and whether a combo box's items fit its text field."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QStyle, QStyleOptionComboBox


def _text_width(item) -> float:
    return QFontMetricsF(item.font()).horizontalAdvance(item.toPlainText())


def clipped_texts(widget) -> list[tuple[str, float, float]]:
    """(text, px it needs, px it has) of each visible axis title or plot title of ``widget``'s plots that does not fit."""
    clipped = []
    for view in widget.findChildren(pg.GraphicsView):
        if not view.isVisibleTo(widget):
            continue
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem) and item.isVisible() and item.label.isVisible() and item.label.toPlainText():
                vertical = item.orientation in ("left", "right")
                room = item.geometry().height() if vertical else item.geometry().width()
                needed = _text_width(item.label)
                if needed > room:
                    clipped.append((item.label.toPlainText(), needed, room))
            elif isinstance(item, pg.PlotItem) and isinstance(item.titleLabel, pg.LabelItem) and item.titleLabel.isVisible():
                needed, room = _text_width(item.titleLabel.item), item.geometry().width()
                if needed > room:
                    clipped.append((item.titleLabel.item.toPlainText(), needed, room))
    return clipped


def axis_texts(widget) -> list[str]:
    """The text of every visible axis title of ``widget``'s plots (the scale factor "(x0.001)" included)."""
    return [
        item.label.toPlainText()
        for view in widget.findChildren(pg.GraphicsView)
        for item in view.scene().items()
        if isinstance(item, pg.AxisItem) and item.isVisible() and item.label.isVisible()
    ]


def combo_room(box) -> tuple[float, float]:
    """(px the longest item of a combo box needs, px its text field has)."""
    option = QStyleOptionComboBox()
    box.initStyleOption(option)
    field = box.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, box)
    metrics = QFontMetricsF(box.font())
    needed = max((metrics.horizontalAdvance(box.itemText(index)) for index in range(box.count())), default=0.0)
    return needed, float(field.width())
