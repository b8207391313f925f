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

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, QSize
from PySide6.QtWidgets import QGraphicsRectItem, QToolTip

from explorer.widgets import heatmap_geometry
from explorer.widgets.heatmap_geometry import LabelGeometry
from explorer.widgets.heatmap_title import WrappedTitle
from explorer.widgets.plot_style import items_minimum
from explorer.widgets.token_axis import (  # noqa: F401 - the heatmap's names, kept for those who import them from here
    LABEL_SPACE,
    MIN_POINT_SIZE,
    TokenAxis,
    TokenViewBox,
    fit_axis_label,
    label_font,
    line_height,
    ordinal,
    point_sizes,
    text_widths,
)
from model.data.token_labels import HIGHLIGHT, display_labels

COLORMAPS = ("viridis", "magma", "inferno", "plasma", "cividis")  # perceptually uniform


DIVERGING = "RdBu_r"  # a signed difference: blue below 0, white at 0, red above (as the core's figures draw it)
DIVERGING_COLOURS = ("#053061", "#4393c3", "#f7f7f7", "#d6604d", "#67001f")


def colormap(name: str) -> pg.ColorMap:
    if name == DIVERGING:
        return pg.ColorMap(np.linspace(0.0, 1.0, len(DIVERGING_COLOURS)), list(DIVERGING_COLOURS), name=DIVERGING)
    return pg.colormap.get(name if name in COLORMAPS else "viridis")


def shown_labels(labels: list[str], level: str | None = None) -> list[str]:
    """Labels as people read them. ``level`` None: word level when no label carries SentencePiece's
    word marker or starts with byte-level BPE's or WordPiece's continuation mark (word-level axes never do), else
    piece level."""
    if level is None:
        marked = any("▁" in str(label) or str(label).startswith(("Ġ", "##")) for label in labels)
        level = "piece" if marked else "word"
    return display_labels(list(labels), level)


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
        self._minimum = QSize()  # the minimum size the layouts were last told (minimumSizeHint)
        self.plot = self.addPlot(
            row=0, col=0, viewBox=TokenViewBox(enableMenu=False), axisItems={"left": TokenAxis("left"), "top": TokenAxis("top")}
        )
        self.plot.setMenuEnabled(False)
        self.plot.invertY(True)
        self.plot.setAspectLocked(False)
        self.plot.vb.setDefaultPadding(0.0)  # "A" frames the matrix exactly
        self.plot.showAxis("top")
        self.plot.getAxis("left").set_name("query")
        self.plot.getAxis("top").set_name("key")
        self.plot.hideAxis("bottom")
        # The title wraps to the plot's width (and ends with "…" past MAX_LINES, the whole text in its tooltip): pyqtgraph's
        # asked for the whole text's width and pushed the last columns and the colour bar out of the panel.
        self.plot.layout.removeItem(self.plot.titleLabel)
        self.plot.titleLabel.hide()
        self.plot.titleLabel = self.title_item = WrappedTitle(self.plot.layout)
        self.title_item.setParentItem(self.plot)
        self.plot.layout.addItem(self.title_item, 0, 1)
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

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """No smaller than the plot and colour bar at their minimum: a grid that gave less (the side-by-side panels at
        1024x640 with a two-line hint: 56 px for plots of 60) cut them with no scroll bar."""
        return super().minimumSizeHint().expandedTo(items_minimum(self, self.ci))

    def set_value_label(self, label: str) -> None:
        """What the colour bar measures (attention weights, or a measure's shares), cut with "…" to the bar's height."""
        self._value_label = label
        fit_axis_label(self.color_bar.getAxis("left"), label)  # where ColorBarItem puts a vertical bar's label

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
            self.title_item.setText(title)
            self._title = title
        self.plot.setRange(xRange=(0, max(n_keys, 1)), yRange=(0, max(n_queries, 1)), padding=0.0)
        self._fit_minimum()

    def _fit_minimum(self) -> None:
        """Tell the layouts above when the plots' minimum has changed (a title's lines, the labels' room): Qt keeps
        the last one it was told until then."""
        minimum = self.minimumSizeHint()
        if minimum != self._minimum:
            self._minimum = minimum
            self.updateGeometry()

    def _set_ticks(self) -> None:
        """Token labels on both axes (each axis fits them to the cells it shows), the current step's
        query in red: it stays labelled when its neighbours are thinned out."""
        self.plot.getAxis("left").set_tokens(self.display_query_labels, highlighted=self.highlighted_row)
        self.plot.getAxis("top").set_tokens(self.display_key_labels)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if hasattr(self, "plot"):
            self._set_ticks()
            self._fit_minimum()  # the title's lines follow the width
            self.set_value_label(self._value_label)  # the colour bar's title follows its height

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
        if not text and self.title_item.sceneBoundingRect().contains(scene_position):
            text = self.title_item.full_text()  # the whole title, wrapped or ended with "…" or not
        self.setToolTip(text)
        if text:
            QToolTip.showText(self.mapToGlobal(self.mapFromScene(scene_position)), text, self)
        else:
            QToolTip.hideText()

    # --- what is drawn where (tests and the window's checks read these) ---------------------------------------
    def title_text(self) -> str:
        """The whole title, as read (lines joined with newlines)."""
        return self.title_item.full_text()

    def title_elided(self) -> bool:
        """Whether the title is drawn shortened (ending with "…"); its tooltip then holds the whole text."""
        return self.title_item.elided

    def label_geometry(self, side: str) -> list[LabelGeometry]:
        """Each label painted on ``side`` ("top": keys, "left": queries) with its centre and its cell's centre along
        the axis, in px of the viewport (see explorer/widgets/heatmap_geometry.py)."""
        return heatmap_geometry.label_geometry(self, side)

    def misplaced_labels(self, tolerance: float = 2.0) -> list[str]:
        """One line per label that is not on its cell (or names another token, or a cell that does not exist)."""
        return heatmap_geometry.misplaced_labels(self, tolerance)

    def hidden_parts(self) -> list[str]:
        """The parts of the panel cut off by its size (columns, rows, colour bar, title, labels): empty when all show."""
        return heatmap_geometry.hidden_parts(self)
