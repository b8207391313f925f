"""The Circuits sub-tab of the Interventions view: the circuit of the Patching sub-tab's pair (model/circuits/).

A row of options (the scores' method and integration points, the target share, key/value edges per source position,
"Find circuit"), the pair it reads (the Patching sub-tab's, "Change the pair…" goes there), then the node-link diagram
(model/circuits/layout.py: layers as rows, the encoder left, the decoder right, cross-attention's edges across; line
width by |score|, blue where the edge carries the clean prediction and red where it works against it, dashed into a
cross-attention head's queries) beside the faithfulness curve (the share of the difference kept against the number of
edges, the target dashed, the circuit marked), and under them what the run says (the circuit and its heads first, then
the metric, direction, method, norm treatment and the check against exact patching). A node clicked asks to open its
head in the Explore tab (``node_clicked(name)``). Lines of one colour, style and width are drawn as one item, and only
the heaviest heads are named (their tooltips name every node): a large circuit draws in tens of milliseconds, and in
four turns of the event loop (lines, nodes, curve, summary), so that the window answers between them
(benchmarks/circuits.py: its longest gap while a circuit is found). Shows what it is given; emits what the user asks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from explorer.widgets.plot_style import show_light_grid
from model.circuits.layout import circuit_lines, line_paths, line_widths, node_positions
from model.circuits.result import CircuitResult, Options
from model.figures.circuit import AGAINST, CARRIES, LEGEND, NODE_COLOURS

LABELLED_HEADS = 12  # heads named in the diagram, the heaviest first (each label is an item to lay out)
PLOTS_MINIMUM = 230  # px: the diagram's rows and the curve's axes readable
LEADING = ("circuit:", "no circuit", "the evaluation and", "heads in the circuit", "  ")  # the summary's first lines
METHOD_CHOICES = (  # (shown, method, over)
    ("EAP-IG over activations", "EAP-IG", "activations"),
    ("EAP-IG over inputs", "EAP-IG", "inputs"),
    ("EAP (gradient at the clean run)", "EAP", "activations"),
)


def pair_text(clean: str, corrupted: str, step: int | None) -> str:
    where = "the first step they differ at" if step is None else f"step {step + 1}"
    return f"Pair (from the Patching sub-tab): “{clean}” → “{corrupted}”, {where}"


class CircuitView(QWidget):
    """Signals: ``options_changed(Options)``, ``find_requested()``, ``pair_edit_requested()``, ``node_clicked(name)``."""

    options_changed = Signal(object)
    find_requested = Signal()
    pair_edit_requested = Signal()
    node_clicked = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.result: CircuitResult | None = None
        self._stages: list[Callable[[CircuitResult], None]] = []  # the result's drawing still to do, a turn each
        self.method = QComboBox()
        for shown, _method, _over in METHOD_CHOICES:
            self.method.addItem(shown)
        self.method.setToolTip(
            "EAP-IG averages each receiver's gradient on the way from the clean run to the patched one (its circuits are the "
            "more faithful); EAP takes it at the clean run (the first-order estimate of each single edge patched)"
        )
        self.steps = QSpinBox()
        self.steps.setRange(1, 50)
        self.steps.setValue(Options().steps)
        self.steps.setToolTip("EAP-IG's integration points")
        self.target = QSpinBox()
        self.target.setRange(10, 100)
        self.target.setSuffix(" %")
        self.target.setValue(round(Options().target * 100))
        self.target.setToolTip("The share of the clean–corrupted difference the circuit keeps, everything else patched")
        self.positions = QCheckBox("per source position")
        self.positions.setChecked(Options().split_positions)
        self.positions.setToolTip("A cross-attention head's keys and values: one edge per writer and source piece")
        self.find_button = QPushButton("Find circuit")
        self.find_button.setToolTip("Computed on its own when the pair or an option changes, while this sub-tab is shown")
        self.pair = QLabel(pair_text("", "", None))
        self.pair.setWordWrap(True)
        self.change_pair = QPushButton("Change the pair…")
        self.diagram = pg.PlotWidget()
        self.diagram.hideAxis("bottom")
        self.diagram.setMenuEnabled(False)
        self.diagram.getAxis("left").setLabel("layer")
        self.diagram.setToolTip(LEGEND)
        self.legend = self._legend()
        self.curve = pg.PlotWidget()
        self.curve.setLogMode(x=True, y=False)
        self.curve.setLabel("bottom", "edges in the circuit")
        self.curve.setLabel("left", "share kept")
        show_light_grid(self.curve)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._lay_out()
        for signal in (self.method.currentIndexChanged, self.steps.valueChanged, self.target.valueChanged):
            signal.connect(lambda _value: self.options_changed.emit(self.options()))
        self.positions.toggled.connect(lambda _on: self.options_changed.emit(self.options()))
        self.find_button.clicked.connect(self.find_requested.emit)
        self.change_pair.clicked.connect(self.pair_edit_requested.emit)

    def _legend(self) -> pg.LegendItem:
        """What the lines and nodes mean, in the diagram's empty corner (above the encoder's last layer; the whole
        legend in the diagram's tooltip); it stays when the diagram is cleared."""
        legend = pg.LegendItem(offset=(4, 2), colCount=2, labelTextSize="8pt", verSpacing=-6)
        legend.setParentItem(self.diagram.getPlotItem().getViewBox())
        queries = QPen(QColor("#555555"), 1.5)
        queries.setStyle(Qt.PenStyle.DashLine)
        samples = (
            (pg.PlotDataItem(pen=pg.mkPen(CARRIES, width=2.5)), "carries the clean prediction"),
            (pg.PlotDataItem(pen=pg.mkPen(AGAINST, width=2.5)), "works against it"),
            (pg.PlotDataItem(pen=queries), "into a head's queries"),
            (pg.ScatterPlotItem(symbol="o", size=9, brush=pg.mkBrush("#555555"), pen=None), "filled: in the circuit"),
        )
        for sample, text in samples:
            legend.addItem(sample, text)
        return legend

    def _lay_out(self) -> None:
        options = QHBoxLayout()
        for label, widget in (("Scores:", self.method), ("Points:", self.steps), ("Target:", self.target)):
            options.addWidget(QLabel(label))
            options.addWidget(widget)
        options.addWidget(self.positions)
        options.addStretch(1)
        options.addWidget(self.find_button)
        pair = QHBoxLayout()
        pair.addWidget(self.pair, 1)
        pair.addWidget(self.change_pair)
        plots = QSplitter(Qt.Orientation.Horizontal)
        plots.addWidget(self.diagram)
        plots.addWidget(self.curve)
        plots.setStretchFactor(0, 3)
        plots.setStretchFactor(1, 2)
        plots.setMinimumHeight(PLOTS_MINIMUM)  # below it the rows and the curve's axis are unreadable: the tab scrolls
        summary = QScrollArea()
        summary.setWidget(self.summary)
        summary.setWidgetResizable(True)
        summary.setMaximumHeight(96)  # the circuit, its heads and its strongest edges; the rest scrolls
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(options)
        layout.addLayout(pair)
        layout.addWidget(plots, 1)
        layout.addWidget(summary)

    def options(self) -> Options:
        _shown, method, over = METHOD_CHOICES[self.method.currentIndex()]
        self.steps.setEnabled(method == "EAP-IG")
        return Options(
            method, self.steps.value(), over, target=self.target.value() / 100, split_positions=self.positions.isChecked()
        )

    def set_pair(self, clean: str, corrupted: str, step: int | None) -> None:
        self.pair.setText(pair_text(clean, corrupted, step))

    def show_message(self, text: str) -> None:
        if text:
            self.summary.setText(text)

    def set_result(self, result: CircuitResult | None) -> None:
        """Draw ``result`` (None: clear the diagram and curve): the diagram's lines, its nodes, the curve and what the
        run says, each in a turn of the event loop of its own (``drawn`` until all are), so that the window answers
        between them; the stages of a result replaced before they are drawn are dropped."""
        self.result = result
        self._stages = []
        self.diagram.clear()
        self.curve.clear()
        if result is None:
            self.summary.setText("")
            return
        self._stages = [self._draw_lines, self._draw_nodes, self._draw_curve, self._show_summary]
        self._next_turn(result)

    @property
    def drawn(self) -> bool:
        """Whether every stage of the result's drawing is done."""
        return not self._stages

    def _draw_next(self, result: CircuitResult) -> None:
        if result is not self.result or not self._stages:
            return  # replaced meanwhile: the newer result's own turns draw it
        self._stages.pop(0)(result)
        if self._stages:
            self._next_turn(result)

    def _next_turn(self, result: CircuitResult) -> None:
        """The next stage in a turn of its own (1 ms: a zero delay ran them all in one pass), dropped if the view goes."""
        QTimer.singleShot(1, self, lambda: self._draw_next(result))

    def _show_summary(self, result: CircuitResult) -> None:
        lines = result.describe()
        first = [line for line in lines if line.startswith(LEADING)]  # what was found, then how
        self.summary.setText("\n".join(first + [line for line in lines if line not in first]))

    def _draw_lines(self, result: CircuitResult) -> None:
        graph = result.graph
        positions = node_positions(graph)
        lines = circuit_lines(graph, result.scores, result.circuit.edges)
        groups: dict[tuple[bool, bool, float], list[np.ndarray]] = {}  # (carries, queries, width) -> paths [P, 2]
        for line, width, path in zip(lines, line_widths(lines, 0.8, 7.0), line_paths(lines, positions)):
            key = (line.score < 0, line.input == "q", round(width * 2) / 2)  # widths in half pixels: few items to draw
            groups.setdefault(key, []).append(path)
        for (carries, queries, width), paths in sorted(groups.items(), key=lambda item: item[0][2]):
            colour = QColor(CARRIES if carries else AGAINST)
            colour.setAlpha(190)
            pen = QPen(colour, width)
            pen.setCosmetic(True)
            if queries:
                pen.setStyle(Qt.PenStyle.DashLine)
            points = np.concatenate(paths)  # [sum P, 2]
            joined = np.concatenate([np.arange(len(path)) < len(path) - 1 for path in paths])  # no line into the next
            self.diagram.addItem(pg.PlotCurveItem(points[:, 0], points[:, 1], pen=pen, connect=joined))

    def _draw_nodes(self, result: CircuitResult) -> None:
        graph = result.graph
        positions = node_positions(graph)
        in_circuit = {node.name for node in result.nodes_in_circuit()}
        heaviest = list(result.head_weights())[:LABELLED_HEADS]  # the others: their tooltips
        labelled = {name for name in in_circuit if graph.nodes[name].head is None} | set(heaviest)
        spots = []
        for name, node in graph.nodes.items():
            colour = QColor(NODE_COLOURS[node.side] if node.kind != "logits" else "#000000")
            filled = name in in_circuit
            spots.append({
                "pos": positions[name], "data": name, "size": 13 if filled else 8, "pen": pg.mkPen(colour, width=1.2),
                "brush": pg.mkBrush(colour if filled else QColor("white")), "symbol": "s" if node.head is None else "o",
            })  # fmt: skip
            if name in labelled:
                label = pg.TextItem(node.label if node.head is None else node.label.split(" ")[-1], color=colour, anchor=(0.5, 1.2))
                label.setPos(*positions[name])
                self.diagram.addItem(label)
        scatter = pg.ScatterPlotItem(
            spots=spots, hoverable=True, tip=lambda x, y, data: f"{graph.nodes[data].label} (click: open in Explore)"
        )
        scatter.sigClicked.connect(lambda _item, points, *_rest: self.node_clicked.emit(points[0].data()) if len(points) else None)
        self.diagram.addItem(scatter)
        layers = max(graph.parts.n_encoder_layers, graph.parts.n_decoder_layers)
        self.diagram.getAxis("left").setTicks([[(0, "embedding"), *((layer + 1, f"L{layer + 1}") for layer in range(layers))]])
        for text, side in (("encoder", "encoder"), ("decoder", "decoder")):
            x = min(x for name, (x, _y) in positions.items() if graph.nodes[name].side == side)
            caption = pg.TextItem(text, color=QColor(NODE_COLOURS[side]), anchor=(0, 0))
            caption.setPos(x, -0.3)
            self.diagram.addItem(caption)
        self.diagram.setYRange(-0.8, graph.parts.n_decoder_layers + 1.75, padding=0)

    def _draw_curve(self, result: CircuitResult) -> None:
        sizes = np.maximum([point.size for point in result.curve], 1).astype(float)
        kept = np.array([point.faithfulness for point in result.curve])
        self.curve.plot(sizes, kept, pen=pg.mkPen("k", width=1.5), symbol="o", symbolSize=5, symbolBrush="k")
        self.curve.addItem(
            pg.InfiniteLine(result.options.target, angle=0, pen=pg.mkPen((128, 128, 128), style=Qt.PenStyle.DashLine))
        )
        circuit = result.circuit
        self.curve.plot([max(circuit.size, 1)], [circuit.faithfulness], pen=None, symbol="o", symbolSize=11, symbolBrush=CARRIES)
        self.curve.setTitle(f"{circuit.size} edges keep {circuit.faithfulness:.0%}")
