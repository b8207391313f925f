"""The neuron view of the Explore tab: one head's query row inside (BertViz's neuron view, with positional terms).

Top: what is shown (kind, layer, head, query), the query box and "Save…". Then, left to right: the head's attention
(queries × keys; click a row to choose the query, the chosen one outlined), the query vector beside every key vector
(dimensions × keys, one diverging scale) and their elementwise products (a column sums to the unscaled score). Under
them: the scaled scores and the softmax row over the keys, and, for a model whose scores split, the four terms per key
(token·token, token·position, position·token, position·position; query part · key part) as grouped bars with the score,
their sum, as a black diamond. The last line gives the head's term shares over the sentence and its class.

It shows plain data (``show_row``: a NeuronRow, or None; ``set_queries``; ``show_message``) and says what the user
asked: ``query_chosen(row)`` and ``save_requested(path)``.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QGridLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from explorer.widgets.heatmap import DIVERGING, HeatmapView, shown_labels
from explorer.widgets.plot_style import show_light_grid
from explorer.widgets.scroll_area import scrolled
from model.neuron.splits import ABSOLUTE_TERMS, TermSplit
from model.neuron.terms import NeuronRow, class_rule, describe_terms

SAVE_FILTER = "PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf);;CSV table (*.csv)"
TITLE_SIZE = "9pt"
TITLES = {  # the maps' titles, saying what their rows are
    "attention": "the head's attention (a row per query)",
    "vectors": "query, then every key (a row per dimension)",
    "products": "query ⊙ key (a row per dimension)",
}


class ClickableMap(HeatmapView):
    """A heatmap whose cells can be clicked (the head's attention: a row chooses the query)."""

    cell_clicked = Signal(int, int)  # row, column

    def __init__(self, colormap_name: str = "viridis", value_label: str = "attention weight") -> None:
        super().__init__(colormap_name, value_label)
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def _on_clicked(self, event) -> None:
        cell = self.cell_at(event.scenePos())
        if cell is not None and event.button() == Qt.MouseButton.LeftButton:
            self.cell_clicked.emit(*cell)


class DimensionMap(HeatmapView):
    """Dimensions (rows) × keys (columns): the tooltip names both."""

    def describe_cell(self, query: int, key: int) -> str:
        return f"dimension {query + 1}, {self.display_key_labels[key]!r}: {self.values[query, key]:.4f}"


def bar_plot(title: str) -> pg.PlotWidget:
    """A plot of one bar per key, ``title`` above it (horizontal: a rotated left title is longer than a low plot is
    high), its values read as they are (no SI scale factor: "0.002", not "2 (x0.001)")."""
    plot = pg.PlotWidget()
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(x=False, y=False)
    show_light_grid(plot)
    plot.setTitle(title, size=TITLE_SIZE)
    plot.getAxis("left").enableAutoSIPrefix(False)
    return plot


def _sentence(text: str) -> str:
    """``text`` with its first letter upper-case (the rest as written: "LayerNorm" stays)."""
    return text[:1].upper() + text[1:]


def row_axis_untitled(view: HeatmapView) -> None:
    """No rotated title on the map's row axis (longer than a low map is high: "nension (every 5th)"): the map's
    title says what its rows are."""
    axis = view.plot.getAxis("left")
    axis.set_name("")
    axis.showLabel(False)


def limit_of(values: np.ndarray) -> float:
    finite = np.abs(values[np.isfinite(values)])
    return max(float(finite.max()) if finite.size else 1.0, 1e-9)


MAP_MIN_HEIGHT = 170  # px: a heatmap keeps its title, key labels and a few rows readable
BAR_MIN_HEIGHT = 120  # px: a bar plot keeps its title, bars and key labels


class NeuronPlots(QWidget):
    """The view's six plots: the head's attention, the vectors and their products (maps), the scores, the weights
    and the terms (bars). Built when the view first shows a row or is first shown (pyqtgraph's plots cost a third of
    a window's building; most sessions never open the view)."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = ClickableMap()
        self.vectors = DimensionMap(DIVERGING, "q, k")
        self.products = DimensionMap(DIVERGING, "q ⊙ k")
        for view in (self.attention, self.vectors, self.products):
            row_axis_untitled(view)
        self.scores, self.weights = bar_plot("scaled score QKᵀ/√d_k"), bar_plot("softmax weight")
        self.terms = bar_plot("terms (◆ = the score)")
        self.score_bars, self.weight_bars = pg.BarGraphItem(x=[], height=[], width=0.7), pg.BarGraphItem(x=[], height=[], width=0.7)
        self.scores.addItem(self.score_bars)
        self.weights.addItem(self.weight_bars)
        self.sums = pg.ScatterPlotItem(symbol="d", size=8, brush="k", pen=None)
        self.terms.addItem(self.sums)
        self.term_bars: list[pg.BarGraphItem] = []
        self.term_split = ABSOLUTE_TERMS
        self.set_term_split(ABSOLUTE_TERMS)
        self._lay_out()

    def set_term_split(self, split: TermSplit) -> None:
        """One bar series per term of ``split``, in its colours; the score's axis says how."""
        for bars in self.term_bars:
            self.terms.removeItem(bars)
        self.term_bars = [pg.BarGraphItem(x=[], height=[], width=0.2, brush=colour) for colour in split.colours]
        for bars in self.term_bars:
            self.terms.addItem(bars)
        self.term_split = split
        self.scores.setTitle(split.score_label, size=TITLE_SIZE)

    def _lay_out(self) -> None:
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        for view in (self.attention, self.vectors, self.products):
            view.setMinimumHeight(MAP_MIN_HEIGHT)
        for plot in (self.scores, self.weights, self.terms):
            plot.setMinimumHeight(BAR_MIN_HEIGHT)
        for column, view in enumerate((self.attention, self.vectors, self.products)):
            grid.addWidget(view, 0, column)
        for column, plot in enumerate((self.scores, self.weights, self.terms)):
            grid.addWidget(plot, 1, column)
        grid.setRowStretch(0, 3)
        grid.setRowStretch(1, 2)

    def clear(self) -> None:
        empty = np.zeros((0, 0), np.float32)
        for view in (self.attention, self.vectors, self.products):
            view.set_matrix(empty, [], [], "")
        for bars in (self.score_bars, self.weight_bars, *self.term_bars):
            bars.setOpts(x=[], height=[])
        self.sums.setData([], [])

    def draw(self, row: NeuronRow) -> None:
        keys = shown_labels(row.key_tokens)
        self.attention.set_matrix(row.head_weights, row.query_tokens, row.key_tokens, TITLES["attention"], row.query)
        dimensions = [str(d + 1) for d in range(row.d_k)]
        vectors = np.concatenate([row.query_vector[:, None], row.key_vectors.T], axis=1)  # [d_k, 1 + K]
        limit = limit_of(vectors)
        columns = [f"q: {shown_labels(row.query_tokens)[row.query]}", *keys]  # as people read them ("word" level: as given)
        self.vectors.set_matrix(vectors, dimensions, columns, TITLES["vectors"], None, (-limit, limit), "word")
        limit = limit_of(row.products)
        self.products.set_matrix(row.products, dimensions, keys, TITLES["products"], None, (-limit, limit), "word")
        self.draw_bars(row)

    def draw_bars(self, row: NeuronRow) -> None:
        keys = shown_labels(row.key_tokens)
        positions = np.arange(len(keys), dtype=np.float64)
        step = self._tick_step(keys)
        ticks = [[(float(index), label) for index, label in enumerate(keys) if index % step == 0]]
        scores = np.where(np.isfinite(row.scores), row.scores, 0.0)
        self.score_bars.setOpts(x=positions, height=scores, width=0.7, brush="#555555")
        self.weight_bars.setOpts(x=positions, height=row.weights, width=0.7, brush="#4c78a8")
        for plot in (self.scores, self.weights, self.terms):
            plot.getAxis("bottom").setTicks(ticks)
            plot.setXRange(-0.6, len(keys) - 0.4, padding=0.0)
        self.weights.setYRange(0.0, 1.0, padding=0.02)
        if row.term_split != self.term_split:
            self.set_term_split(row.term_split)
        terms = row.terms if row.terms is not None else np.zeros((len(self.term_bars), len(keys)))
        width = 0.8 / len(self.term_bars)
        for index, bars in enumerate(self.term_bars):
            x = positions - 0.4 + width * (index + 0.5)
            bars.setOpts(x=x, height=np.nan_to_num(terms[index], nan=0.0), width=width)
        visible = np.isfinite(row.scores) & (row.terms is not None)
        self.sums.setData(positions[visible], row.scores[visible])

    def _tick_step(self, keys: list[str]) -> int:
        """Every how many keys a bar plot labels, so that its labels do not run into each other at its width."""
        widest = max((self.fontMetrics().horizontalAdvance(key) for key in keys), default=0) + 8
        room = max(self.scores.getViewBox().width(), 100.0)  # the plot's drawing width in pixels
        return max(1, math.ceil(len(keys) * widest / room))


class NeuronView(QWidget):
    query_chosen = Signal(int)  # the query row, from 0
    save_requested = Signal(str)  # path: the row shown as a figure or a CSV, by the suffix

    def __init__(self) -> None:
        super().__init__()
        self.row: NeuronRow | None = None
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setStyleSheet("font-style: italic;")
        self.query_box = QComboBox()
        self.query_box.setToolTip("The query whose row is shown (or click a row of the head's attention)")
        self.query_box.activated.connect(lambda index: self.query_chosen.emit(index))
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Write the row shown: its figure (PNG, SVG, PDF) or every number of it (CSV)")
        self.save_button.clicked.connect(self._on_save_clicked)
        self.shares = QLabel()
        self.shares.setWordWrap(True)
        self.shares.setToolTip(f"{ABSOLUTE_TERMS.note}. {class_rule(ABSOLUTE_TERMS)}")
        self._plots: NeuronPlots | None = None
        self._plots_holder = QWidget()  # in a scroll area: a short window scrolls the plots rather than flattening them
        self._plots_layout = QVBoxLayout(self._plots_holder)
        self._plots_layout.setContentsMargins(0, 0, 0, 0)
        self._lay_out()

    @property
    def plots(self) -> NeuronPlots:
        """The six plots, built on first use."""
        if self._plots is None:
            self._plots = NeuronPlots()
            self._plots.attention.cell_clicked.connect(lambda row, _key: self.query_chosen.emit(row))
            self._plots_layout.addWidget(self._plots)
        return self._plots

    @property
    def attention(self) -> ClickableMap:
        return self.plots.attention

    @property
    def vectors(self) -> DimensionMap:
        return self.plots.vectors

    @property
    def products(self) -> DimensionMap:
        return self.plots.products

    def _lay_out(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(QLabel("Query:"))
        top.addWidget(self.query_box)
        top.addWidget(self.save_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(scrolled(self._plots_holder), 1)
        layout.addWidget(self.shares)

    # --- what the controller gives --------------------------------------------------------------
    def show_message(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def set_queries(self, labels: list[str], chosen: int) -> None:
        """The query box's labels ("3 · chat") and the chosen one."""
        items = [f"{index + 1} · {label}" for index, label in enumerate(labels)]
        if items != [self.query_box.itemText(i) for i in range(self.query_box.count())]:
            self.query_box.clear()
            self.query_box.addItems(items)
        self.query_box.setCurrentIndex(chosen)

    def show_row(self, row: NeuronRow | None) -> None:
        self.row = row
        self.save_button.setEnabled(row is not None)
        if row is None:
            self.title.setText("")
            self.shares.setText("")
            if self._plots is not None:
                self._plots.clear()
            return
        self.title.setText(f"<b>{html.escape(row.title())}</b>")  # a token such as "</s>" is text, not a tag
        self.plots.draw(row)
        self.shares.setToolTip(f"{row.term_split.note}. {class_rule(row.term_split)}")
        self.shares.setText(self._share_line(row))

    def _share_line(self, row: NeuronRow) -> str:
        if row.shares is None:
            return "This model adds no positional table: its scores are not split into positional terms."
        split = row.term_split
        swatches = "  ".join(
            f'<span style="color:{colour}">■</span> {name} {float(share):.0%}'
            for name, colour, share in zip(split.names, split.colours, row.shares)
        )
        return (
            f"Terms (◆ = the score, their sum). The head's shares over the sentence: {swatches} — "
            f"<b>{describe_terms(row.shares, split)}</b>. {_sentence(split.position.format(row.positions))}."
        )

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """The plots are built when the view is first shown, before a row comes."""
        super().showEvent(event)
        _ = self.plots

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """The bar plots' labels thinned again for the new width."""
        super().resizeEvent(event)
        if self.row is not None and self._plots is not None:
            self._plots.draw_bars(self.row)

    def _on_save_clicked(self) -> None:
        if self.row is None:
            return
        name = f"neuron_{self.row.kind}_L{self.row.layer + 1}_H{self.row.head + 1}_q{self.row.query + 1}.png"
        path, _ = QFileDialog.getSaveFileName(self, "Save the neuron view", name, SAVE_FILTER)
        if path:
            self.save_requested.emit(path)
