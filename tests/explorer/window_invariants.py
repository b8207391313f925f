"""What must hold of the main window after any action (issue 39), as checkers that return what is wrong (one line
each, empty when all is well): the stateful window test (tests/explorer/test_window_states.py) and its long run
(benchmarks/window_states.py) call ``problems(window, size)`` after every action.

- ``matrix_problems``: each view's matrix (the focus heatmap's image data, the grid's, the lines') equals the trace's
  for the selection the boxes show (kind, layer, head or aggregate, pieces or words, the reading), computed here from
  the Explore controller's trace (model/decoding/trace.py), not through the tab's own selection code; the labels are
  the trace's tokens and the step is the slider's.
- ``label_problems``: every heatmap's token labels are centred on their cells, from the widgets' geometry: where each
  label was last painted (``TokenAxis.drawn``, what the cached picture shows) against the cell's centre mapped from
  the image item (the focus) or the linked view (the other heatmaps).
- ``title_problems``: every title and caption names what is drawn (kind, layer, head, measure, snapshot, step).
- ``clipping_problems``: nothing that holds data is clipped without a visible sign (a scroll bar or "…"): the window
  takes the size asked, labels' text fits or ends with "…", a plot's scene fits its view, token chips fit their row.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF, QTextDocument
from PySide6.QtWidgets import QAbstractScrollArea, QLabel, QWidget

from explorer.widgets.heatmap import HeatmapView
from explorer.widgets.tokens_view import TokensView
from model.decoding.trace import Trace
from model.inspection.heads import mean_over_heads, rollout
from model.inspection.measure_catalogue import MEASURES
from model.inspection.selection import measure_place
from model.kinds import AttentionKind

LABEL_TOLERANCE_PX = 3.0  # a label's centre this far from its cell's centre is off it (rounding is ~1 px)
ELLIPSIS = "…"


# --- the matrices --------------------------------------------------------------------------------------------
def expected_matrix(weights: np.ndarray, layer: int, head: int | str) -> np.ndarray:
    """[queries, keys] of ``weights`` [layers, heads, queries, keys] for a head or an aggregate (independently of the
    tab's selection code: NumPy and the core's head aggregates)."""
    if isinstance(head, int):
        return weights[layer, head]
    if head == "mean":
        return mean_over_heads(weights)[layer]
    if head == "max":
        return weights[layer].max(axis=0)
    return rollout(weights)[layer]


def chosen(tab) -> tuple[AttentionKind, int, int | str, bool, str]:
    """(kind, layer from 0, head or aggregate, word level, reading) as the boxes show them."""
    kind = tab.kind.currentData()
    return (
        AttentionKind.parse(kind) if kind is not None else tab.current_kind(),
        tab.layer_box.value() - 1,
        tab.head_box.currentData(),
        tab.word_level.isChecked(),
        tab.measure_box.measure,
    )


def drawn_trace(tab, trace: Trace, measure: str) -> tuple[Trace | None, str]:
    """(the trace whose numbers the views must show for the reading chosen, a problem or ""): the weights, or the
    measured copy when the reading is a measure that can be shown (else the hint must say why the weights are shown)."""
    if measure == "attention":
        return trace, ""
    view_trace = tab.view_trace
    if view_trace is not None and view_trace is not trace and view_trace.measure == measure:
        return view_trace, ""
    hint = tab.hint.text() if tab.hint.isVisible() else ""
    if "showing the attention weights" in hint or "attention weights until" in hint:
        return trace, ""
    if not trace.n_steps and tab.current_kind() is not AttentionKind.ENCODER:
        return trace, ""  # nothing decoded yet: the weights (empty rows)
    return None, f"the Reading box says {MEASURES[measure].label!r} but the views draw {view_trace.measure or 'the weights'!r}" if (
        view_trace is not None
    ) else "the Reading box names a measure but nothing is drawn"


def matrix_problems(window) -> list[str]:
    tab, explore = window.explore_tab, window.explore
    trace = explore.trace
    if trace is None:
        return [] if tab.focus.values.size == 0 else ["no trace, yet the focus draws a matrix"]
    found = []
    offered = [AttentionKind.parse(tab.kind.itemData(i)) for i in range(tab.kind.count())]
    if offered != list(trace.kinds):
        found.append(f"the kind box offers {[str(k) for k in offered]} but the trace holds {[str(k) for k in trace.kinds]}")
    kind, layer, head, words, measure = chosen(tab)
    if kind is not tab.current_kind():
        found.append(f"the kind box shows {kind} but the views draw {tab.current_kind()}")
    if kind not in trace.kinds:
        return found + [f"the kind box shows {kind}, which the trace does not hold"]
    partner = tab.over_training.partner(trace)  # a difference of two snapshots: of their attention weights
    source, problem = (trace, "") if partner is not None else drawn_trace(tab, trace, measure)
    if source is None:
        return found + [problem]
    shown = source.word_level() if words else source
    weights = other = shown.matrix(kind)  # [layers, heads, queries, keys]
    if partner is not None:
        other = (partner.word_level() if words else partner).matrix(kind)
        if other.shape != weights.shape:
            return found + [f"the compared snapshot's {kind} is {other.shape}, the explored one's {weights.shape}"]
    if not 0 <= layer < weights.shape[0]:
        return found + [f"the layer box shows layer {layer + 1} of a trace with {weights.shape[0]}"]
    if head == "rollout" and not kind.is_self_attention:
        head = "mean"  # rollout is for self-attention: the mean is drawn, and the hint says so
        if "Rollout" not in tab.hint.text():
            found.append("the head box shows rollout of cross-attention and no hint says the mean is drawn")
    if isinstance(head, int) and not 0 <= head < weights.shape[1]:
        return found + [f"the head box shows head {head + 1} of {weights.shape[1]}"]
    # A difference of snapshots: each one's head, mean, max or rollout first, then after - before, as the exported
    # figure (model/timeline/difference.py); max(a) - max(b) is not max(a - b), nor rollout(a) - rollout(b) rollout(a - b).
    expected = expected_matrix(weights, layer, head)
    if partner is not None:
        expected = expected - expected_matrix(other, layer, head)  # [queries, keys]
    queries, keys = shown.axis_labels(kind)
    found += focus_matrix_problems(tab, expected, queries, keys, f"{kind} layer {layer + 1} {head}")
    grid = weights - other if partner is not None else weights  # the grid: each head's difference
    found += other_view_problems(tab, grid, weights, layer)  # the lines: the explored snapshot's, never a difference
    found += step_problems(window, trace)
    return found


def focus_matrix_problems(tab, expected: np.ndarray, queries, keys, what: str) -> list[str]:
    """The focus draws ``expected`` [queries, keys] with the trace's tokens as labels (when it is shown)."""
    focus = tab.focus
    if not focus.isVisibleTo(tab):
        return []
    found = []
    if focus.query_labels != list(queries) or focus.key_labels != list(keys):
        found.append(f"the focus' labels are not the trace's tokens for {what}")
    if focus.values.shape != expected.shape:
        return found + [f"the focus draws a {focus.values.shape} matrix; the trace's {what} is {expected.shape}"]
    if focus.values.size and not np.allclose(focus.values, expected, atol=1e-4, equal_nan=True):
        worst = float(np.nanmax(np.abs(focus.values - expected)))
        found.append(f"the focus' matrix differs from the trace's {what} by up to {worst:.3g}")
    image = focus.image.image
    if focus.values.size and (image is None or not np.allclose(image, focus.values, equal_nan=True) or not focus.image.isVisible()):
        found.append("the focus' image does not draw its values")
    return found


