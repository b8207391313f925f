"""The lines view, in the style of the paper's attention figures: key tokens in one column, query
tokens in the other, one line per (query, key) whose opacity is the weight, coloured by head, with
each head switched on or off.

Lines are grouped by head and by opacity band into one path each, so hundreds of tokens stay fast.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QCheckBox, QGraphicsPathItem, QHBoxLayout, QLabel, QVBoxLayout, QWidget

HEAD_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d",
                "#ff9da6", "#bab0ac", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#17becf")
BANDS = 8  # opacity levels
MIN_WEIGHT = 0.05  # lighter lines are nearly invisible and are not drawn


def head_colour(head: int) -> str:
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


class LinesView(QWidget):
    heads_changed = Signal()

    def __init__(self):
        super().__init__()
        self.weights = np.zeros((0, 0, 0), np.float32)  # [heads, queries, keys] of one layer
        self.query_labels: list[str] = []
        self.key_labels: list[str] = []
        self.highlighted_row: int | None = None
        self.line_items: list[QGraphicsPathItem] = []
        self._labels: dict[str, tuple] = {}  # side -> (what was drawn, its TextItems)
        self.n_lines = 0
        self.head_boxes: list[QCheckBox] = []
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.invertY(True)
        self.plot.setMouseEnabled(x=False, y=True)
        self.plot.setToolTip("One line per query-key pair; darker = more attention. Scroll to zoom.")
        self.heads_row = QHBoxLayout()
        self.heads_row.addWidget(QLabel("Heads:"))
        self.heads_row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.heads_row)
        layout.addWidget(self.plot, 1)

    def _ensure_head_boxes(self, n_heads: int) -> None:
        if len(self.head_boxes) == n_heads:
            return
        for box in self.head_boxes:
            self.heads_row.removeWidget(box)
            box.deleteLater()
        self.head_boxes = []
        for head in range(n_heads):
            box = QCheckBox(f"{head + 1}")
            box.setChecked(True)
            box.setStyleSheet(f"QCheckBox {{ color: {head_colour(head)}; font-weight: bold; }}")
            box.setToolTip(f"Show head {head + 1}'s lines")
            box.toggled.connect(self._on_head_toggled)
            self.heads_row.insertWidget(self.heads_row.count() - 1, box)
            self.head_boxes.append(box)

    def visible_heads(self) -> list[int]:
        return [head for head, box in enumerate(self.head_boxes) if box.isChecked()]

    def set_heads_visible(self, heads: list[int]) -> None:
        for head, box in enumerate(self.head_boxes):
            box.blockSignals(True)
            box.setChecked(head in heads)
            box.blockSignals(False)
        self._redraw()

    def set_weights(self, weights: np.ndarray, query_labels: list[str], key_labels: list[str],
                    highlighted_row: int | None = None) -> None:
        """weights [heads, queries, keys] of one layer; keys on the left, queries on the right."""
        self.weights = np.asarray(weights, dtype=np.float32)
        self.query_labels, self.key_labels = list(query_labels), list(key_labels)
        self.highlighted_row = highlighted_row
        self._ensure_head_boxes(self.weights.shape[0])
        self._redraw()

    def _on_head_toggled(self, _checked: bool) -> None:
        self._redraw()
        self.heads_changed.emit()

    def _redraw(self) -> None:
        for item in self.line_items:
            self.plot.removeItem(item)
        self.line_items = []
        self.n_lines = 0
        n_heads, n_queries, n_keys = self.weights.shape
        span = max(n_queries, n_keys, 1)
        key_y, query_y = self._positions(n_keys, span), self._positions(n_queries, span)
        self._draw_labels("keys", 0.0, self.key_labels, key_y, (1, 0.5), None)
        self._draw_labels("queries", 1.0, self.query_labels, query_y, (0, 0.5), self.highlighted_row)
        for head in self.visible_heads():
            colour = QColor(head_colour(head))
            weights = self.weights[head]
            for band in range(BANDS):
                low, high = (band / BANDS, (band + 1) / BANDS)
                chosen = (weights >= max(low, MIN_WEIGHT)) & ((weights < high) | (band == BANDS - 1))
                queries, keys = np.nonzero(chosen)
                if queries.size == 0:
                    continue
                x = np.tile([0.0, 1.0], queries.size)  # [2 * lines]: key end, query end
                y = np.column_stack([key_y[keys], query_y[queries]]).ravel()  # [2 * lines]
                item = QGraphicsPathItem(pg.arrayToQPath(x, y, connect="pairs"))
                colour.setAlphaF(min(1.0, (band + 0.5) / BANDS))
                item.setPen(pg.mkPen(QColor(colour), width=2, cosmetic=True))
                self.plot.addItem(item)
                self.line_items.append(item)
                self.n_lines += int(queries.size)
        self.plot.setRange(xRange=(-0.45, 1.45), yRange=(-0.5, span), padding=0.02)

    def _draw_labels(self, side: str, column: float, labels: list[str], ys: np.ndarray, anchor, highlighted) -> None:
        """Token labels of one column; existing TextItems are reused (stepping adds one query)."""
        key = (tuple(labels), tuple(np.round(ys, 6)), highlighted)
        drawn, items = self._labels.get(side, (None, []))
        if drawn == key:
            return
        while len(items) > len(labels):
            self.plot.removeItem(items.pop())
        for index, label in enumerate(labels):
            colour = "#ff2d55" if index == highlighted else pg.getConfigOption("foreground")
            if index == len(items):
                items.append(pg.TextItem(label, anchor=anchor, color=colour))
                self.plot.addItem(items[-1])
            else:
                old = drawn[0][index] if drawn and index < len(drawn[0]) else None
                old_colour = "#ff2d55" if drawn and index == drawn[2] else pg.getConfigOption("foreground")
                if old != label or old_colour != colour:
                    items[index].setText(label, color=colour)
            items[index].setPos(column + (-0.02 if column == 0 else 0.02), ys[index])
        self._labels[side] = (key, items)

    @staticmethod
    def _positions(count: int, span: int) -> np.ndarray:
        """Both columns spread over the same height, so short and long sides line up."""
        return (np.arange(count) + 0.5) * (span / max(count, 1)) - 0.5
