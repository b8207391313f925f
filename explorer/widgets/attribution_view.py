"""Direct logit attribution at one decoding step: what wrote the chosen token's logit.

Left, the parts (embeddings, every head, every feed-forward block, the biases) as horizontal bars, largest |share|
first at the top, red for a part that raises the logit and blue for one that lowers it (the BARS_SHOWN largest, or
as many as have room for a readable label; the rest are counted). Right, the head parts as a grid: rows "L1 self" …
then "L1 cross" …, a column per head, on a diverging colour map centred at 0. Under both, the logit and the remainder
(the logit minus the parts' sum). An encoder-only model decodes nothing: its tagger's prediction at a piece chosen in
the *Position* box (a sentence classifier's one prediction) is split instead.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from explorer.widgets.heatmap import DIVERGING, HeatmapView, shown_labels
from explorer.widgets.plot_style import show_light_grid
from model.interventions.logit_attribution import LogitAttribution

BARS_SHOWN = 16
RAISES, LOWERS = "#d6604d", "#4393c3"  # the diverging map's red and blue
HEAD_KINDS = (("self", "self-attention head"), ("cross", "cross-attention head"))
ALONE = "the chosen token's logit"


def head_grid(attribution: LogitAttribution, step: int) -> tuple[np.ndarray, list[str], list[str]]:
    """The head parts at ``step`` as (values [rows, heads], row labels "L1 self" …, column labels "H1" …)."""
    rows: dict[str, dict[int, float]] = {}
    for kind_name, kind in HEAD_KINDS:
        for part, part_kind, value in zip(attribution.parts, attribution.part_kinds, attribution.values[step]):
            if part_kind == kind:
                layer, _, head = part.split()  # "L1 self H2"
                rows.setdefault(f"{layer} {kind_name}", {})[int(head[1:])] = float(value)
    n_heads = max((max(heads) for heads in rows.values()), default=0)
    values = np.array([[heads.get(h + 1, 0.0) for h in range(n_heads)] for heads in rows.values()], np.float32)
    return values.reshape(len(rows), n_heads), list(rows), [f"H{h + 1}" for h in range(n_heads)]


def largest_parts(attribution: LogitAttribution, step: int, count: int = BARS_SHOWN) -> list[tuple[str, float]]:
    """The ``count`` parts of largest |share| at ``step``, largest first."""
    values = attribution.values[step]
    order = np.argsort(-np.abs(values), kind="stable")[:count]
    return [(attribution.parts[index], float(values[index])) for index in order]


class AttributionView(QWidget):
    versus_chosen = Signal(int, int)  # step (from 0), token id (-1: the chosen token's logit alone)
    position_chosen = Signal(int)  # an encoder-only model's piece shown (from 0), chosen in its box

    def __init__(self) -> None:
        super().__init__()
        self.position_label = QLabel("Position:")
        self.position = QSpinBox()  # an encoder-only model's piece whose prediction is split (it has no steps)
        self.position.setToolTip("The piece whose predicted tag is split into parts, from 1")
        self.position.valueChanged.connect(lambda value: self.position_chosen.emit(value - 1))
        self.versus = QComboBox()
        self.versus.setToolTip("Split the chosen token's logit, or its difference from another candidate's at this step")
        self.versus.addItem(ALONE, -1)
        self.versus.activated.connect(lambda _index: self._on_versus())
        self.attribution: LogitAttribution | None = None
        self.step: int | None = None  # the step shown, from 0
        self.bars_shown: list[tuple[str, float]] = []  # (part, value) of each bar, top first
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.bar_plot = pg.PlotWidget(enableMenu=False)
        self.bar_plot.setMouseEnabled(x=False, y=False)
        self.bar_plot.invertY(True)
        show_light_grid(self.bar_plot)
        self.bar_plot.setLabel("bottom", "contribution to the logit")
        self.bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.8)
        self.bar_plot.addItem(self.bars)
        self.bar_plot.getViewBox().sigResized.connect(lambda _box: self._on_bars_resized())
        self.heads = HeatmapView(DIVERGING, "contribution to the logit")
        self.heads.plot.getAxis("left").set_name("layer, attention")
        self.heads.plot.getAxis("top").set_name("head")
        self.remainder = QLabel()
        plots = QHBoxLayout()
        plots.addWidget(self.bar_plot, 3)
        plots.addWidget(self.heads, 2)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.position_label)
        top.addWidget(self.position)
        top.addWidget(QLabel("Versus:"))
        top.addWidget(self.versus)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(plots, 1)
        layout.addWidget(self.remainder)

    def set_attribution(self, attribution: LogitAttribution | None, step: int | None = None) -> None:
        self.attribution = attribution
        by_position = attribution is not None and attribution.place == "position"  # an encoder-only model's pieces
        for widget in (self.position_label, self.position):
            widget.setVisible(by_position)
        if by_position:
            assert attribution is not None
            self.position.blockSignals(True)
            self.position.setRange(1, max(len(attribution.logits), 1))
            self.position.blockSignals(False)
        self.set_step(step)

    def set_step(self, step: int | None) -> None:
        """Show the step ``step`` (from 0; None: the first; an encoder-only model's: the piece shown stays), clamped
        to the steps there are."""
        attribution = self.attribution
        if step is None and attribution is not None and attribution.place != "step":
            step = self.step
        if attribution is None or not len(attribution.logits):
            self.step, self.bars_shown = None, []
            self.bars.setOpts(x0=[], y=[], width=[])
            self.heads.set_matrix(np.zeros((0, 0), np.float32), [], [], "")
            self.title.setText("")
            self.remainder.setText("")
            return
        self.step = min(max(step or 0, 0), len(attribution.logits) - 1)
        self.position.blockSignals(True)
        self.position.setValue(self.step + 1)
        self.position.blockSignals(False)
        self._draw_bars(attribution, self.step)
        values, rows, columns = head_grid(attribution, self.step)
        limit = float(np.abs(values).max()) if values.size else 1.0
        self.heads.set_matrix(values, rows, columns, "Heads' parts", levels=(-max(limit, 1e-6), max(limit, 1e-6)))
        token = shown_labels([attribution.target_tokens[self.step]])[0]
        compared = attribution.compared_tokens[self.step] if self.step < len(attribution.compared_tokens) else ""
        what = f"the logit of {token!r} minus {shown_labels([compared])[0]!r}" if compared else f"the logit of {token!r}"
        where, stream = attribution.where(self.step), "decoder's" if attribution.place == "step" else "encoder's"
        self.title.setText(
            f"{where[:1].upper()}{where[1:]}: {what} ({float(attribution.logits[self.step]):.3f}) split into what wrote the "
            f"{stream} output; the {len(self.bars_shown)} largest of {len(attribution.parts)} parts, largest first."
        )
        self.remainder.setText(
            f"Remainder (the logit minus the parts' sum, rounding): {float(attribution.remainder[self.step]):.2e}"
        )

    def set_candidates(self, candidates: list[tuple[int, str]]) -> None:
        """The other candidates of the step shown, (token id, piece) best first, offered in *Versus*."""
        compared = self.attribution.compared_ids[self.step] if self.attribution is not None and self.step is not None else -1
        self.versus.clear()
        self.versus.addItem(ALONE, -1)
        for token_id, piece in candidates:
            self.versus.addItem(f"minus {shown_labels([piece])[0]!r}", token_id)
        self.versus.setCurrentIndex(max(self.versus.findData(int(compared)), 0))

    def _on_versus(self) -> None:
        if self.step is not None:
            self.versus_chosen.emit(self.step, int(self.versus.currentData()))

    def bars_fitting(self) -> int:
        """How many bars the plot holds with a readable label each (a line of text per bar; BARS_SHOWN at most, 3 at
        least): at 1280x720 sixteen labels overlapped in 60 px. The title says how many of the parts are shown."""
        height = self.bar_plot.getViewBox().height()
        line = QFontMetrics(self.bar_plot.getAxis("left").font()).height() * 1.1
        return int(min(BARS_SHOWN, max(3, height // line))) if height > 0 else BARS_SHOWN

    def _on_bars_resized(self) -> None:
        attribution = self.attribution
        if attribution is not None and self.step is not None:
            if len(self.bars_shown) != min(self.bars_fitting(), len(attribution.parts)):  # more or fewer now fit
                self.set_step(self.step)

    def _draw_bars(self, attribution: LogitAttribution, step: int) -> None:
        self.bars_shown = largest_parts(attribution, step, self.bars_fitting())
        values = np.array([value for _, value in self.bars_shown], np.float64)
        positions = np.arange(len(values), dtype=np.float64)
        brushes = [pg.mkBrush(RAISES if value >= 0 else LOWERS) for value in values]
        self.bars.setOpts(x0=np.minimum(values, 0.0), y=positions, width=np.abs(values), height=0.8, brushes=brushes)
        axis = self.bar_plot.getAxis("left")
        axis.setTicks([[(float(index), part) for index, (part, _) in enumerate(self.bars_shown)]])
        self.bar_plot.setYRange(-0.6, max(len(values), 1) - 0.4, padding=0.0)
        limit = float(np.abs(values).max()) if values.size else 1.0
        self.bar_plot.setXRange(-limit * 1.05 if values.min(initial=0.0) < 0 else 0.0, limit * 1.05, padding=0.0)
