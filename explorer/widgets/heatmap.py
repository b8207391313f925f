"""The focus heatmap: one attention matrix large, tokens as axis labels, a colour bar, a tooltip with
query, key and weight under the cursor, and the current step's row outlined.

Built from pyqtgraph's ImageItem, ColorBarItem and two ``TokenAxis`` items (rows are queries, columns
keys). Every token is labelled when its row or column is large enough to read: the axes pick the
font size that fits (down to 7 pt), stand key labels on end when that makes them fit, and only past
that label every n-th token. They follow the view box's range, so zooming in labels every visible
row and column. The view zooms with Ctrl+wheel only (a plain wheel scrolls past it), and its auto
range ("A") is exactly the matrix.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QGuiApplication
from PySide6.QtWidgets import QGraphicsRectItem, QToolTip

from model.data.token_labels import HIGHLIGHT, display_labels

COLORMAPS = ("viridis", "magma", "inferno", "plasma", "cividis")  # perceptually uniform
MIN_POINT_SIZE = 7.0  # the smallest legible label
LABEL_SPACE = 150.0  # px: longer labels are elided
TEXT_GAP, TICK = 4.0, 3.0  # px between a label and its tick, and the tick's length
_widths: dict[tuple[str, float], float] = {}  # (text, point size) -> width in px, shared by every axis


DIVERGING = "RdBu_r"  # a signed difference: blue below 0, white at 0, red above (as the core's figures draw it)
DIVERGING_COLOURS = ("#053061", "#4393c3", "#f7f7f7", "#d6604d", "#67001f")


def colormap(name: str) -> pg.ColorMap:
    if name == DIVERGING:
        return pg.ColorMap(np.linspace(0.0, 1.0, len(DIVERGING_COLOURS)), list(DIVERGING_COLOURS), name=DIVERGING)
    return pg.colormap.get(name if name in COLORMAPS else "viridis")


def shown_labels(labels: list[str], level: str | None = None) -> list[str]:
    """Labels as people read them. ``level`` None: word level when no label carries SentencePiece's
    word marker (word-level axes never do), else piece level."""
    if level is None:
        level = "piece" if any("▁" in str(label) for label in labels) else "word"
    return display_labels(list(labels), level)


def label_font(point_size: float) -> QFont:
    font = QFont(QGuiApplication.font())
    font.setPointSizeF(point_size)
    return font


def point_sizes() -> list[float]:
    """Label sizes to try, largest first: the application's font size down to MIN_POINT_SIZE."""
    largest = max(QGuiApplication.font().pointSizeF(), MIN_POINT_SIZE)
    return [largest - 0.5 * step for step in range(int((largest - MIN_POINT_SIZE) / 0.5) + 1)]


def line_height(point_size: float) -> float:
    key = ("\n", point_size)
    if key not in _widths:
        _widths[key] = QFontMetricsF(label_font(point_size)).height()
    return _widths[key]


def text_widths(labels: list[str], point_size: float) -> np.ndarray:
    """Width in px of each label at ``point_size`` (at most LABEL_SPACE), cached across calls."""
    metrics = None
    widths = np.empty(len(labels), np.float64)  # [labels]
    for index, label in enumerate(labels):
        width = _widths.get((label, point_size))
        if width is None:
            metrics = metrics or QFontMetricsF(label_font(point_size))
            width = _widths[(label, point_size)] = min(metrics.horizontalAdvance(label), LABEL_SPACE)
        widths[index] = width
    if len(_widths) > 50000:
        _widths.clear()
    return widths


class TokenViewBox(pg.ViewBox):
    """A view box that zooms only with Ctrl+wheel: a plain wheel is left to the window (scrolling)."""

    def wheelEvent(self, event, axis=None) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            super().wheelEvent(event, axis)
        else:
            event.ignore()


