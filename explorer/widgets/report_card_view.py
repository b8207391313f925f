"""The report card: every attribution reading of the model graded for faithfulness, plausibility and sanity.

"Grade" asks for a card over N held-out sentences of the model's corpus (explorer/controllers/report_card.py runs it
in a job of the runner; Cancel stops it), optionally after training a model on shuffled targets for the data
randomisation check. The table shows one row per method (the baselines in italics), each column's best in bold on
green with ★, a failure ✗ in red and "—" in grey; a cell's tooltip says its reason or its failures. Below, the mean
deletion and insertion curves of every method and the cascade's similarities, as plots beside the table (one at a
time; the row headers' colours are their legend). "Save…" writes the card as a
CSV or its one-page figure (PNG, SVG, PDF).

The view shows plain data the Explore tab hands it (``show_card``, ``set_running``, ``set_progress``, ``show_message``,
``show_unavailable``) and says what the user asked: ``compute_requested(sentences, sanity pairs, shuffled-target
steps)``, ``cancel_requested``, ``save_requested(path)``; it never reads the model.
"""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QIcon, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.widgets.corpus_box import CorpusBox
from explorer.widgets.plot_style import show_light_grid
from model.figures.report_card import colours, short_stage
from model.grading.card import ReportCard, grid
from model.grading.metrics import METRICS
from model.grading.sanity import SANITY_THRESHOLD

HINT = (
    "The report card grades every reading of the model on held-out sentences whose true alignment is known: how "
    "faithful it is (hiding what it calls important should change the prediction), how plausible (AER; on copy, "
    "reverse and sort, the correct source position) and whether it passes the sanity checks (randomised weights must "
    "change it). Press Grade: it runs in the background (the default model on 100 sentences: about five minutes on two "
    "cores)."
)
BEST, FAILED, GREY = QColor("#e3f1dc"), QColor("#c0392b"), QColor("#8a8a8a")


