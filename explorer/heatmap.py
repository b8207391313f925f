"""The focus heatmap: one attention matrix large, tokens as axis labels, a colour bar, a tooltip with
query, key and weight under the cursor, and the current step's row outlined.

Built from pyqtgraph's ImageItem, AxisItem ticks and ColorBarItem (rows are queries, columns keys).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QGraphicsRectItem, QToolTip

COLORMAPS = ("viridis", "magma", "inferno", "plasma", "cividis")  # perceptually uniform


def colormap(name: str) -> pg.ColorMap:
    return pg.colormap.get(name if name in COLORMAPS else "viridis")


def token_ticks(labels: list[str], limit: int = 120) -> list[tuple[float, str]]:
    """Ticks at cell centres; past ``limit`` tokens every n-th is labelled so the text stays readable."""
    every = max(1, int(np.ceil(len(labels) / max(limit, 1))))
    return [(index + 0.5, label) for index, label in enumerate(labels) if index % every == 0]


class HeatmapView(pg.GraphicsLayoutWidget):
    def __init__(self, colormap_name: str = "viridis", value_label: str = "attention weight"):
        super().__init__()
        self.setToolTip("")
        self.values = np.zeros((0, 0), np.float32)
        self.query_labels: list[str] = []
        self.key_labels: list[str] = []
        self.highlighted_row: int | None = None
        self.plot = self.addPlot(row=0, col=0)
        self.plot.setMenuEnabled(False)
        self.plot.invertY(True)
        self.plot.setAspectLocked(False)
        self.plot.showAxis("top")
        self.plot.getAxis("left").setLabel("query")
        self.plot.getAxis("top").setLabel("key")
        self.plot.hideAxis("bottom")
        for side in ("left", "top"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.color_bar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(colormap_name), interactive=False,
                                         label=value_label)
        self.color_bar.setImageItem(self.image)
        self.addItem(self.color_bar, row=0, col=1)
        self.outline = QGraphicsRectItem()
        self.outline.setPen(pg.mkPen("#ff2d55", width=3, cosmetic=True))
        self.outline.setZValue(10)
        self.outline.hide()
        self.plot.addItem(self.outline)
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    def set_matrix(self, values: np.ndarray, query_labels: list[str], key_labels: list[str], title: str = "",
                   highlighted_row: int | None = None, levels: tuple[float, float] = (0.0, 1.0)) -> None:
        self.values = np.asarray(values, dtype=np.float32)
        self.query_labels, self.key_labels = list(query_labels), list(key_labels)
        n_queries, n_keys = self.values.shape if self.values.ndim == 2 else (0, 0)
        if n_queries and n_keys:
            self.image.setImage(self.values, autoLevels=False, levels=levels)
            self.image.setRect(QRectF(0, 0, n_keys, n_queries))
            self.image.show()
        else:
            self.image.hide()
        self.color_bar.setLevels(levels)
        self._set_ticks()
        self.plot.setTitle(title)
        self.plot.setRange(xRange=(0, max(n_keys, 1)), yRange=(0, max(n_queries, 1)), padding=0.01)
        self.set_highlighted_row(highlighted_row)

    def _set_ticks(self) -> None:
        """Token labels, as many as fit (about 14 px a row, 9 px a character across)."""
        rows_fit = max(4, self.plot.vb.height() / 14) if self.plot.vb.height() > 0 else 60
        widest = max((len(label) for label in self.key_labels), default=1)
        columns_fit = max(4, self.plot.vb.width() / (9 * min(widest, 12) + 6)) if self.plot.vb.width() > 0 else 40
        self.plot.getAxis("left").setTicks([token_ticks(self.query_labels, int(rows_fit)), []])
        self.plot.getAxis("top").setTicks([token_ticks(self.key_labels, int(columns_fit)), []])

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if hasattr(self, "plot"):
            self._set_ticks()

    def set_highlighted_row(self, row: int | None) -> None:
        n_queries, n_keys = self.values.shape if self.values.ndim == 2 else (0, 0)
        self.highlighted_row = row if row is not None and 0 <= row < n_queries else None
        if self.highlighted_row is None:
            self.outline.hide()
            return
        self.outline.setRect(QRectF(0, self.highlighted_row, n_keys, 1))
        self.outline.show()

    def set_colormap(self, name: str) -> None:
        self.color_bar.setColorMap(colormap(name))

    def cell_at(self, scene_position: QPointF) -> tuple[int, int] | None:
        """(query, key) under a scene position, or None outside the matrix."""
        if not self.plot.sceneBoundingRect().contains(scene_position) or self.values.size == 0:
            return None
        point = self.plot.vb.mapSceneToView(scene_position)
        query, key = int(np.floor(point.y())), int(np.floor(point.x()))
        if 0 <= query < self.values.shape[0] and 0 <= key < self.values.shape[1]:
            return query, key
        return None

    def describe_cell(self, query: int, key: int) -> str:
        return (f"query {self.query_labels[query]!r} (#{query + 1}) → key {self.key_labels[key]!r} (#{key + 1}): "
                f"{self.values[query, key]:.4f}")

    def _on_mouse_moved(self, scene_position) -> None:
        cell = self.cell_at(scene_position)
        text = self.describe_cell(*cell) if cell else ""
        self.setToolTip(text)
        if text:
            QToolTip.showText(self.mapToGlobal(self.mapFromScene(scene_position)), text, self)
        else:
            QToolTip.hideText()
