"""The look the line plots share (training curves, positional-encoding curves): a light grid that is
cheap to redraw.

pyqtgraph draws a plot's grid with its axes. With every tick level and no cache, repainting the
four training plots took about 90 ms, long enough to stall the window on each training update;
with two tick levels and the axes cached as pixmaps it takes about 6 ms.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QGraphicsLayoutItem


def show_light_grid(plot: pg.PlotItem | pg.PlotWidget, alpha: float = 0.25) -> None:
    plot.showGrid(x=True, y=True, alpha=alpha)
    for side in ("left", "bottom"):
        axis = plot.getAxis(side)
        axis.setStyle(maxTickLevel=1)
        axis.setCacheMode(axis.CacheMode.DeviceCoordinateCache)


def items_minimum(view: pg.GraphicsView, item: QGraphicsLayoutItem) -> QSize:
    """The size ``view`` needs to show ``item`` (its plots) whole at their layout's minimum, the frame included. A
    graphics view does not pass its items' minimum on to Qt's layouts, and a splitter or grid that gave it less cut
    the plots at its edges with no scroll bar (issue 39)."""
    hint = item.effectiveSizeHint(Qt.SizeHint.MinimumSize)
    frame = 2 * view.frameWidth()
    return QSize(math.ceil(hint.width()) + frame, math.ceil(hint.height()) + frame)