def ordinal(n: int) -> str:
    """2 -> "2nd", 3 -> "3rd", 11 -> "11th"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class TokenAxis(pg.AxisItem):
    """An axis that labels cells with tokens: token i is centred at ``offset + (i + 0.5) * cell``
    (view units). With ``tokens`` None it is a plain pyqtgraph axis (``setTicks``). ``highlighted``
    is drawn in red, thinned or not. ``drawn`` holds (index, text, rect) of the labels painted last."""

    def __init__(self, orientation: str):
        super().__init__(orientation)
        self.tokens: list[str] | None = None
        self.cell, self.offset = 1.0, 0.0
        self.highlighted: int | None = None
        self.point_size = point_sizes()[0]
        self.rotated = False  # key labels stood on end (read upwards)
        self.every = 1  # every n-th token labelled
        self.drawn: list[tuple[int, str, QRectF]] = []
        # Kept as a pixmap between changes: replaying the QPicture pyqtgraph caches re-shapes every label.
        self.setCacheMode(self.CacheMode.DeviceCoordinateCache)
        self._all_widths: dict[float, np.ndarray] = {}  # point size -> [tokens] widths
        self._layout: tuple[float, bool, int] | None = None
        self.name = ""  # what the axis holds ("query", "key"); it says so when labels are thinned

    def set_name(self, name: str) -> None:
        self.name = name
        self._label_thinning()

    def _label_thinning(self) -> None:
        """The axis title says when only every n-th token is labelled, and how to see them all (zooming in, with
        Ctrl+wheel or a drag, labels every token it shows)."""
        if not self.name:
            return
        thinned = self.every > 1 and self.tokens is not None
        text = f"{self.name} (every {ordinal(self.every)})" if thinned else self.name  # short: a low axis is short
        if self.labelText != text:
            self.setLabel(text)

    def set_tokens(self, tokens: list[str] | None, cell: float = 1.0, offset: float = 0.0, highlighted: int | None = None) -> None:
        tokens = list(tokens) if tokens is not None else None
        if (tokens, cell, offset, highlighted) == (self.tokens, self.cell, self.offset, self.highlighted):
            return
        if tokens != self.tokens:
            self.tokens, self._all_widths = tokens, {}
        self.cell, self.offset, self.highlighted = cell, offset, highlighted
        self._layout = None
        self.relayout()

    def _visible(self, low: float, high: float) -> tuple[int, int]:
        """First and last token whose centre lies in the view range low..high."""
        first = math.ceil((low - self.offset) / self.cell - 0.5)
        last = math.floor((high - self.offset) / self.cell - 0.5)
        return max(0, first), min(len(self.tokens or []) - 1, last)

    def _widths_at(self, point_size: float) -> np.ndarray:
        if point_size not in self._all_widths:
            self._all_widths[point_size] = text_widths(self.tokens or [], point_size)
        return self._all_widths[point_size]

    def _scale(self) -> tuple[float, float, float, bool] | None:
        """(px per cell, first visible value, last visible value, flipped) along this axis."""
        view = self.linkedView()
        if view is None:
            return None
        (x0, x1), (y0, y1) = view.viewRange()
        vertical = self.orientation in ("left", "right")
        low, high = (y0, y1) if vertical else (x0, x1)
        length = view.height() if vertical else view.width()
        if length <= 0 or high <= low:
            return None
        flipped = (not view.yInverted()) if vertical else view.xInverted()
        return length / (high - low) * self.cell, low, high, flipped

    def fit(self, cell_px: float, first: int, last: int) -> tuple[float, bool, int]:
        """(point size, rotated, every n-th) for cells of ``cell_px`` px, tokens first..last visible."""
        sizes, vertical = point_sizes(), self.orientation in ("left", "right")
        if not vertical:
            for size in sizes:
                if first <= last and self._widths_at(size)[first : last + 1].max() + 2 <= cell_px:
                    return size, False, 1
        for size in sizes:
            if line_height(size) <= cell_px:
                return size, not vertical, 1
        return MIN_POINT_SIZE, not vertical, max(1, math.ceil(line_height(MIN_POINT_SIZE) / max(cell_px, 1e-3)))

    def relayout(self) -> None:
        """Choose size, rotation and thinning for the cells visible now; resize the axis to its labels."""
        if getattr(self, "tokens", None) is None:  # a plain axis (or still being built)
            return
        scale = self._scale()
        if scale is None or not self.tokens:
            layout = (self.point_size, self.rotated, self.every)
        else:
            cell_px, low, high, _ = scale
            layout = self.fit(cell_px, *self._visible(low, high))
        if layout == self._layout:
            return
        self._layout = layout
        self.point_size, self.rotated, self.every = layout
        self._label_thinning()
        label = self.label.boundingRect().height() * 0.8 if self.label.isVisible() else 0.0
        if self.orientation in ("left", "right"):  # sized for the largest font, so it never feeds back
            extent = float(self._widths_at(point_sizes()[0]).max()) if self.tokens else 0.0
            label = label if self.orientation == "left" else 0.0
            self.setWidth(math.ceil(extent + TEXT_GAP + TICK + label))
        else:
            extent = float(self._widths_at(self.point_size).max()) if self.rotated and self.tokens else line_height(self.point_size)
            self.setHeight(math.ceil(extent + TEXT_GAP + TICK + label))
        self.picture = None
        self.update()

    def setRange(self, mn: float, mx: float) -> None:  # noqa: N802 - pyqtgraph's name
        if getattr(self, "tokens", None) is not None and [mn, mx] == self.range:
            return  # nothing moved: keep the drawn picture
        super().setRange(mn, mx)

    def linkedViewChanged(self, view, newRange=None) -> None:  # noqa: N802, N803 - pyqtgraph's names
        super().linkedViewChanged(view, newRange)
        self.relayout()

    def resizeEvent(self, event=None) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.relayout()

    def generateDrawSpecs(self, painter):  # noqa: N802 - pyqtgraph's name
        if self.tokens is None:
            return super().generateDrawSpecs(painter)
        bounds = self.mapRectFromParent(self.geometry())
        vertical = self.orientation in ("left", "right")
        right = self.orientation == "right"  # labels to the right of the axis line
        edge = bounds.left() if right else bounds.right() if vertical else bounds.bottom()
        start_line = QPointF(edge, bounds.top()) if vertical else QPointF(bounds.left(), edge)
        end_line = QPointF(edge, bounds.bottom()) if vertical else QPointF(bounds.right(), edge)
        axis_spec = (self.pen(), start_line, end_line)
        scale, view = self._scale(), self.linkedView()
        self.drawn = []
        if scale is None or not self.tokens:
            return axis_spec, [], []
        cell_px, low, high, flipped = scale
        along = view.mapRectToItem(self, view.boundingRect())
        origin, px_per_unit = (along.top(), along.height()) if vertical else (along.left(), along.width())
        px_per_unit /= high - low
        first, last = self._visible(low, high)
        indices = list(range(first + (-first) % self.every, last + 1, self.every))  # stay put while panning
        if self.highlighted is not None and first <= self.highlighted <= last:
            indices = sorted({index for index in indices if abs(index - self.highlighted) >= self.every} | {self.highlighted})
        height = line_height(self.point_size)
        text_end = edge - TICK - TEXT_GAP
        tick_pen, ticks, texts = self.pen(), [], []
        for index in indices:
            value = self.offset + (index + 0.5) * self.cell
            position = origin + ((high - value) if flipped else (value - low)) * px_per_unit
            text = self.tokens[index]
            if right:
                rect = QRectF(edge + TICK + TEXT_GAP, position - height / 2, bounds.right() - edge - TICK - TEXT_GAP, height)
                ticks.append((tick_pen, QPointF(edge, position), QPointF(edge + TICK, position)))
                flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
            elif vertical:
                rect = QRectF(0, position - height / 2, text_end, height)
                ticks.append((tick_pen, QPointF(edge - TICK, position), QPointF(edge, position)))
                flags = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
            elif self.rotated:
                rect = QRectF(position - height / 2, text_end - LABEL_SPACE, height, LABEL_SPACE)
                ticks.append((tick_pen, QPointF(position, edge - TICK), QPointF(position, edge)))
                flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
            else:
                rect = QRectF(position - cell_px / 2, text_end - height, cell_px, height)
                ticks.append((tick_pen, QPointF(position, edge - TICK), QPointF(position, edge)))
                flags = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom
            texts.append((rect, flags, text, index == self.highlighted))
            self.drawn.append((index, text, rect))
        return axis_spec, ticks, texts

    def drawPicture(self, painter, axis_spec, tick_specs, text_specs) -> None:  # noqa: N802
        if self.tokens is None:
            return super().drawPicture(painter, axis_spec, tick_specs, text_specs)
        painter.setRenderHint(painter.RenderHint.Antialiasing, False)
        painter.setRenderHint(painter.RenderHint.TextAntialiasing, True)
        pen, start, end = axis_spec
        painter.setPen(pen)
        painter.drawLine(start, end)
        for _pen, start, end in tick_specs:
            painter.drawLine(start, end)
        font = label_font(self.point_size)
        painter.setFont(font)
        metrics, text_pen, highlight_pen = QFontMetricsF(font), self.textPen(), pg.mkPen(HIGHLIGHT)
        widths = text_widths([text for _, _, text, _ in text_specs], self.point_size)  # cached: no shaping here
        for (rect, flags, text, highlighted), width in zip(text_specs, widths):
            painter.setPen(highlight_pen if highlighted else text_pen)
            room = LABEL_SPACE if self.rotated else rect.width()
            if width >= room - 0.5:  # too long (widths stop at LABEL_SPACE): end it with "…"
                text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, room)
            if self.rotated:  # drawn along the rect's height, reading upwards from the axis line
                painter.save()
                painter.translate(rect.center().x(), rect.bottom())
                painter.rotate(-90)
                painter.drawText(QRectF(0, -rect.width() / 2, rect.height(), rect.width()), int(flags), text)
                painter.restore()
            else:
                painter.drawText(rect, int(flags), text)
        return None


class HeatmapView(pg.GraphicsLayoutWidget):
    def __init__(self, colormap_name: str = "viridis", value_label: str = "attention weight"):
        super().__init__()
        self.setToolTip("")
        self.values = np.zeros((0, 0), np.float32)
        self.query_labels: list[str] = []  # raw pieces (what exports write)
        self.key_labels: list[str] = []
        self.display_query_labels: list[str] = []  # as people read them (axes, tooltip)
        self.display_key_labels: list[str] = []
        self.highlighted_row: int | None = None
        self._title: str | None = None
        self._levels: tuple[float, float] | None = None
        self._token_level: str | None = None
        self.plot = self.addPlot(
            row=0, col=0, viewBox=TokenViewBox(), axisItems={"left": TokenAxis("left"), "top": TokenAxis("top")}
        )
        self.plot.setMenuEnabled(False)
        self.plot.invertY(True)
        self.plot.setAspectLocked(False)
        self.plot.vb.setDefaultPadding(0.0)  # "A" frames the matrix exactly
        self.plot.showAxis("top")
        self.plot.getAxis("left").set_name("query")
        self.plot.getAxis("top").set_name("key")
        self.plot.hideAxis("bottom")
        for side in ("left", "top"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.color_bar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(colormap_name), interactive=False, label=value_label)
        self.color_bar.setImageItem(self.image)
        self.color_bar.axis.setCacheMode(self.color_bar.axis.CacheMode.DeviceCoordinateCache)
        self.addItem(self.color_bar, row=0, col=1)
        self._value_label = value_label
        self.outline = QGraphicsRectItem()  # a window aid: outside the auto range
        self.outline.setPen(pg.mkPen(HIGHLIGHT, width=3, cosmetic=True))
        self.outline.setZValue(10)
        self.outline.hide()
        self.plot.addItem(self.outline, ignoreBounds=True)
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    def set_value_label(self, label: str) -> None:
        """What the colour bar measures (attention weights, or a measure's shares)."""
        if label != self._value_label:
            self._value_label = label
            self.color_bar.getAxis("left").setLabel(label)  # where ColorBarItem puts a vertical bar's label

    def set_matrix(
        self,
        values: np.ndarray,
        query_labels: list[str],
        key_labels: list[str],
        title: str = "",
        highlighted_row: int | None = None,
        levels: tuple[float, float] = (0.0, 1.0),
        token_level: str | None = None,
    ) -> None:
        """values [queries, keys]; labels are raw pieces (or words: ``token_level`` "word")."""
        self.values = np.asarray(values, dtype=np.float32)  # [queries, keys]
        query_labels, key_labels = list(query_labels), list(key_labels)
        if (query_labels, key_labels, token_level) != (self.query_labels, self.key_labels, self._token_level):
            self.display_query_labels = shown_labels(query_labels, token_level)
            self.display_key_labels = shown_labels(key_labels, token_level)
        self.query_labels, self.key_labels, self._token_level = query_labels, key_labels, token_level
        n_queries, n_keys = self.values.shape if self.values.ndim == 2 else (0, 0)
        if n_queries and n_keys:
            self.image.setImage(self.values, autoLevels=False, levels=levels)
            self.image.setRect(QRectF(0, 0, n_keys, n_queries))
            self.image.show()
        else:
            self.image.hide()
        if levels != self._levels:
            self.color_bar.setLevels(levels)
            self._levels = levels
        self._outline_row(highlighted_row)
        self._set_ticks()
        if title != self._title:
            self.plot.setTitle(title)
            self.plot.titleLabel.setMinimumWidth(0)  # a long title is clipped, never pushes the colour bar out
            self._title = title
        self.plot.setRange(xRange=(0, max(n_keys, 1)), yRange=(0, max(n_queries, 1)), padding=0.0)

    def _set_ticks(self) -> None:
        """Token labels on both axes (each axis fits them to the cells it shows), the current step's
        query in red: it stays labelled when its neighbours are thinned out."""
        self.plot.getAxis("left").set_tokens(self.display_query_labels, highlighted=self.highlighted_row)
        self.plot.getAxis("top").set_tokens(self.display_key_labels)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if hasattr(self, "plot"):
            self._set_ticks()

    def set_highlighted_row(self, row: int | None) -> None:
        self._outline_row(row)
        self._set_ticks()

    def _outline_row(self, row: int | None) -> None:
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
        return (
            f"query {self.display_query_labels[query]!r} (#{query + 1}) → key "
            f"{self.display_key_labels[key]!r} (#{key + 1}): {self.values[query, key]:.4f}"
        )

    def _on_mouse_moved(self, scene_position) -> None:
        cell = self.cell_at(scene_position)
        text = self.describe_cell(*cell) if cell else ""
        self.setToolTip(text)
        if text:
            QToolTip.showText(self.mapToGlobal(self.mapFromScene(scene_position)), text, self)
        else:
            QToolTip.hideText()