def other_view_problems(tab, weights: np.ndarray, plain_weights: np.ndarray, layer: int) -> list[str]:
    """The grid (``weights``: a difference of snapshots while one is shown) or the lines (``plain_weights``),
    whichever is shown, hold the same trace."""
    weights_of_lines = plain_weights
    shown = tab.views.currentWidget()
    if shown is tab.grid and tab.grid.isVisibleTo(tab) and not tab.grid.empty:
        if tab.grid.weights.shape != weights.shape or not np.allclose(tab.grid.weights, weights, atol=1e-5, equal_nan=True):
            return [f"the model grid holds {tab.grid.weights.shape}, not the trace's {weights.shape} weights"]
    if shown is tab.lines and tab.lines.isVisibleTo(tab) and weights.shape[2]:
        lines, wanted = tab.lines.weights, weights_of_lines[layer]
        if lines.shape != wanted.shape or not np.allclose(lines, wanted, atol=1e-5, equal_nan=True):
            return [f"the lines view holds {lines.shape}, not the trace's layer {layer + 1} {wanted.shape}"]
    return []


def step_problems(window, trace: Trace) -> list[str]:
    tab, explore = window.explore_tab, window.explore
    found = []
    if tab.controls.slider.value() != explore.current_step:
        found.append(f"the step slider shows {tab.controls.slider.value()}, the decoding is at step {explore.current_step}")
    if tab.target_tokens.tokens != list(trace.target_tokens):
        found.append("the Target row is not the trace's target tokens")
    if tab.source_tokens.tokens != list(trace.source_tokens):
        found.append("the Source pieces row is not the trace's source pieces")
    return found


