"""The model view: a grid of small heatmaps, one per layer (rows) and head (columns), for one kind of
attention at the current step, all on one colour scale. Clicking a cell focuses that head.

The whole grid is one mosaic image (cells separated by transparent gaps), so a step costs one
colour mapping and one paint however many layers and heads the model has. A cell holding more
tokens than it has screen pixels is pooled to its pixel size first, each pixel showing the largest
weight it covers (a thin alignment stays visible): at 200 tokens that is about a tenth of the
pixels to colour. Before the first step, decoder and cross attention have no rows: the grid says
so instead of drawing empty cells. With ``set_importance``, each cell also shows its head's importance
(normalised per layer) as a small number in its top-left corner, white on a dark translucent box so that it
reads on every colour of the map.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QGraphicsRectItem

from explorer.widgets.heatmap import colormap
from explorer.widgets.rich_title import fit_title
from model.data.token_labels import HIGHLIGHT

GAP = 0.12  # space between cells, as a share of a cell
IMPORTANCE_FONT_POINTS = 7
IMPORTANCE_BOX = (0, 0, 0, 160)  # RGBA behind an importance number: dark enough for white text on yellow
EMPTY_TEXT = "Step 0: no target token yet — press Step ▶ (Alt+Right)"


def pool_max(weights: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """[..., Q, K] -> [..., ceil(Q / f), ceil(K / g)] with f = ceil(Q / rows), g = ceil(K / columns): the
    largest weight of each f x g block (an elementwise maximum of strided views: numpy's reduceat along
    the query axis is twenty times slower)."""
    for axis, target in ((-2, rows), (-1, columns)):
        factor = -(-weights.shape[axis] // max(target, 1))
        if factor <= 1:
            continue
        at = (lambda part: (Ellipsis, part, slice(None))) if axis == -2 else (lambda part: (Ellipsis, part))
        pooled = weights[at(slice(0, None, factor))].copy()  # [..., blocks, K] or [..., Q', blocks]
        for offset in range(1, factor):
            part = weights[at(slice(offset, None, factor))]
            view = pooled[at(slice(0, part.shape[axis]))]  # the last block may be short
            np.maximum(view, part, out=view)
        weights = pooled
    return weights


def pool_extreme(weights: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """pool_max for weights, and for signed values (a difference of two snapshots) the value of each block that is
    farthest from 0, so that a loss shows as strongly as a gain."""
    largest = pool_max(weights, rows, columns)
    if weights.size == 0 or weights.min() >= 0:
        return largest
    smallest = -pool_max(-weights, rows, columns)
    return np.where(-smallest > largest, smallest, largest)


class ModelGrid(pg.GraphicsLayoutWidget):
    cell_clicked = Signal(int, int)  # layer, head (0-based)
    head_toggled = Signal(int, int)  # Ctrl+click: knock the head out, or put it back

    def __init__(self, colormap_name: str = "viridis") -> None:
        super().__init__()
        self.setToolTip(
            "Every layer (rows) and head (columns) at the current step, on one colour scale; click a cell to focus it, "
            "Ctrl+click to knock the head out (or put it back)"
        )
        self.weights = np.zeros((0, 0, 0, 0), np.float32)  # [layers, heads, queries, keys] shown now
        self.titles: tuple[list[str], list[str]] | None = None  # each layer's and head's title, when not numbered
        self.levels = (0.0, 1.0)
        self.title = ""  # a line above the grid: the snapshot of training shown, or the two a difference subtracts
        self.selected: tuple[int, int] | None = None
        self.empty = False  # no rows (step 0 of decoder or cross attention): a message instead of cells
        self.plot = self.addPlot(enableMenu=False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        fit_title(self.plot)  # wrapped to the grid's width: a long title (two snapshots) cut the last heads off
        self.plot.invertY(True)
        self.plot.showAxis("top")
        self.plot.hideAxis("bottom")
        for side in ("left", "top"):  # drawn again only when their ticks change
            axis = self.plot.getAxis(side)
            axis.setCacheMode(axis.CacheMode.DeviceCoordinateCache)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setLookupTable(colormap(colormap_name).getLookupTable(nPts=256))
        self.plot.addItem(self.image)
        self.message = pg.TextItem(EMPTY_TEXT, anchor=(0.5, 0.5), color=pg.getConfigOption("foreground"))
        self.message.setPos(0.5, 0.5)
        self.message.hide()
        self.plot.addItem(self.message, ignoreBounds=True)
        self.frames: list[QGraphicsRectItem] = []  # reused from step to step; the unused ones hidden
        self.masked: set[tuple[int, int]] = set()  # (layer, head) knocked out: drawn greyed and dashed
        self.mask_items: list[QGraphicsRectItem] = []
        self.importance: np.ndarray | None = None  # [layers, heads] shown as numbers in the cells' corners
        self.importance_items: list[pg.TextItem] = []  # reused; the unused ones hidden
        self._importance_drawn: tuple | None = None  # (cell step, grid shape) the numbers were placed for
        self._cell = (1.0, 1.0)  # a cell's size plus its gap, in mosaic pixels (rows, columns)
        self._cell_size = (0, 0)  # a cell's size in mosaic pixels (rows, columns): smaller when pooled
        self._target = (0, 0)  # the pooled size asked for, from the widget's size
        self._drawn: tuple | None = None  # (ticks, range) last set, so an unchanged grid is not laid out again
        self._drawn_head_titles: list[str] = []  # the heads' titles as drawn last (_fitted)
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def set_weights(
        self,
        weights: np.ndarray,
        levels: tuple[float, float] = (0.0, 1.0),
        empty_text: str = EMPTY_TEXT,
        titles: tuple[list[str], list[str]] | None = None,
    ) -> None:
        """weights [layers, heads, queries, keys] for one kind at the current step; ``titles``: each row's and
        column's (model/inspection/selection.map_titles), else "layer 1", "head 1", ..."""
        self.weights = np.asarray(weights, dtype=np.float32)  # [layers, heads, queries, keys]
        self.titles = titles
        self.levels = levels
        if empty_text != self.message.toPlainText():
            self.message.setText(empty_text)
        self._draw()

    def _pooled_size(self) -> tuple[int, int]:
        """(rows, columns) a cell gets in the mosaic: its tokens, or its screen pixels when fewer."""
        n_layers, n_heads, n_queries, n_keys = self.weights.shape
        width, height = self.plot.vb.width(), self.plot.vb.height()
        if width <= 0 or height <= 0:  # not laid out yet: full resolution
            return n_queries, n_keys
        ratio = self.devicePixelRatioF()
        rows = math.ceil(height * ratio / max(n_layers, 1) / (1 + GAP))
        columns = math.ceil(width * ratio / max(n_heads, 1) / (1 + GAP))
        return min(n_queries, max(rows, 1)), min(n_keys, max(columns, 1))

    def _draw(self) -> None:
        n_layers, n_heads, n_queries, n_keys = self.weights.shape
        self.empty = n_layers == 0 or n_heads == 0 or n_queries == 0 or n_keys == 0
        if self.empty:
            self.image.hide()
            self.message.show()
            self._cell, self._cell_size = (1.0, 1.0), (0, 0)
            self._set_frame([], [], 1.0, 1.0)
            self._draw_selection()
            return
        self.message.hide()
        self._target = self._pooled_size()
        cells = pool_extreme(self.weights, *self._target)  # [layers, heads, rows, columns]
        rows, columns = cells.shape[2:]
        gap_rows, gap_columns = max(1, round(GAP * rows)), max(1, round(GAP * columns))
        step_rows, step_columns = rows + gap_rows, columns + gap_columns
        self._cell, self._cell_size = (float(step_rows), float(step_columns)), (rows, columns)
        mosaic = np.full((n_layers, step_rows, n_heads, step_columns), np.nan, np.float32)  # NaN gaps: transparent
        mosaic[:, :rows, :, :columns] = cells.transpose(0, 2, 1, 3)
        mosaic = mosaic.reshape(n_layers * step_rows, n_heads * step_columns)[:-gap_rows, :-gap_columns]
        self.image.setImage(mosaic, autoLevels=False, levels=self.levels)  # [layers x rows, heads x columns]
        self.image.setRect(QRectF(0, 0, mosaic.shape[1], mosaic.shape[0]))
        self.image.show()
        layer_titles, head_titles = self.titles or (
            [f"layer {layer + 1}" for layer in range(n_layers)],
            [f"head {head + 1}" for head in range(n_heads)],
        )
        head_titles = self._fitted(head_titles)
        left = [((layer + 0.5) * step_rows - gap_rows / 2, layer_titles[layer]) for layer in range(n_layers)]
        top = [((head + 0.5) * step_columns - gap_columns / 2, head_titles[head]) for head in range(n_heads)]
        self._drawn_head_titles = head_titles
        self._set_frame(left, top, mosaic.shape[1], mosaic.shape[0])
        self._draw_selection()

    def _set_frame(self, left: list, top: list, width: float, height: float) -> None:
        """Axis ticks and view range, set only when they change (a step seldom changes them)."""
        drawn = (left, top, width, height)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        self.plot.getAxis("left").setTicks([left, []])
        self.plot.getAxis("top").setTicks([top, []])
        self.plot.setRange(xRange=(0, width), yRange=(0, height), padding=0.01)

    def _fitted(self, titles: list[str]) -> list[str]:
        """The heads' titles over their columns: "head 16" while the longest fits a column, else "h16", else "16"
        (16 heads in a narrow pane: the long titles ran into each other)."""
        metrics = QFontMetrics(self.plot.getAxis("top").style.get("tickFont") or self.font())
        room = self.plot.vb.width() / max(len(titles), 1)  # px over each head's column
        shortened = titles
        for short in ("h", ""):
            if max((metrics.horizontalAdvance(title) for title in shortened), default=0) + 6 <= room:
                break
            shortened = [title.replace("head ", short) for title in titles]
        return shortened

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if not hasattr(self, "image") or self.empty or not self.weights.size:
            return
        titles = self.titles[1] if self.titles else [f"head {head + 1}" for head in range(self.weights.shape[1])]
        if self._pooled_size() != self._target or self._fitted(titles) != self._drawn_head_titles:
            self._draw()  # pooled to the new size, or the heads' titles fit otherwise

    def set_colormap(self, name: str) -> None:
        self.image.setLookupTable(colormap(name).getLookupTable(nPts=256))

    def set_title(self, title: str) -> None:
        """The line above the grid ("" for none)."""
        if title != self.title:
            self.title = title
            self.plot.setTitle(title or None, size="9pt")

    def select(self, layer: int, head: int | None) -> None:
        """Frame the focused cell (head None: an aggregate is focused, the whole layer is framed)."""
        self.selected = (layer, head) if head is not None else (layer, -1)
        self._draw_selection()

    def set_masked(self, cells: set[tuple[int, int]]) -> None:
        """The (layer, head) cells knocked out, greyed over."""
        if cells != self.masked:
            self.masked = set(cells)
            self._draw_selection()

    def set_importance(self, values: np.ndarray | None) -> None:
        """Each head's importance [layers, heads] (normalised per layer) written in its cell's corner; None: none."""
        self.importance = None if values is None else np.array(values, dtype=np.float64, copy=True)  # [layers, heads]
        self._importance_drawn = None
        self._draw_importance()

    def visible_importance_labels(self) -> list[pg.TextItem]:
        return [item for item in self.importance_items if item.isVisible()]

    def _draw_selection(self) -> None:
        n_layers, n_heads = self.weights.shape[:2]
        rects = []
        if self.selected is not None and not self.empty and 0 <= self.selected[0] < n_layers:
            layer, head = self.selected
            heads = range(n_heads) if head < 0 else [head] if head < n_heads else []
            (step_rows, step_columns), (rows, columns) = self._cell, self._cell_size
            rects = [QRectF(index * step_columns, layer * step_rows, columns, rows) for index in heads]
        while len(self.frames) < len(rects):
            frame = QGraphicsRectItem()
            frame.setPen(pg.mkPen(HIGHLIGHT, width=3, cosmetic=True))
            frame.setZValue(10)
            self.plot.addItem(frame, ignoreBounds=True)
            self.frames.append(frame)
        for index, frame in enumerate(self.frames):
            if index < len(rects):
                if frame.rect() != rects[index]:
                    frame.setRect(rects[index])
                frame.show()
            else:
                frame.hide()
        self._draw_masked()

    def _draw_masked(self) -> None:
        (step_rows, step_columns), (rows, columns) = self._cell, self._cell_size
        cells = [] if self.empty else sorted(self.masked)
        while len(self.mask_items) < len(cells):
            item = QGraphicsRectItem()
            item.setPen(pg.mkPen("#888888", width=2, style=Qt.PenStyle.DashLine, cosmetic=True))
            item.setBrush(pg.mkBrush(128, 128, 128, 170))
            item.setZValue(5)
            self.plot.addItem(item, ignoreBounds=True)
            self.mask_items.append(item)
        for index, item in enumerate(self.mask_items):
            if index < len(cells):
                layer, head = cells[index]
                item.setRect(QRectF(head * step_columns, layer * step_rows, columns, rows))
                item.show()
            else:
                item.hide()
        self._draw_importance()

    def _draw_importance(self) -> None:
        """Place (and after ``set_importance``, write) the numbers; a step that keeps the cells' size moves nothing."""
        n_layers, n_heads = self.weights.shape[:2]
        values = self.importance
        if values is None or values.ndim != 2 or self.empty:
            cells: list[tuple[int, int]] = []
        else:  # the heads both the grid and the values have
            cells = [
                (layer, head) for layer in range(min(n_layers, values.shape[0])) for head in range(min(n_heads, values.shape[1]))
            ]
        drawn = (self._cell, n_layers, n_heads, len(cells))
        if drawn == self._importance_drawn:
            return
        self._importance_drawn = drawn
        while len(self.importance_items) < len(cells):
            item = pg.TextItem("", color="w", anchor=(0, 0), fill=pg.mkBrush(*IMPORTANCE_BOX))
            font = QFont()
            font.setPointSize(IMPORTANCE_FONT_POINTS)
            item.setFont(font)
            item.setZValue(12)  # above the focus frame and the knocked-out grey
            self.plot.addItem(item, ignoreBounds=True)
            self.importance_items.append(item)
        step_rows, step_columns = self._cell
        for index, item in enumerate(self.importance_items):
            if index < len(cells):
                layer, head = cells[index]
                assert values is not None
                item.setText(f"{values[layer, head]:.2f}")
                item.setToolTip(f"layer {layer + 1}, head {head + 1}: importance {values[layer, head]:.3f} (normalised per layer)")
                item.setPos(head * step_columns, layer * step_rows)
                item.show()
            else:
                item.hide()

    def cell_at(self, scene_position) -> tuple[int, int] | None:
        if self.empty or not self.plot.vb.sceneBoundingRect().contains(scene_position):
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
            knock_out = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            (self.head_toggled if knock_out else self.cell_clicked).emit(*cell)
