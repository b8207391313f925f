"""Where a heatmap's labels and parts are drawn, read back from Qt's geometry: for tests and the window's checks.

``label_geometry`` pairs each label an axis painted last (``TokenAxis.drawn``: what its picture, and so the screen,
shows) with its cell, both as px along the axis in the viewport: the label's centre mapped from the axis' drawn
rectangle, the cell's centre mapped from the image item (not from the arithmetic that placed the label).
``hidden_parts`` names what the panel's size cuts off: key columns, query rows, the colour bar, the title, labels.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QApplication

# explorer.widgets.heatmap.HeatmapView, which imports this module: named here, not imported (no cycle)
HeatmapView = Any

EDGE_TOLERANCE = 1.5  # px: a part this far past the viewport's edge still counts as shown (rounding)


class LabelGeometry(NamedTuple):
    token: int  # the row (query) or column (key), from 0
    text: str  # the label's whole text
    shown: str  # what is painted (ends with "…" when shortened)
    label_centre: float  # px along the axis (x for keys, y for queries), viewport coordinates
    cell_centre: float  # the cell's centre along the axis, same px, from the image item's mapping
    rect: QRectF  # the painted label's rectangle, viewport px


def settle(view: HeatmapView) -> None:
    """Let pending layout and painting happen, so the axes' ``drawn`` is what the screen shows."""
    QApplication.processEvents()
    view.grab()


def _viewport_rect(view: HeatmapView, item, rect: QRectF) -> QRectF:
    return view.viewportTransform().mapRect(item.mapRectToScene(rect))


def _cell_centre(view: HeatmapView, side: str, index: int) -> float:
    image = view.image
    n_queries, n_keys = view.values.shape
    rows, columns = image.image.shape[:2]  # image pixels
    if side == "top":
        point = image.mapToScene(QPointF((index + 0.5) * columns / n_keys, 0))
        return view.viewportTransform().map(point).x()
    point = image.mapToScene(QPointF(0, (index + 0.5) * rows / n_queries))
    return view.viewportTransform().map(point).y()


def label_geometry(view: HeatmapView, side: str, flush: bool = True) -> list[LabelGeometry]:
    if flush:
        settle(view)
    axis = view.plot.getAxis(side)
    if view.values.ndim != 2 or not view.values.size or view.image.image is None:
        return []
    texts = view.display_key_labels if side == "top" else view.display_query_labels
    n_cells = view.values.shape[1] if side == "top" else view.values.shape[0]
    found = []
    for number, (index, text, rect) in enumerate(axis.drawn):
        mapped = _viewport_rect(view, axis, rect)
        centre = mapped.center().x() if side == "top" else mapped.center().y()
        cell = _cell_centre(view, side, index) if index < n_cells else float("nan")
        shown = axis.shown_texts[number] if number < len(axis.shown_texts) else text
        found.append(LabelGeometry(index, texts[index] if index < len(texts) else text, shown, centre, cell, mapped))
        if text != found[-1].text:  # painted with another token's text: report what was painted
            found[-1] = found[-1]._replace(text=text)
    return found


def misplaced_labels(view: HeatmapView, tolerance: float = 2.0) -> list[str]:
    settle(view)
    found = []
    for side, name in (("top", "key"), ("left", "query")):
        texts = view.display_key_labels if side == "top" else view.display_query_labels
        n_cells = view.values.shape[1] if side == "top" else view.values.shape[0]
        for label in label_geometry(view, side, flush=False):
            if label.token >= n_cells:
                found.append(f"{name} label {label.text!r} is painted for cell {label.token + 1} of {n_cells} (stale)")
            elif label.text != texts[label.token]:
                found.append(f"{name} {label.token + 1} is labelled {label.text!r}, not {texts[label.token]!r}")
            elif abs(label.label_centre - label.cell_centre) > tolerance:
                offset = label.label_centre - label.cell_centre
                found.append(f"{name} label {label.text!r} (#{label.token + 1}) is {offset:+.1f} px off its cell")
    return found


def _shown_rect(view: HeatmapView) -> QRectF:
    """The part of the viewport the screen shows (a parent may cut the widget)."""
    port = QRectF(view.viewport().rect())
    region = view.viewport().visibleRegion().boundingRect()
    return port.intersected(QRectF(region)) if view.isVisible() else QRectF()


def _inside(rect: QRectF, shown: QRectF) -> bool:
    grown = shown.adjusted(-EDGE_TOLERANCE, -EDGE_TOLERANCE, EDGE_TOLERANCE, EDGE_TOLERANCE)
    return grown.contains(rect)


def _cut_cells(view: HeatmapView, shown: QRectF) -> list[str]:
    """Columns and rows of the matrix inside the view box's range whose cells reach past the shown area."""
    if view.values.ndim != 2 or not view.values.size or view.image.image is None or not view.image.isVisible():
        return []
    n_queries, n_keys = view.values.shape
    (x0, x1), (y0, y1) = view.plot.vb.viewRange()
    rows, columns = view.image.image.shape[:2]
    found = []
    for key in range(max(0, int(x0)), min(n_keys, int(x1 + 0.999))):
        cell = _viewport_rect(view, view.image, QRectF(key * columns / n_keys, 0, columns / n_keys, 1))
        if cell.left() < shown.left() - EDGE_TOLERANCE or cell.right() > shown.right() + EDGE_TOLERANCE:
            found.append(
                f"key column {key + 1} {view.display_key_labels[key]!r}"
                if key < len(view.display_key_labels)
                else f"key column {key + 1}"
            )
    for query in range(max(0, int(y0)), min(n_queries, int(y1 + 0.999))):
        cell = _viewport_rect(view, view.image, QRectF(0, query * rows / n_queries, 1, rows / n_queries))
        if cell.top() < shown.top() - EDGE_TOLERANCE or cell.bottom() > shown.bottom() + EDGE_TOLERANCE:
            label = view.display_query_labels[query] if query < len(view.display_query_labels) else ""
            found.append(f"query row {query + 1} {label!r}")
    return found


def hidden_parts(view: HeatmapView) -> list[str]:
    settle(view)
    shown = _shown_rect(view)
    if shown.isEmpty():
        return []
    found = _cut_cells(view, shown)
    bar = view.color_bar
    if bar.isVisible() and not _inside(_viewport_rect(view, bar, bar.boundingRect()), shown):
        found.append("colour bar")
    title = view.title_item
    if title.text and not _inside(_viewport_rect(view, title, title.boundingRect()), shown):
        found.append("title")
    for side, name in (("top", "key"), ("left", "query")):
        axis = view.plot.getAxis(side)
        if not axis.isVisible():
            continue
        for label in label_geometry(view, side, flush=False):
            along = label.rect.center().x() if side == "top" else label.rect.center().y()
            low, high = (shown.left(), shown.right()) if side == "top" else (shown.top(), shown.bottom())
            if not low - EDGE_TOLERANCE <= along <= high + EDGE_TOLERANCE:
                found.append(f"{name} label {label.text!r}")
        edge = _viewport_rect(view, axis, QRectF(0, 0, axis.width(), axis.height()))
        if not _inside(edge, shown):
            found.append(f"{name} axis")
    return found