# --- labels on their cells -------------------------------------------------------------------------------------
def is_token_axis(item) -> bool:
    """An axis labelling cells with tokens (explorer/widgets/heatmap.py's TokenAxis, wherever it lives)."""
    return hasattr(item, "drawn") and hasattr(item, "tokens") and hasattr(item, "cell")


def axis_label_problems(axis, name: str, cell_centre, n_cells: int, texts: list[str]) -> list[str]:
    """Each label ``axis`` painted last against ``cell_centre(index)`` (scene px along the axis)."""
    vertical = axis.orientation in ("left", "right")
    found, offsets = [], []
    for index, text, rect in axis.drawn:
        if index >= n_cells:
            found.append(f"{name}: a label is painted for cell {index + 1} of {n_cells} ({text!r}: stale)")
            continue
        if index < len(texts) and text != texts[index]:
            found.append(f"{name}: cell {index + 1} is labelled {text!r}, not {texts[index]!r}")
        centre = axis.mapToScene(rect.center())
        along = centre.y() if vertical else centre.x()
        offsets.append((abs(along - cell_centre(index)), index, text))
    if offsets:
        offset, index, text = max(offsets)
        if offset > LABEL_TOLERANCE_PX:
            spacing = ""
            if len(axis.drawn) > 1:
                first, second = (axis.mapToScene(rect.center()) for _, _, rect in axis.drawn[:2])
                gap = (second.y() - first.y()) if vertical else (second.x() - first.x())
                cell = abs(cell_centre(1) - cell_centre(0)) if n_cells > 1 else 0.0
                spacing = f" (labels {abs(gap):.0f} px apart over {cell:.0f} px cells)"
            found.append(f"{name}: label {text!r} of cell {index + 1} is {offset:.0f} px off its cell{spacing}")
    return found


def heatmap_label_problems(heatmap: HeatmapView, name: str) -> list[str]:
    """The focus (or a side-by-side panel): cell centres mapped from the image item, not from the axis' arithmetic."""
    if not heatmap.isVisible() or heatmap.values.ndim != 2 or not heatmap.values.size:
        return []
    n_queries, n_keys = heatmap.values.shape
    image = heatmap.image

    def key_centre(index: int) -> float:
        width = image.image.shape[1] / n_keys  # image pixels per cell
        return image.mapToScene(QPointF((index + 0.5) * width, 0)).x()

    def query_centre(index: int) -> float:
        height = image.image.shape[0] / n_queries
        return image.mapToScene(QPointF(0, (index + 0.5) * height)).y()

    top, left = heatmap.plot.getAxis("top"), heatmap.plot.getAxis("left")
    return axis_label_problems(top, f"{name} key labels", key_centre, n_keys, heatmap.display_key_labels) + axis_label_problems(
        left, f"{name} query labels", query_centre, n_queries, heatmap.display_query_labels
    )


