"""The lines view, in the style of the paper's attention figures: key tokens in one column, query
tokens in the other, one line per (query, key) whose opacity is the weight, coloured by head, with
each head switched on or off. The focused head (from the grid, the head table or the head box) is
drawn on top and the others dimmed; with the mean, max or rollout focused, every head is drawn alike.

Lines are grouped by head and by opacity band into one path each (the path items are reused from
step to step), so hundreds of tokens stay fast. The token labels are the plot's left and right axes:
each fits its font to the rows it shows and labels every n-th token only when rows are too short
to read, the current step's query in red.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QCheckBox, QGraphicsPathItem, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from explorer.widgets.heatmap import TokenAxis, shown_labels

BANDS = 8  # opacity levels
MIN_WEIGHT = 0.05  # lighter lines are nearly invisible and are not drawn
DIMMED = 0.2  # opacity factor of the other heads' lines while one head is focused
LINE_WIDTH = 1  # px, the focused head's too (it stands out by opacity): 2 px antialiased lines draw 10x slower


def head_colour(head: int) -> str:
    """A head's colour: the core's (model/figures/attention.py), so the window and the figures agree."""
    from model.figures.attention import head_colour as core_colour  # deferred: matplotlib loads once lines are drawn

    return core_colour(head)


class LinesView(QWidget):
    def __init__(self):
        super().__init__()
        self.weights = np.zeros((0, 0, 0), np.float32)  # [heads, queries, keys] of one layer
        self.query_labels: list[str] = []  # raw pieces
        self.key_labels: list[str] = []
        self.display_query_labels: list[str] = []  # as people read them
        self.display_key_labels: list[str] = []
        self.highlighted_row: int | None = None
        self.focused_head: int | None = None  # drawn on top, the others dimmed; None: all alike
        self.line_items: dict[tuple[int, int], QGraphicsPathItem] = {}  # (head, band) -> its path
        self.n_lines = 0
        self.head_boxes: list[QCheckBox] = []
        self._labels_key = None
        self._styles: dict[tuple[int, int], tuple[float, bool]] = {}  # (head, band) -> the style its path has
        self.key_axis, self.query_axis = TokenAxis("left"), TokenAxis("right")
        self.plot = pg.PlotWidget(axisItems={"left": self.key_axis, "right": self.query_axis}, enableMenu=False)
        self.plot.showAxis("right")
        self.plot.hideAxis("bottom")
        self.plot.hideButtons()
        self.plot.invertY(True)
        self.plot.setMouseEnabled(x=False, y=True)
        self.plot.getPlotItem().vb.setDefaultPadding(0.0)
        self.plot.setToolTip("One line per query-key pair (keys left, queries right); darker = more attention. Scroll to zoom.")
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
            box.setToolTip(f"Show head {head + 1}'s lines")
            box.toggled.connect(self._on_head_toggled)
            self.heads_row.insertWidget(self.heads_row.count() - 1, box)
            self.head_boxes.append(box)
        self._style_head_boxes()

    def _style_head_boxes(self) -> None:
        """The focused head's box underlined: its lines are the ones drawn on top."""
        for head, box in enumerate(self.head_boxes):
            underline = " text-decoration: underline;" if head == self.focused_head else ""
            box.setStyleSheet(f"QCheckBox {{ color: {head_colour(head)}; font-weight: bold;{underline} }}")

    def visible_heads(self) -> list[int]:
        return [head for head, box in enumerate(self.head_boxes) if box.isChecked()]

    def set_heads_visible(self, heads: list[int]) -> None:
        for head, box in enumerate(self.head_boxes):
            box.blockSignals(True)
            box.setChecked(head in heads)
            box.blockSignals(False)
        self._redraw()

    def set_weights(
        self,
        weights: np.ndarray,
        query_labels: list[str],
        key_labels: list[str],
        highlighted_row: int | None = None,
        focused_head: int | None = None,
        token_level: str | None = None,
    ) -> None:
        """weights [heads, queries, keys] of one layer; keys on the left, queries on the right; labels
        are raw pieces (or words: ``token_level`` "word")."""
        self.weights = np.asarray(weights, dtype=np.float32)  # [heads, queries, keys]
        query_labels, key_labels = list(query_labels), list(key_labels)
        labels_key = (query_labels, key_labels, token_level)
        if labels_key != self._labels_key:
            self.display_query_labels = shown_labels(query_labels, token_level)
            self.display_key_labels = shown_labels(key_labels, token_level)
            self._labels_key = labels_key
        self.query_labels, self.key_labels = query_labels, key_labels
        self.highlighted_row = highlighted_row
        self._ensure_head_boxes(self.weights.shape[0])
        focused = focused_head if focused_head is not None and 0 <= focused_head < self.weights.shape[0] else None
        if focused != self.focused_head:
            self.focused_head = focused
            self._style_head_boxes()
        self._redraw()

    def _on_head_toggled(self, _checked: bool) -> None:
        self._redraw()

    def _redraw(self) -> None:
        _, n_queries, n_keys = self.weights.shape  # [heads, queries, keys]
        span = max(n_queries, n_keys, 1)
        key_y, query_y = self._positions(n_keys, span), self._positions(n_queries, span)  # [keys], [queries]
        self.key_axis.set_tokens(self.display_key_labels, span / max(n_keys, 1), -0.5)
        self.query_axis.set_tokens(self.display_query_labels, span / max(n_queries, 1), -0.5, self.highlighted_row)
        heads = self.visible_heads()
        focused = self.focused_head if self.focused_head in heads else None
        used, self.n_lines = set(), 0
        if heads and n_queries and n_keys:
            weights = self.weights[heads]  # [visible heads, queries, keys]
            which, queries, keys = np.nonzero(weights >= MIN_WEIGHT)  # [lines] each
            bands = np.minimum((weights[which, queries, keys] * BANDS).astype(np.intp), BANDS - 1)  # [lines]
            groups = which * BANDS + bands  # [lines]: (head, band) groups, in drawing order
            order = np.argsort(groups, kind="stable")
            groups, queries, keys = groups[order], queries[order], keys[order]
            bounds = np.searchsorted(groups, np.arange(len(heads) * BANDS + 1))  # [groups + 1]
            for group in range(len(heads) * BANDS):
                start, end = bounds[group], bounds[group + 1]
                if start == end:
                    continue
                head, band = heads[group // BANDS], group % BANDS
                x = np.tile([0.0, 1.0], end - start)  # [2 * lines]: key end, query end
                y = np.column_stack([key_y[keys[start:end]], query_y[queries[start:end]]]).ravel()  # [2 * lines]
                self._path_item(head, band, focused).setPath(pg.arrayToQPath(x, y, connect="pairs"))
                used.add((head, band))
                self.n_lines += int(end - start)
        for key, item in self.line_items.items():
            item.setVisible(key in used)
        self.plot.setRange(xRange=(0.0, 1.0), yRange=(-0.5, span - 0.5), padding=0.0)

    def _path_item(self, head: int, band: int, focused: int | None) -> QGraphicsPathItem:
        """The reused path of one head's band, styled for the focus now."""
        item = self.line_items.get((head, band))
        if item is None:
            item = self.line_items[(head, band)] = QGraphicsPathItem()
            self.plot.addItem(item)
        alpha = min(1.0, (band + 0.5) / BANDS) * (DIMMED if focused is not None and head != focused else 1.0)
        style = (alpha, head == focused)
        if self._styles.get((head, band)) != style:
            colour = QColor(head_colour(head))
            colour.setAlphaF(alpha)
            item.setPen(pg.mkPen(colour, width=LINE_WIDTH, cosmetic=True))
            item.setZValue(2 + band if head == focused else band / BANDS)
            self._styles[(head, band)] = style
        return item

    @staticmethod
    def _positions(count: int, span: int) -> np.ndarray:
        """Both columns spread over the same height, so short and long sides line up."""
        return (np.arange(count) + 0.5) * (span / max(count, 1)) - 0.5
