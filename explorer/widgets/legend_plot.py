"""A line plot with its legend in a line of its own below the plot area, where it covers no curve (the
positional-encoding tab's curves)."""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from explorer.widgets.plot_style import show_light_grid


class LegendPlot(QWidget):
    """A line plot with its legend in a line of its own below the plot area, where it covers no curve.
    Curves given a ``name`` are listed in the legend, in their colour and line style."""

    def __init__(self, title: str, bottom_label: str):
        super().__init__()
        self.plot_widget = pg.PlotWidget(title=title, enableMenu=False)
        self.plot_item = self.plot_widget.getPlotItem()
        self.plot_item.setLabel("bottom", bottom_label)
        show_light_grid(self.plot_item)
        self.entries: list[tuple[str, str, bool]] = []  # (name, colour, dashed)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.legend.setToolTip("What each curve is")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.legend)

    def getPlotItem(self) -> pg.PlotItem:  # noqa: N802 - the name PlotWidget uses
        return self.plot_item

    def plot(self, *args, name: str | None = None, **kwargs) -> pg.PlotDataItem:
        item = self.plot_item.plot(*args, name=name, **kwargs)
        if name is not None:
            pen = pg.mkPen(kwargs.get("pen"))
            self.entries.append((name, pen.color().name(), pen.style() != Qt.PenStyle.SolidLine))
            self._show_legend()
        return item

    def clear(self) -> None:
        self.plot_item.clear()
        self.entries = []
        self._show_legend()

    def legend_names(self) -> list[str]:
        return [name for name, _colour, _dashed in self.entries]

    def _show_legend(self) -> None:
        self.legend.setText(
            "&nbsp;&nbsp; ".join(
                f'<span style="color:{colour}; font-weight:bold">{"╍╍" if dashed else "━━"}</span>&nbsp;{html.escape(name)}'
                for name, colour, dashed in self.entries
            )
        )
        self.legend.setVisible(bool(self.entries))