def linked_axis_problems(axis, name: str) -> list[str]:
    """Any other token axis (the grid's): cell centres from the linked view's mapping of the axis' cells."""
    view = axis.linkedView()
    if view is None or not axis.tokens or not axis.isVisible():
        return []
    vertical = axis.orientation in ("left", "right")

    def centre(index: int) -> float:
        value = axis.offset + (index + 0.5) * axis.cell
        point = view.mapViewToScene(QPointF(0, value) if vertical else QPointF(value, 0))
        return point.y() if vertical else point.x()

    return axis_label_problems(axis, name, centre, len(axis.tokens), axis.tokens)


def label_problems(window) -> list[str]:
    tab = window.explore_tab
    found = heatmap_label_problems(tab.focus, "focus")
    for side, heatmap in enumerate(tab.compare_view.heatmaps):
        found += heatmap_label_problems(heatmap, f"side-by-side panel {side + 1}")
    interventions = tab.interventions.view
    for heatmap, name in ((interventions.lens, "logit lens"), (interventions.attribution.heads, "attribution heads")):
        found += heatmap_label_problems(heatmap, name)
    if tab.grid.isVisible():
        for item in tab.grid.plot.axes.values():
            if is_token_axis(item["item"]):
                found += linked_axis_problems(item["item"], "model grid")
    return found


# --- titles and captions ---------------------------------------------------------------------------------------
def plain(text: str) -> str:
    document = QTextDocument()
    document.setHtml(text)
    return document.toPlainText()


def title_problems(window) -> list[str]:
    tab, explore = window.explore_tab, window.explore
    trace = explore.trace
    if trace is None or not trace.kinds or tab.over_training.partner(trace) is not None:
        return []
    found = []
    kind, layer, head, _words, measure = chosen(tab)
    if tab.focus.isVisible() and tab.focus.values.size:
        title = plain(tab.focus.plot.titleLabel.text)
        source = tab.view_trace if tab.view_trace is not None else trace
        what = MEASURES[source.measure].label if source.measure else kind.label
        named_layer = not source.measure or "layer" in measure_place(source.measure, layer, head)
        wanted = [what, f"layer {layer + 1}"] if named_layer else [what]
        per_head = not source.measure or MEASURES[source.measure].per_head
        if per_head:
            wanted.append(
                f"head {head + 1}"
                if isinstance(head, int)
                else ("mean" if head == "rollout" and not kind.is_self_attention else str(head))
            )
        if explore.snapshot:
            wanted.append(explore.snapshot.split(" of ")[0])
        missing = [part for part in wanted if part.lower() not in title.lower()]
        if missing:
            found.append(f"the focus' title {title!r} does not name {missing}")
    candidates = tab.candidates
    if candidates.isVisible() and trace.n_steps and len(trace.candidate_ids) == trace.n_steps:
        title = plain(candidates.getPlotItem().titleLabel.text)
        if f"step {trace.n_steps}" not in title:
            found.append(f"the candidates' title {title!r} does not name step {trace.n_steps}")
    if tab.grid.isVisible() and explore.snapshot and explore.snapshot.split(" of ")[0] not in plain(tab.grid.title):
        found.append(f"the model grid's title {tab.grid.title!r} does not name the snapshot {explore.snapshot!r}")
    return found


