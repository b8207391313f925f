"""Head importance and the pruning curve: how much each head is worth, and how many can go.

"Compute importance" measures every head of the explored model over N fresh sentences of its corpus
(explorer/controllers/importance.py, in a job of the runner; Cancel stops it), then scores greedy translations as the heads are
knocked out from the least important up. The plot shows exact match and BLEU/100 against the number of heads
removed, with a dashed line 0.05 below the full model's exact match, and says how many heads can go before exact
match falls to it; the table lists the least important heads.

The view shows plain data the Explore tab hands it from the importance controller (``set_running``,
``set_progress``, ``show_importance``, ``show_curve``, ``show_message``) and asks for a run
(``compute_requested(sentences)``) or its end (``cancel_requested``); it never reads the model.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.widgets.corpus_box import CorpusBox
from explorer.widgets.plot_style import show_light_grid
from model.attribution.importance import HeadImportance, PruningPoint, heads_before_drop
from model.attribution.objectives import Scoring

DROP = 0.05  # the fall in exact match the summary counts heads up to (the command line's)
LEAST_SHOWN = 12  # rows of the least-important table
EXACT_PEN = pg.mkPen("#4c78a8", width=2)
BLEU_PEN = pg.mkPen("#f58518", width=2)
DROP_PEN = pg.mkPen("#888888", width=1, style=Qt.PenStyle.DashLine)
HINT = (
    "Head importance (Michel et al., 2019): how much the loss depends on each head's output, normalised per layer. "
    "Press Compute importance to measure every head over fresh sentences of the model's corpus, then knock heads out "
    "from the least important up and score the model after each (its translations, its next pieces or its labels)."
)


class ImportanceView(QWidget):
    compute_requested = Signal(int)  # measure over this many sentences
    cancel_requested = Signal()
    corpus_chosen = Signal(str)  # a corpus to measure on, for a model that names none ("" when it names its own)

    def __init__(self) -> None:
        super().__init__()
        self.sentences = QSpinBox()
        self.sentences.setRange(10, 1000)
        self.sentences.setValue(100)
        self.sentences.setSuffix(" sentences")
        self.sentences.setToolTip("Fresh pairs of the model's built-in corpus (or its corpus file's test split) to measure on")
        self.corpus = CorpusBox("The corpus whose sentences the heads are measured on: this model does not name its own")
        self.corpus.chosen.connect(self.corpus_chosen.emit)
        self.compute_button = QPushButton("Compute importance")
        self.compute_button.setToolTip("Measure every head's importance, then the pruning curve (in the background)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat("")
        self.progress_bar.setTextVisible(True)
        row = QHBoxLayout()
        for widget in (self.sentences, self.corpus, self.compute_button, self.cancel_button):
            row.addWidget(widget)
        row.addWidget(self.progress_bar, 1)
        self.note = QLabel(HINT)
        self.note.setWordWrap(True)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.plot = pg.PlotWidget(enableMenu=False)  # no context menus: built for nothing otherwise
        self.plot.setMouseEnabled(x=False, y=False)
        show_light_grid(self.plot)
        self.plot.setLabel("bottom", "heads removed (least important first)")
        self.plot.setLabel("left", "score")
        self.plot.setYRange(0, 1, padding=0.02)
        self.plot.addLegend(offset=(-10, 10))
        self.exact_line = self.plot.plot(pen=EXACT_PEN, name="exact match", symbol="o", symbolSize=4, symbolBrush="#4c78a8")
        self.bleu_line = self.plot.plot(pen=BLEU_PEN, name="BLEU / 100", symbol="o", symbolSize=4, symbolBrush="#f58518")
        self.drop_line = pg.InfiniteLine(angle=0, movable=False, pen=DROP_PEN)
        self.drop_line.setToolTip(f"The full model's exact match minus {DROP}")
        self.drop_line.hide()
        self.plot.addItem(self.drop_line, ignoreBounds=True)
        self.least_table = QTableWidget(0, 3)
        self.least_table.setHorizontalHeaderLabels(("Rank", "Head", "Importance"))
        header_item = self.least_table.horizontalHeaderItem(2)
        if header_item is not None:
            header_item.setToolTip("Normalised per layer (ℓ2): 0 = the loss does not depend on it")
        self.least_table.verticalHeader().setVisible(False)
        self.least_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.least_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.least_table.horizontalHeader().setStretchLastSection(True)
        self.least_table.setToolTip("The least important heads, the least first")
        body = QHBoxLayout()
        body.addWidget(self.plot, 3)
        body.addWidget(self.least_table, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.note)
        layout.addLayout(body, 1)
        layout.addWidget(self.summary)
        self.compute_button.clicked.connect(self._on_compute_clicked)
        self.cancel_button.clicked.connect(self._on_cancel_clicked)

    # --- the buttons ------------------------------------------------------------------------------
    def _on_compute_clicked(self) -> None:
        self.compute_requested.emit(self.sentences.value())

    def _on_cancel_clicked(self) -> None:
        self.cancel_requested.emit()

    # --- what the importance controller reports -----------------------------------------------------
    def set_running(self, running: bool) -> None:
        self.cancel_button.setEnabled(running)
        if running:
            self.note.setText(f"Measuring {self.sentences.value()} sentences in the background…")
            self._show_least(None)
            self._show_curve(None)
            self._set_progress("starting", 0, 1)

    def set_progress(self, what: str, done: int, total: int) -> None:
        self._set_progress(what, done, total)

    def show_importance(self, importance: HeadImportance | None) -> None:
        self._show_least(importance)
        if importance is None:  # another model: nothing measured yet
            self._set_progress("", 0, 1)
            self.note.setText(HINT)
        else:
            self.note.setText(f"Importance measured over {importance.n_sentences} sentences; scoring the pruning curve…")

    def show_curve(self, points: list[PruningPoint] | None) -> None:
        self._show_curve(points)
        if points:
            self.note.setText(f"Heads removed from the least important up; {points[0].scoring.how}.")

    def set_corpora(self, names: list[str]) -> None:
        """The corpora a model that names none may be measured on (the box hidden when empty); the first is chosen."""
        self.corpus.offer(names)

    def show_message(self, text: str) -> None:
        self.note.setText(text)

    # --- drawing ----------------------------------------------------------------------------------
    def _set_progress(self, what: str, done: int, total: int) -> None:
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(min(done, max(total, 1)))
        self.progress_bar.setFormat(f"{what} {done}/{total}" if what else "")

    def _show_least(self, importance: HeadImportance | None) -> None:
        ranking = importance.ranking()[:LEAST_SHOWN] if importance is not None else []
        self.least_table.setRowCount(len(ranking))
        for row, (head, value) in enumerate(ranking):
            for column, text in enumerate((str(row + 1), head.describe(), f"{value:.3f}")):
                item = QTableWidgetItem(text)
                if column != 1:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.least_table.setItem(row, column, item)

    def _show_curve(self, points: list[PruningPoint] | None) -> None:
        if not points:
            self.exact_line.setData([], [])
            self.bleu_line.setData([], [])
            self.drop_line.hide()
            self.summary.setText("")
            return
        removed, scoring = [point.n_removed for point in points], points[0].scoring
        self.exact_line.setData(removed, [point.first for point in points])
        self.bleu_line.setData(removed, [scoring.drawn(point.second) for point in points])
        self._name_lines(scoring)
        self.plot.setXRange(0, max(removed[-1], 1), padding=0.02)
        baseline = points[0].first
        self.drop_line.setValue(baseline - DROP)
        self.drop_line.setVisible(baseline - DROP >= 0)
        n_heads = removed[-1]
        kept = heads_before_drop(points, DROP)
        self.summary.setText(
            f"{kept} of {n_heads} heads can go before {scoring.first} drops by {DROP:.2f} (from {baseline:.2f}; "
            f"{scoring.second_text(points[0].second)} with every head)."
        )

    def _name_lines(self, scoring: Scoring) -> None:
        """The legend's and the dashed line's names for the model's scores (exact match and BLEU / 100, …)."""
        legend = self.plot.plotItem.legend
        if legend is not None:
            for line, name in ((self.exact_line, scoring.first), (self.bleu_line, scoring.drawn_as)):
                legend.getLabel(line).setText(name)
        self.drop_line.setToolTip(f"The full model's {scoring.first} minus {DROP}")