def _spin(low: int, high: int, value: int, suffix: str, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setSuffix(suffix)
    box.setToolTip(tip)
    return box


SHUFFLED_TIP = "Train a model on shuffled targets first (the app's trainer), and compare every map with it"


class ReportCardView(QWidget):
    compute_requested = Signal(int, int, int)  # sentences, sanity pairs, shuffled-target training steps (0: none)
    corpus_chosen = Signal(str)  # a corpus to grade on, for a model that says none ("" when it says its own)
    cancel_requested = Signal()
    save_requested = Signal(str)  # a path: CSV or a figure, by the suffix

    def __init__(self) -> None:
        super().__init__()
        self.card: ReportCard | None = None
        self.sentences = _spin(1, 1000, 100, " sentences", "Held-out pairs of the model's corpus to grade")
        self.sanity_pairs = _spin(0, 200, 10, " sanity pairs", "Pairs the sanity checks read on each randomised model")
        self.corpus = CorpusBox("The corpus whose held-out pairs are graded: this model does not say which it was trained on")
        self.shuffled = QCheckBox("Data randomisation:")
        self.shuffled.setToolTip(SHUFFLED_TIP)
        self.shuffled_steps = _spin(10, 100000, 300, " steps", "Training steps of the model on shuffled targets")
        self.grade_button = QPushButton("Grade")
        self.grade_button.setToolTip("Grade every reading (in the background)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("The card as a CSV, or its one-page figure (PNG, SVG, PDF)")
        self.save_button.setEnabled(False)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setFormat("")
        row = QHBoxLayout()
        for widget in (
            self.corpus,
            self.sentences,
            self.sanity_pairs,
            self.shuffled,
            self.shuffled_steps,
            self.grade_button,
            self.cancel_button,
        ):
            row.addWidget(widget)
        row.addWidget(self.progress_bar, 1)
        row.addWidget(self.save_button)
        self.note = QLabel(HINT)
        self.note.setWordWrap(True)
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.plots = [self._plot(*labels) for labels in self.PLOTS]
        self.plot_tabs = QTabWidget()  # one plot at a time, beside the table (whose row headers are its legend)
        for plot, name in zip(self.plots, ("Deletion", "Insertion", "Cascade")):
            self.plot_tabs.addTab(plot, name)
        body = QHBoxLayout()
        body.addWidget(self.table, 3)
        body.addWidget(self.plot_tabs, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.note)
        layout.addLayout(body, 1)
        self.grade_button.clicked.connect(self._on_grade_clicked)
        self.corpus.chosen.connect(self.corpus_chosen.emit)
        self.cancel_button.clicked.connect(self.cancel_requested.emit)
        self.save_button.clicked.connect(self._on_save_clicked)

    PLOTS = (
        ("mean p(reference)", "share of source pieces hidden"),
        ("mean p(reference)", "share of source pieces shown"),
        ("Spearman similarity to the trained map", "parts randomised, from the output down"),
    )

    @staticmethod
    def _plot(left: str, bottom: str) -> pg.PlotWidget:
        plot = pg.PlotWidget(enableMenu=False)
        plot.setMouseEnabled(x=False, y=False)
        show_light_grid(plot)
        plot.setLabel("left", left)
        plot.setLabel("bottom", bottom)
        for side in ("left", "bottom"):
            plot.getAxis(side).enableAutoSIPrefix(False)  # probabilities read 0.8, not "800 (x0.001)"
        return plot

    # --- the buttons ------------------------------------------------------------------------------
    def _on_grade_clicked(self) -> None:
        steps = self.shuffled_steps.value() if self.shuffled.isChecked() else 0
        self.compute_requested.emit(self.sentences.value(), self.sanity_pairs.value(), steps)

    def _on_save_clicked(self) -> None:
        formats = "CSV: one row per method (*.csv);;PDF figure (*.pdf);;PNG figure (*.png);;SVG figure (*.svg)"
        path, _ = QFileDialog.getSaveFileName(self, "Save the report card", str(Path.home() / "report-card.csv"), formats)
        if path:
            self.save_requested.emit(path)

    def set_corpora(self, names: list[str]) -> None:
        """The corpora offered to grade on (none: the model's own is graded, and the box is hidden)."""
        self.corpus.offer(names)

    def allow_shuffled(self, why_not: str) -> None:
        """The data randomisation offered, or unchecked and greyed out with ``why_not``."""
        if why_not:
            self.shuffled.setChecked(False)
        for widget in (self.shuffled, self.shuffled_steps):
            widget.setEnabled(not why_not)
            widget.setToolTip(why_not or SHUFFLED_TIP)

    # --- what the controller reports ------------------------------------------------------------------
    def set_running(self, running: bool) -> None:
        self.cancel_button.setEnabled(running)
        self.grade_button.setEnabled(not running)
        if running:
            self.note.setText(f"Grading {self.sentences.value()} sentences in the background…")
            self.set_progress("starting", 0, 1)
        elif self.card is None:
            self.set_progress("", 0, 1)

    def set_progress(self, stage: str, done: int, total: int) -> None:
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(min(done, max(total, 1)))
        self.progress_bar.setFormat(f"{stage} {done}/{total}" if stage else "")

    def show_message(self, text: str) -> None:
        self.note.setText(text)

    def show_card(self, card: ReportCard | None) -> None:
        self.card = card
        self.save_button.setEnabled(card is not None)
        self._fill_table(card)
        self._draw_plots(card)
        self.note.setText(HINT if card is None else card.caption())  # a cleared card takes its caption with it

    def show_unavailable(self, why: str, running: bool = False) -> None:
        """Why the model cannot be graded ('' when it can: the hint again, or the card's caption when one is shown)."""
        self.grade_button.setEnabled(not why and not running)
        self.grade_button.setToolTip(why or "Grade every reading (in the background)")
        self.note.setText(why or (HINT if self.card is None else self.card.caption()))

    # --- drawing ----------------------------------------------------------------------------------
    def _fill_table(self, card: ReportCard | None) -> None:
        self.table.clear()
        if card is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            return
        headers = card.headers()
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels([header.replace(" ", "\n", 1) if len(header) > 8 else header for header in headers])
        self.table.horizontalHeader().setSectionResizeMode(len(headers) - 1, QHeaderView.ResizeMode.ResizeToContents)  # the verdict
        for column, name in enumerate(card.columns):
            header = self.table.horizontalHeaderItem(column)
            if header is not None:
                header.setToolTip(METRICS[name].what)
        self.table.setRowCount(len(card.rows))
        palette = colours(card.rows)
        for index, (row, texts) in enumerate(zip(card.rows, card.table())):
            header = QTableWidgetItem(_swatch(palette[row.name]), row.label)  # the plots' legend
            header.setToolTip(row.what)
            header.setFont(_font(italic=row.baseline))
            self.table.setVerticalHeaderItem(index, header)
            notes = [row.cells[name].note() for name in card.columns] + [row.sanity_note()]
            for column, (text, note) in enumerate(zip(texts[1:], notes)):
                self.table.setItem(index, column, _cell(text, note))

    def _draw_plots(self, card: ReportCard | None) -> None:
        for plot in self.plots:
            plot.clear()
        if card is None:
            return
        for plot, shown in zip(self.plots, ("hidden", "shown")):
            plot.setLabel("bottom", f"share of {card.pieces} pieces {shown}")  # a decoder-only model's: its prompt's
            plot.setLabel("left", f"mean p({card.predicted})")  # an encoder-only model's: its own decision's
        palette = colours(card.rows)
        for row in card.rows:
            colour = tuple(int(255 * c) for c in palette[row.name])
            style = (
                Qt.PenStyle.DotLine if not row.reads_model else (Qt.PenStyle.DashLine if row.baseline else Qt.PenStyle.SolidLine)
            )
            pen = pg.mkPen(colour, width=2, style=style)
            for plot, curve in zip(self.plots, (row.deletion_curve, row.insertion_curve)):
                if curve is not None:
                    plot.plot(grid(), curve, pen=pen, name=row.label)
            if row.sanity is not None and row.sanity.cascade:
                self.plots[2].plot(list(range(1, len(row.sanity.cascade) + 1)), row.sanity.cascade, pen=pen, name=row.label)
        threshold = pg.InfiniteLine(SANITY_THRESHOLD, angle=0, pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine))
        threshold.setToolTip(f"A map at least this similar after randomisation fails ({SANITY_THRESHOLD:g})")
        self.plots[2].addItem(threshold)
        self.plots[2].getAxis("bottom").setTicks(
            [[(number, short_stage(name)) for number, name in enumerate(card.stages, start=1)]]
        )


def _swatch(colour: tuple) -> QIcon:
    """A square of a method's colour (its curves'), for its row's header."""
    pixmap = QPixmap(12, 12)
    pixmap.fill(QColor.fromRgbF(*colour))
    return QIcon(pixmap)


def _font(bold: bool = False, italic: bool = False) -> QFont:
    font = QFont()
    font.setBold(bold)
    font.setItalic(italic)
    return font


def _cell(text: str, note: str) -> QTableWidgetItem:
    """A table cell: the best bold on green, a failure in red, "—" and "ref." in grey; the note as its tooltip."""
    item = QTableWidgetItem(text)
    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if note:
        item.setToolTip(note)
    if text.endswith("★"):
        item.setFont(_font(bold=True))
        item.setBackground(QBrush(BEST))
    elif "✗" in text or text.startswith("FAIL"):
        item.setForeground(QBrush(FAILED))
    elif text in ("—", "ref."):
        item.setForeground(QBrush(GREY))
    return item
