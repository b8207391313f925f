"""The model view: a grid of small heatmaps, one per layer (rows) and head (columns), for one kind of
attention at the current step, all on one colour scale. Clicking a cell focuses that head.

The whole grid is one mosaic image (cells separated by transparent gaps), so a step costs one
colour mapping and one paint however many layers and heads the model has.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Signal
from PySide6.QtWidgets import QGraphicsRectItem

from .heatmap import colormap

GAP = 0.12  # space between cells, as a share of a cell


class ModelGrid(pg.GraphicsLayoutWidget):
    cell_clicked = Signal(int, int)  # layer, head (0-based)

    def __init__(self, colormap_name: str = "viridis"):
        super().__init__()
        self.setToolTip("Every layer (rows) and head (columns) at the current step, on one colour scale; "
                        "click a cell to focus it")
        self.weights = np.zeros((0, 0, 0, 0), np.float32)  # [layers, heads, queries, keys] shown now
        self.levels = (0.0, 1.0)
        self.selected: tuple[int, int] | None = None
        self.plot = self.addPlot()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.invertY(True)
        self.plot.showAxis("top")
        self.plot.hideAxis("bottom")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setLookupTable(colormap(colormap_name).getLookupTable(nPts=256))
        self.plot.addItem(self.image)
        self.frames: list[QGraphicsRectItem] = []
        self._cell = (1.0, 1.0)  # a cell's size plus its gap, in mosaic pixels (rows, columns)
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def set_weights(self, weights: np.ndarray, levels: tuple[float, float] = (0.0, 1.0)) -> None:
        """weights [layers, heads, queries, keys] for one kind at the current step."""
        self.weights = np.asarray(weights, dtype=np.float32)
        self.levels = levels
        n_layers, n_heads, n_queries, n_keys = self.weights.shape
        gap_rows = max(1, int(round(GAP * n_queries)))
        gap_columns = max(1, int(round(GAP * n_keys)))
        step_rows, step_columns = n_queries + gap_rows, n_keys + gap_columns
        self._cell = (float(step_rows), float(step_columns))
        if n_queries == 0 or n_keys == 0:
            self.image.hide()
        else:
            mosaic = np.full((n_layers * step_rows - gap_rows, n_heads * step_columns - gap_columns), np.nan,
                             np.float32)  # NaN gaps draw transparent
            for layer in range(n_layers):
                row = layer * step_rows
                for head in range(n_heads):
                    column = head * step_columns
                    mosaic[row:row + n_queries, column:column + n_keys] = self.weights[layer, head]
            self.image.setImage(mosaic, autoLevels=False, levels=levels)
            self.image.setRect(QRectF(0, 0, mosaic.shape[1], mosaic.shape[0]))
            self.image.show()
        width = max(n_heads * step_columns - gap_columns, 1)
        height = max(n_layers * step_rows - gap_rows, 1)
        self.plot.getAxis("left").setTicks([[((layer + 0.5) * step_rows - gap_rows / 2, f"layer {layer + 1}")
                                             for layer in range(n_layers)], []])
        self.plot.getAxis("top").setTicks([[((head + 0.5) * step_columns - gap_columns / 2, f"head {head + 1}")
                                            for head in range(n_heads)], []])
        self.plot.setRange(xRange=(0, width), yRange=(0, height), padding=0.01)
        self._draw_selection()

    def set_colormap(self, name: str) -> None:
        self.image.setLookupTable(colormap(name).getLookupTable(nPts=256))

    def select(self, layer: int, head: int | None) -> None:
        """Frame the focused cell (head None: an aggregate is focused, the whole layer is framed)."""
        self.selected = (layer, head) if head is not None else (layer, -1)
        self._draw_selection()

    def _draw_selection(self) -> None:
        for frame in self.frames:
            self.plot.removeItem(frame)
        self.frames = []
        n_layers, n_heads, n_queries, n_keys = self.weights.shape
        if self.selected is None or not 0 <= self.selected[0] < n_layers:
            return
        layer, head = self.selected
        heads = range(n_heads) if head < 0 else [head] if head < n_heads else []
        step_rows, step_columns = self._cell
        for index in heads:
            frame = QGraphicsRectItem(QRectF(index * step_columns, layer * step_rows, n_keys, n_queries))
            frame.setPen(pg.mkPen("#ff2d55", width=3, cosmetic=True))
            frame.setZValue(10)
            self.plot.addItem(frame)
            self.frames.append(frame)

    def cell_at(self, scene_position) -> tuple[int, int] | None:
        if not self.plot.vb.sceneBoundingRect().contains(scene_position):
            return None
        point = self.plot.vb.mapSceneToView(scene_position)
        step_rows, step_columns = self._cell
        layer, head = int(point.y() // step_rows), int(point.x() // step_columns)
        n_layers, n_heads = self.weights.shape[:2]
        if 0 <= layer < n_layers and 0 <= head < n_heads:
            return layer, head
        return None

    def _on_clicked(self, event) -> None:
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.cell_clicked.emit(*cell)
