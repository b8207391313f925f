"""The plots of the curves over training (explorer/widgets/timeline_curves_view.py), on one axis of training steps
drawn on a log scale: x = log10(1 + step), so that step 0 (the initial weights) has a place and the dense early
snapshots spread out. ``StepAxis`` numbers it in steps (0, 1, 10, 100, 1k, ...).

Each head is a line, its colour the head's and its dash the layer's, as in the core's curve figure
(model/timeline/curve_files.py); roles are squares coloured by role, one row per head.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QFont, QFontMetrics

from explorer.widgets.lines_view import head_colour
from explorer.widgets.plot_style import items_minimum, show_light_grid
from explorer.widgets.rich_title import fit_title

LAYER_STYLES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
ROLE_COLOURS = {  # the first word of a role (model/inspection/heads.py) -> its colour
    "alignment-like": "#2ca02c",
    "focused": "#1f77b4",
    "diffuse": "#9ecae9",
    "broad": "#c7c7c7",
    "mixed": "#bcbd22",
    "sink": "#d62728",
    "positional": "#9467bd",
    "first": "#ff7f0e",
    "last": "#8c564b",
    "empty": "#ffffff",
}
CHANGE_BRUSH = (238, 202, 59, 60)  # a phase change's stretch of training, shaded
CHANGE_COLOUR = "#e6c43a"  # that shade as the legend names it (opaque: the band is this over white)
MARKED_CHANGES = 5  # phase changes shaded on the plots (the list holds all of them)
MIN_PLOT_PX = 48  # the least height a plot's curves get: a lower pane scrolls (they were squashed to a line, issue 39)
ROW_FONT_PX = (6, 10)  # the roles' head labels: the smallest and largest font (pixels), fitted to a row's height


def log_step(steps: np.ndarray | list[int] | int) -> np.ndarray:
    """x of training steps: log10(1 + step)."""
    return np.log10(1.0 + np.maximum(np.asarray(steps, dtype=np.float64), 0.0))


def step_label(step: float) -> str:
    """'0', '5', '20', '1k', '20k', '1M'."""
    step = round(step)
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if step >= size and step % size == 0:
            return f"{step // size}{suffix}"
    return f"{step:,}"


def role_group(role: str) -> str:
    """The role's colour key: its first word ("sink on </s>" -> "sink")."""
    first = role.split()[0] if role.split() else "empty"
    return first if first in ROLE_COLOURS else "mixed"


