"""The Corpus tab's three panels: similar tokens (the nearest tokens at a layer), head queries (the sentences where a
head behaves a given way) and the joint query-key map. Each has its controls, asks the corpus controller
(explorer/controllers/corpus.py) through the tab, and shows what the controller finds."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea, QSpinBox, QVBoxLayout, QWidget

from explorer.controllers.corpus import MapRequest, TokenResults
from explorer.widgets.corpus_tables import SentencesTable, TokenMatchesTable, TokenRow
from explorer.widgets.qk_map_view import QKMapView
from model.corpus.layout import Layer, Manifest
from model.corpus.qk import DEFAULT_SENTENCES, METHODS
from model.corpus.search import METRICS, HeadQueryResult
from model.figures.qk_map import COLOURINGS, MapPanel
from model.kinds import AttentionKind
from model.nn.masking import Head

PREDICATE_HELP = (
    "Conditions joined by 'and': NAME OP NUMBER with OP one of < <= > >= = !=, e.g. previous >= 0.5, eos >= 0.5, "
    "entropy < 0.3 (normalised, 0-1), self, next, first/bos, last/eos, punctuation, max, distance, spread, role_score; "
    "role ~ WORD (part of the role) or role = TEXT"
)


def _row(*widgets) -> QHBoxLayout:
    layout = QHBoxLayout()
    for widget in widgets:
        layout.addWidget(QLabel(widget) if isinstance(widget, str) else widget)
    layout.addStretch(1)
    return layout


def fitted_box() -> QComboBox:
    """A combo box as wide as its longest item whenever its items change (Qt's default fits them when it is first
    shown: a box shown empty, before an index, stayed too narrow: "encoder" for "encoder after layer 2")."""
    box = QComboBox()
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    return box


def _kind_box() -> QComboBox:
    box = QComboBox()
    for kind in AttentionKind:
        box.addItem(kind.label, kind.value)
    return box


class SimilarTokensPanel(QWidget):
    search_requested = Signal(object, str, int, str)  # layer, token, k, metric

    def __init__(self) -> None:
        super().__init__()
        self.layer_box, self.metric_box = fitted_box(), QComboBox()
        self.layer_box.setToolTip("The residual stream compared: a side and the layers after which it is read")
        self.metric_box.addItems(METRICS)
        self.k_box = QSpinBox()
        self.k_box.setRange(1, 1000)
        self.k_box.setValue(10)
        self.token = QLineEdit()
        self.token.setPlaceholderText("a piece of the index, e.g. cat")
        self.search_button = QPushButton("Search")
        self.query_label = QLabel("Right-click a token in the Explore tab (Find similar tokens), or search for a piece here.")
        self.query_label.setWordWrap(True)
        self.table = TokenMatchesTable()
        layout = QVBoxLayout(self)
        layout.addLayout(
            _row(
                "Layer:",
                self.layer_box,
                "Distance:",
                self.metric_box,
                "Tokens:",
                self.k_box,
                "Piece:",
                self.token,
                self.search_button,
            )
        )
        layout.addWidget(self.query_label)
        layout.addWidget(self.table, 1)
        self.search_button.clicked.connect(self._on_search)
        self.token.returnPressed.connect(self._on_search)

    def set_index(self, manifest: Manifest | None) -> None:
        self.layer_box.clear()
        for layer in manifest.layer_list if manifest else ():
            self.layer_box.addItem(f"{layer.side} after layer {layer.layer}" if layer.layer else f"{layer.side} embeddings", layer)
        if self.layer_box.count():
            encoder = [i for i in range(self.layer_box.count()) if self.layer_box.itemData(i).side == "encoder"]
            self.layer_box.setCurrentIndex(encoder[-1] if encoder else self.layer_box.count() - 1)

    @property
    def layer(self) -> Layer | None:
        return self.layer_box.currentData()

    def _on_search(self) -> None:
        if self.layer is not None and self.token.text().strip():
            self.search_requested.emit(self.layer, self.token.text().strip(), self.k_box.value(), self.metric_box.currentText())

    def show_results(self, results: TokenResults) -> None:
        self.query_label.setText(f"Nearest to {results.description} at {results.layer} ({results.metric}):")
        self.table.set_rows(
            [
                TokenRow(match.distance, match.sentence_id, match.position, match.token, match.side, match.tokens, match.output)
                for match in results.matches
            ]
        )


class HeadChoice(QWidget):
    """A panel that names a head of the index's model: a kind box and a layer box fitted to the index's layers (a
    subclass fits its own head box in ``fit_heads``)."""

    def __init__(self) -> None:
        super().__init__()
        self.kind_box = _kind_box()
        self.layer_box = QSpinBox()
        self.layer_box.setRange(1, 1)
        self.manifest: Manifest | None = None
        self.kind_box.currentIndexChanged.connect(lambda _index: self._fit_ranges())

    @property
    def kind(self) -> AttentionKind:
        return AttentionKind.parse(self.kind_box.currentData())

    def set_index(self, manifest: Manifest | None) -> None:
        """Offer the kinds of attention the index's model has (a one-stack model's one), keeping the chosen one."""
        self.manifest = manifest
        if manifest is not None:
            chosen = self.kind_box.currentData()
            self.kind_box.blockSignals(True)
            self.kind_box.clear()
            for kind in manifest.kind_list:
                self.kind_box.addItem(kind.label, kind.value)
            self.kind_box.setCurrentIndex(max(self.kind_box.findData(chosen), 0))
            self.kind_box.blockSignals(False)
        self._fit_ranges()

    def _fit_ranges(self) -> None:
        manifest = self.manifest
        if manifest is None:
            return
        self.layer_box.setRange(1, manifest.layers_of(self.kind))
        self.fit_heads(manifest.n_heads)

    def fit_heads(self, n_heads: int) -> None:
        raise NotImplementedError


class HeadQueryPanel(HeadChoice):
    query_requested = Signal(object, str)  # Head, predicate

    def __init__(self) -> None:
        super().__init__()
        self.head_box = QSpinBox()
        self.head_box.setRange(1, 1)
        self.where = QLineEdit("previous >= 0.5")
        self.where.setToolTip(PREDICATE_HELP)
        self.where.setPlaceholderText("previous >= 0.5 and entropy < 0.3")
        self.where.setMinimumWidth(320)
        self.run_button = QPushButton("Find sentences")
        self.total_label = QLabel("")
        self.total_label.setWordWrap(True)
        self.sql_label = QLabel("")
        self.sql_label.setWordWrap(True)
        self.sql_label.setStyleSheet("color: palette(mid); font-family: monospace;")
        self.table = SentencesTable()
        layout = QVBoxLayout(self)
        layout.addLayout(
            _row("Head:", self.kind_box, "layer", self.layer_box, "head", self.head_box, "where", self.where, self.run_button)
        )
        layout.addWidget(self.total_label)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.sql_label)
        self.run_button.clicked.connect(self._on_run)
        self.where.returnPressed.connect(self._on_run)

    def fit_heads(self, n_heads: int) -> None:
        self.head_box.setRange(1, n_heads)

    @property
    def head(self) -> Head:
        return Head(self.kind, self.layer_box.value() - 1, self.head_box.value() - 1)

    def set_head(self, head: Head, predicate: str) -> None:
        self.kind_box.setCurrentIndex(self.kind_box.findData(head.kind.value))
        self._fit_ranges()
        self.layer_box.setValue(head.layer + 1)
        self.head_box.setValue(head.head + 1)
        self.where.setText(predicate)

    def _on_run(self) -> None:
        self.query_requested.emit(self.head, self.where.text())

    def show_result(self, result: HeadQueryResult) -> None:
        head = result.head
        shown = f" (the first {len(result.rows):,} shown)" if result.total > len(result.rows) else ""
        self.total_label.setText(
            f"{result.total:,} sentences where {head.kind.value} layer {head.layer + 1} head {head.head + 1} has "
            f"{result.predicate}{shown}. Click a sentence to open it in Explore."
        )
        self.sql_label.setText(f"SQL: {result.sql}  —  values: {result.parameters}")
        self.table.set_result(result.columns, result.rows)


class QKMapPanel(HeadChoice):
    draw_requested = Signal(object)  # MapRequest
    export_requested = Signal(str)  # "figure" or "csv"

    def __init__(self) -> None:
        super().__init__()
        self.kind_box.setCurrentIndex(self.kind_box.findData("decoder"))
        self.sentences_box = QSpinBox()
        self.sentences_box.setRange(5, 5000)
        self.sentences_box.setValue(DEFAULT_SENTENCES)
        self.head_box, self.method_box, self.colour_box = fitted_box(), QComboBox(), QComboBox()
        self.method_box.addItems(METHODS)
        self.colour_box.addItems(COLOURINGS)
        self.draw_button, self.figure_button, self.csv_button = (
            QPushButton("Draw"),
            QPushButton("Export figure…"),
            QPushButton("Export CSV…"),
        )
        self.note = QLabel("Queries ● and keys ▲ of a head over the index's sentences, projected together.")
        self.note.setWordWrap(True)
        self.view = QKMapView()
        layout = QVBoxLayout(self)
        layout.addLayout(
            _row(
                self.kind_box,
                "layer",
                self.layer_box,
                self.head_box,
                "by",
                self.method_box,
                "colour",
                self.colour_box,
                "sentences",
                self.sentences_box,
                self.draw_button,
                self.figure_button,
                self.csv_button,
            )
        )
        layout.addWidget(self.note)
        self.maps_scroll = QScrollArea()  # a layer's many heads scroll at a height each can be read at (QKMapView)
        self.maps_scroll.setWidgetResizable(True)
        self.maps_scroll.setWidget(self.view)
        layout.addWidget(self.maps_scroll, 1)
        self.draw_button.clicked.connect(lambda: self.draw_requested.emit(self.request()))
        self.colour_box.currentTextChanged.connect(lambda colour: self.view.set_panels(self.view.panels, colour))
        self.figure_button.clicked.connect(lambda: self.export_requested.emit("figure"))
        self.csv_button.clicked.connect(lambda: self.export_requested.emit("csv"))

    def fit_heads(self, n_heads: int) -> None:
        self.head_box.clear()
        self.head_box.addItem("all heads", None)
        for head in range(n_heads):
            self.head_box.addItem(f"head {head + 1}", head)

    def request(self) -> MapRequest:
        head = self.head_box.currentData()
        return MapRequest(self.kind, self.layer_box.value() - 1, head, self.method_box.currentText(), self.sentences_box.value())

    def show_maps(self, panels: list[MapPanel], request: MapRequest) -> None:
        every = "; ".join(f"{panel.title}: {', '.join(panel.notes)}" for panel in panels)
        self.note.setText(
            f"{len(panels)} head(s), {request.sentences} sentences, {request.method.upper()}; each head's measures under "
            "its title (hover here for all of them)"
        )
        self.note.setToolTip(every)
        self.view.set_panels(panels, self.colour_box.currentText())