# --- clipping ------------------------------------------------------------------------------------------------
def scrolled(widget: QWidget) -> bool:
    """Whether ``widget`` sits in a scroll area whose scroll bar shows (a visible sign that more is there)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea):
            bars = (parent.horizontalScrollBar(), parent.verticalScrollBar())
            if any(bar.isVisible() and bar.maximum() > bar.minimum() for bar in bars):
                return True
        parent = parent.parentWidget()
    return False


def label_clipped(label: QLabel) -> str:
    """Why ``label``'s text does not fit it without an ellipsis ("" when it fits, wraps or ends with "…")."""
    text = label.text()
    if not text or label.wordWrap() or not label.isVisible():
        return ""
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and "<" in text and ">" in text
    )
    shown = plain(text) if rich else text
    if shown.rstrip().endswith(ELLIPSIS):
        return ""
    metrics = QFontMetricsF(label.font())
    width = max(metrics.horizontalAdvance(line) for line in shown.split("\n")) if shown else 0.0
    room = (
        label.contentsRect().width() - 2 * label.margin() - label.indent() if label.indent() > 0 else label.contentsRect().width()
    )
    if width > room + 2:
        return f"label {shorten(shown)!r} needs {width:.0f} px, has {room} px, and shows no “…”"
    return ""


