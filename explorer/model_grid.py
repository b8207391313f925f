"""The model view: a grid of small heatmaps, one per layer (rows) and head (columns), for one kind of
attention at the current step, all on one colour scale. Clicking a cell focuses that head.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Signal

from .heatmap import colormap


class ModelGrid(pg.GraphicsLayoutWidget):
    cell_clicked = Signal(int, int)  # layer, head (0-based)

    def __init__(self, colormap_name: str = "viridis"):
        super().__init__()
        self.setToolTip("Every layer (rows) and head (columns) at the current step, on one colour scale; "
                        "click a cell to focus it")
        self.weights = np.zeros((0, 0, 0, 0), np.float32)  # [layers, heads, queries, keys] shown now
        self.levels = (0.0, 1.0)
        self._colormap = colormap(colormap_name)
        self._cells: list[list[tuple[pg.ViewBox, pg.ImageItem]]] = []
        self.selected: tuple[int, int] | None = None
        self._frame = None
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def _build(self, n_layers: int, n_heads: int) -> None:
        self.clear()
        self._cells = []
        for head in range(n_heads):
            self.addLabel(f"head {head + 1}", row=0, col=head + 1, size="9pt")
        for layer in range(n_layers):
            self.addLabel(f"layer {layer + 1}", row=layer + 1, col=0, angle=-90, size="9pt")
            row = []
            for head in range(n_heads):
                view = self.addViewBox(row=layer + 1, col=head + 1, lockAspect=False, enableMouse=False,
                                       invertY=True)
                view.setMenuEnabled(False)
                image = pg.ImageItem(axisOrder="row-major")
                image.setLookupTable(self._colormap.getLookupTable(nPts=256))
                view.addItem(image)
                row.append((view, image))
            self._cells.append(row)
        self._frame = None

    def set_weights(self, weights: np.ndarray, levels: tuple[float, float] = (0.0, 1.0)) -> None:
        """weights [layers, heads, queries, keys] for one kind at the current step."""
        self.weights = np.asarray(weights, dtype=np.float32)
        self.levels = levels
        n_layers, n_heads, n_queries, n_keys = self.weights.shape
        if len(self._cells) != n_layers or (self._cells and len(self._cells[0]) != n_heads):
            self._build(n_layers, n_heads)
        for layer in range(n_layers):
            for head in range(n_heads):
                view, image = self._cells[layer][head]
                if n_queries and n_keys:
                    image.setImage(self.weights[layer, head], autoLevels=False, levels=levels)
                    image.setRect(QRectF(0, 0, n_keys, n_queries))
                    image.show()
                    view.setRange(xRange=(0, n_keys), yRange=(0, n_queries), padding=0)
                else:
                    image.hide()
        self._draw_selection()

    def set_colormap(self, name: str) -> None:
        self._colormap = colormap(name)
        for row in self._cells:
            for _, image in row:
                image.setLookupTable(self._colormap.getLookupTable(nPts=256))

    def select(self, layer: int, head: int | None) -> None:
        """Frame the focused cell (head None: an aggregate is focused, the whole layer is framed)."""
        self.selected = (layer, head) if head is not None else (layer, -1)
        self._draw_selection()

    def _draw_selection(self) -> None:
        for row in self._cells:
            for view, _ in row:
                view.setBorder(None)
        if self.selected is None or not self._cells:
            return
        layer, head = self.selected
        if not 0 <= layer < len(self._cells):
            return
        heads = range(len(self._cells[layer])) if head < 0 else [head] if head < len(self._cells[layer]) else []
        for index in heads:
            self._cells[layer][index][0].setBorder(pg.mkPen("#ff2d55", width=3))

    def cell_at(self, scene_position) -> tuple[int, int] | None:
        for layer, row in enumerate(self._cells):
            for head, (view, _) in enumerate(row):
                if view.sceneBoundingRect().contains(scene_position):
                    return layer, head
        return None

    def _on_clicked(self, event) -> None:
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.cell_clicked.emit(*cell)