class StepAxis(pg.AxisItem):
    """A bottom axis over log10(1 + step), numbered in steps at 1, 2 and 5 × 10^k (thinned to fit)."""

    def tickValues(self, minVal: float, maxVal: float, size: float):  # noqa: N802, N803 - pyqtgraph's names
        top = 10 ** max(maxVal, 0.0) - 1
        marks = [0.0] + [m * 10.0**k for k in range(int(math.log10(max(top, 1))) + 2) for m in (1, 2, 5)]
        inside = [m for m in marks if minVal - 1e-9 <= math.log10(1 + m) <= maxVal + 1e-9]
        room = max(int(size / 45), 2)  # a label needs about 45 px
        major = [m for m in inside if m == 0 or str(int(m))[0] == "1"]
        chosen = inside if len(inside) <= room else major[:: max(1, math.ceil(len(major) / room))]
        return [(1.0, [math.log10(1 + m) for m in chosen])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph's name
        return [step_label(10**value - 1) for value in values]


class CurvesLayoutWidget(pg.GraphicsLayoutWidget):
    """The plots' view, asking Qt's layout for the room its plots need (axes, titles' lines, a few pixels of curve):
    in a scroll area, a pane smaller than that scrolls, where pyqtgraph's view cut the plots at its edges."""

    def fit_minimum(self) -> None:
        """Ask for the plots' minimum size now (after a draw, and each resize: the titles' lines follow the width)."""
        self.ci.layout.activate()
        wanted = items_minimum(self, self.ci) if self.ci.layout.count() else QSize(0, 0)
        if wanted != self.minimumSize():
            self.setMinimumSize(wanted)
        self.setRange(self.range, padding=0, disableAutoPixel=False)  # the plots fitted to the view as it is now

    def resizeEvent(self, ev) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(ev)
        QTimer.singleShot(0, self, self.fit_minimum)  # once the plots are laid out at the new size


def step_plot(layout: pg.GraphicsLayout, row: int, column: int, title: str, y_label: str, rowspan: int = 1) -> pg.PlotItem:
    """A plot of the layout over the log step axis, light grid, no mouse menu; its title wraps to its width."""
    plot = layout.addPlot(row=row, col=column, rowspan=rowspan, axisItems={"bottom": StepAxis("bottom")}, enableMenu=False)
    fit_title(plot)
    plot.vb.setMinimumHeight(MIN_PLOT_PX * rowspan)
    plot.setTitle(title, size="9pt")
    plot.setLabel("left", y_label)
    plot.setMouseEnabled(x=False, y=False)
    plot.hideButtons()
    show_light_grid(plot)
    return plot


def head_lines(plot: pg.PlotItem, x: np.ndarray, values: np.ndarray) -> None:
    """One line per head of [N, layers, heads] (NaN gaps left open)."""
    for layer in range(values.shape[1]):
        for head in range(values.shape[2]):
            pen = pg.mkPen(head_colour(head), width=1.6, style=LAYER_STYLES[layer % len(LAYER_STYLES)])
            plot.plot(
                x,
                values[:, layer, head],
                pen=pen,
                symbol="o",
                symbolSize=4,
                symbolBrush=head_colour(head),
                symbolPen=None,
                connect="finite",
            )


def head_legend(n_layers: int, n_heads: int, n_marked: int = 0) -> str:
    """Which colour is which head and which dash which layer, and (``n_marked`` phase changes shaded) what the shaded
    bands and the dashed line are, as rich text."""
    dashes = ("━━", "╍╍", "┅┅", "━╍")
    heads = " ".join(f'<span style="color:{head_colour(h)}">■</span> {h + 1}' for h in range(n_heads))
    layers = " ".join(f"{dashes[layer % len(dashes)]} {layer + 1}" for layer in range(n_layers))
    bands = (
        f'; <span style="color:{CHANGE_COLOUR}">█</span> shaded: the {n_marked} largest phase changes (numbered by rank '
        "on the AER plot; the list on the right)"
        if n_marked
        else ""
    )
    return f"Lines: colour = head ({heads}); line = layer ({layers}){bands}; ┆ dashed: the snapshot explored"


def role_squares(plot: pg.PlotItem, x: np.ndarray, roles: np.ndarray) -> list[str]:
    """Roles [N, layers, heads] as squares, one row per head (layer 1 head 1 at the top), each named on the left and
    on hover (its head, snapshot step and role); the role groups shown."""
    n_layers, n_heads = roles.shape[1:]
    spots, seen = [], []
    for layer in range(n_layers):
        for head in range(n_heads):
            row = layer * n_heads + head
            for n, role in enumerate(roles[:, layer, head]):
                group = role_group(str(role))
                seen += [group] if group not in seen else []
                step = step_label(10 ** float(x[n]) - 1)
                spots.append(
                    {"pos": (x[n], -row), "brush": ROLE_COLOURS[group], "data": f"L{layer + 1}H{head + 1}, step {step}: {role}"}
                )
    squares = pg.ScatterPlotItem(
        spots=spots, symbol="s", size=9, pen=pg.mkPen("#555", width=0.5), hoverable=True, tip=lambda x, y, data: data
    )
    plot.addItem(squares)
    plot.setYRange(-(n_layers * n_heads - 0.5), 0.5, padding=0)
    plot.vb.sigResized.connect(lambda _box: fit_role_rows(plot, squares, n_layers, n_heads))
    fit_role_rows(plot, squares, n_layers, n_heads)
    return seen


def row_labels(n_layers: int, n_heads: int, row_px: float) -> tuple[list[tuple[float, str]], int]:
    """(the left axis' labels of the roles' rows, their font size in pixels): every head ("L2H3") in a font that fits
    a row of ``row_px`` pixels; rows lower than the smallest font: each layer once, at the middle of its heads."""
    smallest, largest = ROW_FONT_PX
    if row_px >= smallest:
        labels = [
            (-float(layer * n_heads + head), f"L{layer + 1}H{head + 1}") for layer in range(n_layers) for head in range(n_heads)
        ]
        return labels, int(min(max(row_px - 1, smallest), largest))
    return [(-(layer * n_heads + (n_heads - 1) / 2), f"L{layer + 1}") for layer in range(n_layers)], smallest


def fit_role_rows(plot: pg.PlotItem, squares: pg.ScatterPlotItem, n_layers: int, n_heads: int) -> None:
    """Label the rows and size the squares for the plot's height now (called again whenever it is resized)."""
    row_px = plot.vb.height() / max(n_layers * n_heads, 1)
    labels, size = row_labels(n_layers, n_heads, row_px)
    axis = plot.getAxis("left")
    font = QFont()
    font.setPixelSize(size)
    axis.setTickFont(font)
    axis.setTicks([labels])  # one level: pyqtgraph draws its labels all, where it drops a second level's first
    axis.setWidth(max(QFontMetrics(font).horizontalAdvance(text) for _, text in labels) + 10)  # never clipped
    squares.setSize(float(min(max(row_px - 1, 3), 9)))


def role_legend(groups: list[str]) -> str:
    """The colours of the roles shown, as rich text for a title."""
    return " ".join(f'<span style="color:{ROLE_COLOURS[group]}">■</span> {group}' for group in groups)


def mark_changes(plot: pg.PlotItem, stretches: list[tuple[int, int, int]], label_y: float | None = None) -> None:
    """Shade each (rank, step before, step after) stretch; with ``label_y``, its rank at that height."""
    ranks: dict[tuple[int, int], list[str]] = {}
    for rank, before, after in stretches[:MARKED_CHANGES]:
        ranks.setdefault((before, after), []).append(str(rank))
    for (before, after), numbers in ranks.items():
        low, high = log_step([before, after])
        plot.addItem(pg.LinearRegionItem((low, high), movable=False, brush=CHANGE_BRUSH, pen=pg.mkPen(None)))
        if label_y is not None:
            label = pg.TextItem(", ".join(numbers), color="#8a6d00", anchor=(0.5, 0))
            label.setPos((low + high) / 2, label_y)
            plot.addItem(label, ignoreBounds=True)