def shorten(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[: size - 1] + ELLIPSIS


def outside(widget: QWidget, window) -> str:
    """Whether part of ``widget`` lies outside the window or its parents' area (clipped by a parent)."""
    rect = QRectF(widget.rect())
    parent, child = widget.parentWidget(), widget
    offset = QPointF(0, 0)
    while parent is not None and child is not window:
        offset += QPointF(child.pos())
        area = QRectF(parent.rect()).translated(-offset)  # the parent's area in the widget's coordinates
        if isinstance(parent, QAbstractScrollArea) or parent.inherits("QScrollArea"):
            return ""
        if not area.contains(rect.adjusted(1, 1, -1, -1)):
            cut = rect.width() - area.intersected(rect).width(), rect.height() - area.intersected(rect).height()
            return f"{cut[0]:.0f}×{cut[1]:.0f} px cut by {type(parent).__name__}"
        child, parent = parent, parent.parentWidget()
    return ""


def graphics_clipped(view: pg.GraphicsView) -> str:
    """A pyqtgraph view whose scene (its plots, colour bar, titles) is larger than its viewport: cut, no scroll bar."""
    central = getattr(view, "centralWidget", None)
    if central is None or not central.isVisible():
        return ""
    drawn = view.mapFromScene(central.sceneBoundingRect()).boundingRect()  # in the view's px
    port = view.viewport().rect()
    cut_x = max(0, port.left() - drawn.left()) + max(0, drawn.right() - port.right())
    cut_y = max(0, port.top() - drawn.top()) + max(0, drawn.bottom() - port.bottom())
    if cut_x > 2 or cut_y > 2:
        size = f"{drawn.width()}×{drawn.height()} px in a {port.width()}×{port.height()} px view"
        return f"its plots are {size}: {cut_x}×{cut_y} px cut, no scroll bar"
    return ""


def axis_titles_clipped(view: pg.GraphicsView) -> list[str]:
    """Each axis title of a pyqtgraph view longer than its axis and not cut with "…" (pyqtgraph centres it on the axis
    and the view cuts both its ends: "yer, attention (ever")."""
    found = []
    for item in view.scene().items() if view.scene() is not None else []:
        if not isinstance(item, pg.AxisItem) or not item.isVisible() or not item.label.isVisible() or not item.labelText:
            continue
        text = plain(item.labelText)
        length = item.geometry().height() if item.orientation in ("left", "right") else item.geometry().width()
        margin = item.label.document().documentMargin()  # the text item's own, either side of the text drawn
        width = item.label.boundingRect().width() - 2 * margin
        if length > 0 and width > length + 2 and not text.endswith(ELLIPSIS):
            found.append(f"axis title {shorten(text)!r} needs {width:.0f} px, its axis is {length:.0f} px, and shows no “…”")
            continue
        drawn = item.label.mapRectToScene(item.label.boundingRect().adjusted(margin, margin, -margin, -margin))
        axis = item.mapRectToScene(item.boundingRect())
        vertical = item.orientation in ("left", "right")
        low, high = (drawn.top(), drawn.bottom()) if vertical else (drawn.left(), drawn.right())
        start, end = (axis.top(), axis.bottom()) if vertical else (axis.left(), axis.right())
        if length > 0 and (low < start - 2 or high > end + 2):
            found.append(f"axis title {shorten(text)!r} is drawn off its axis ({low:.0f}–{high:.0f} px on {start:.0f}–{end:.0f})")
    return found


def tokens_clipped(view: TokensView) -> str:
    if not view.isVisible() or not view.tokens:
        return ""
    needed = view.heightForWidth(view.width())
    if needed > view.height() + 1:
        return f"token chips need {needed} px high, have {view.height()} px"
    return ""


def clipping_problems(window, size: tuple[int, int] | None = None) -> list[str]:
    found = []
    if size is not None and (window.width(), window.height()) != tuple(size):
        hint = window.minimumSizeHint()
        found.append(
            f"the window was made {size[0]}×{size[1]} but is {window.width()}×{window.height()} "
            f"(its content needs at least {hint.width()}×{hint.height()}): the rest is off the screen"
        )
    tab = window.explore_tab
    names = named_widgets(tab)
    for widget in tab.findChildren(QWidget):
        if not widget.isVisible() or widget.width() <= 0 or widget.height() <= 0 or scrolled(widget):
            continue
        why = ""
        if isinstance(widget, QLabel):
            why = label_clipped(widget)
        elif isinstance(widget, pg.GraphicsView):
            why = graphics_clipped(widget) or "; ".join(axis_titles_clipped(widget))
        elif isinstance(widget, TokensView):
            why = tokens_clipped(widget)
        if not why and isinstance(widget, (QLabel, pg.GraphicsView, TokensView)):
            why = outside(widget, window)
            if why and isinstance(widget, QLabel) and not widget.text():
                why = ""
        if why:
            found.append(f"{names.get(id(widget)) or describe(widget)}: {why}")
    return found


def named_widgets(tab) -> dict[int, str]:
    """The tab's data-holding widgets by the name a user knows them by."""
    named = {
        "the focus heatmap": tab.focus,
        "the model grid": tab.grid,
        "the candidates": tab.candidates,
        "the predictions": tab.predictions,
        "the Source pieces row": tab.source_tokens,
        "the Target row": tab.target_tokens,
        "the hint": tab.hint,
        "the timeline's snapshot line": tab.over_training.bar.details,
        "the timeline's snapshot name": tab.over_training.bar.name,
    }
    named.update({f"side-by-side heatmap {i + 1}": heatmap for i, heatmap in enumerate(tab.compare_view.heatmaps)})
    return {id(widget): name for name, widget in named.items()}


def describe(widget: QWidget) -> str:
    """The widget's class, its text, and where it sits (the tab's attribute holding it, or its parents' classes)."""
    name = type(widget).__name__
    path, parent = [], widget.parentWidget()
    while parent is not None and len(path) < 3:
        path.append(type(parent).__name__)
        parent = parent.parentWidget()
    name = f"{name} (in {' < '.join(path)})" if path else name
    if isinstance(widget, QLabel):
        return f"{name} {shorten(plain(widget.text()), 40)!r}"
    if isinstance(widget, TokensView):
        return f"{name} {widget.caption!r}" if hasattr(widget, "caption") else name
    return name


def problems(window, size: tuple[int, int] | None = None) -> list[str]:
    """Everything wrong with the window now (empty when every invariant holds)."""
    return matrix_problems(window) + label_problems(window) + title_problems(window) + clipping_problems(window, size)
