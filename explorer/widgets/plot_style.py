"""The look the line plots share (training curves, positional-encoding curves): a light grid that is
cheap to redraw.

pyqtgraph draws a plot's grid with its axes. With every tick level and no cache, repainting the
four training plots took about 90 ms, long enough to stall the window on each training update;
with two tick levels and the axes cached as pixmaps it takes about 6 ms.
"""

from __future__ import annotations

import pyqtgraph as pg


def show_light_grid(plot: pg.PlotItem | pg.PlotWidget, alpha: float = 0.25) -> None:
    plot.showGrid(x=True, y=True, alpha=alpha)
    for side in ("left", "bottom"):
        axis = plot.getAxis(side)
        axis.setStyle(maxTickLevel=1)
        axis.setCacheMode(axis.CacheMode.DeviceCoordinateCache)
