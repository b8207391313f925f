"""The token axis of the heatmaps: each row or column labelled with its token, centred on its cell.

Every token is labelled when its row or column is large enough to read: the axis picks the font size that fits
(down to 7 pt), stands key labels on end when that makes them fit, and only past that labels every n-th token (its
title then says so). It follows the linked view box's range, so zooming in labels every visible row and column.
What it painted last is in ``TokenAxis.drawn``; the picture is drawn again whenever the view's range, the view's
place or size, the tokens or the layout of the labels change (a picture kept from another size puts labels off
their cells).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QGuiApplication

from explorer.widgets.axis_titles import full_title
from model.data.token_labels import HIGHLIGHT

MIN_POINT_SIZE = 7.0  # the smallest legible label
LABEL_SPACE = 150.0  # px: longer labels are elided
TEXT_GAP, TICK = 4.0, 3.0  # px between a label and its tick, and the tick's length
_widths: dict[tuple[str, float], float] = {}  # (text, point size) -> width in px, shared by every axis


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


def fit_axis_label(axis: pg.AxisItem, text: str) -> None:
    """``text`` as ``axis``'s title, cut with "…" to the axis' length and centred (explorer/widgets/axis_titles.py);
    nothing is drawn again when it is the title already."""
    if full_title(axis) != text:
        axis.setLabel(text)


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
        self.shown_texts: list[str] = []  # the text each drawn label shows (ending with "…" when shortened)
        # Kept as a pixmap between changes: replaying the QPicture pyqtgraph caches re-shapes every label.
        self.setCacheMode(self.CacheMode.DeviceCoordinateCache)
        self._all_widths: dict[float, np.ndarray] = {}  # point size -> [tokens] widths
        self._layout: tuple[float, bool, int] | None = None
        self._drawn_for: tuple | None = None  # the view's range and place the picture was drawn for
        self.name = ""  # what the axis holds ("query", "key"); it says so when labels are thinned
        self.title: str = ""  # the whole title (shown cut with "…" where the axis is shorter)
        self.geometryChanged.connect(self.check_picture)

    def set_name(self, name: str) -> None:
        self.name = name
        self._label_thinning()

    def _label_thinning(self) -> None:
        """The axis title says when only every n-th token is labelled, and how to see them all (zooming in, with
        Ctrl+wheel or a drag, labels every token it shows)."""
        if not self.name:
            return
        thinned = self.every > 1 and self.tokens is not None
        self.title = f"{self.name} (every {ordinal(self.every)})" if thinned else self.name  # short: a low axis is short
        fit_axis_label(self, self.title)

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
        self.check_picture()

    def _linkToView_internal(self, view) -> None:  # noqa: N802 - pyqtgraph's name
        super()._linkToView_internal(view)
        view.geometryChanged.connect(self.check_picture)  # moved without a resize: the labels move with it

    def resizeEvent(self, event=None) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.relayout()
        self.check_picture()

    def _view_state(self) -> tuple | None:
        """What the labels' places depend on: the view's range, its rectangle in this axis' coordinates, the
        axis' own size and the labels' layout."""
        view = self.linkedView()
        if view is None or getattr(self, "tokens", None) is None:
            return None
        (x0, x1), (y0, y1) = view.viewRange()
        along = view.mapRectToItem(self, view.boundingRect())
        size = self.size()
        return (x0, x1, y0, y1, along.x(), along.y(), along.width(), along.height(), size.width(), size.height(), self._layout)

    def check_picture(self) -> None:
        """Draw the labels again when what places them changed since the picture was drawn (the picture and the
        cached pixmap would otherwise keep labels where the cells were)."""
        drawn_for = getattr(self, "_drawn_for", None)  # None while pyqtgraph's __init__ still runs
        if drawn_for is not None and self._view_state() != drawn_for:
            self._drawn_for = None
            self.picture = None
            self.update()

    def paint(self, p, opt, widget) -> None:
        if self.picture is not None and getattr(self, "_drawn_for", None) not in (None, self._view_state()):
            self.picture = None
        super().paint(p, opt, widget)

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
        self._drawn_for = self._view_state()
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
        self.shown_texts = []
        for (rect, flags, text, highlighted), width in zip(text_specs, widths):
            painter.setPen(highlight_pen if highlighted else text_pen)
            room = LABEL_SPACE if self.rotated else min(rect.width(), LABEL_SPACE)
            if width >= room - 0.5:  # too long (widths stop at LABEL_SPACE, so a longer one is too): end it with "…"
                text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, room)
            self.shown_texts.append(text)
            if self.rotated:  # drawn along the rect's height, reading upwards from the axis line
                painter.save()
                painter.translate(rect.center().x(), rect.bottom())
                painter.rotate(-90)
                painter.drawText(QRectF(0, -rect.width() / 2, rect.height(), rect.width()), int(flags), text)
                painter.restore()
            else:
                painter.drawText(rect, int(flags), text)
        return None
