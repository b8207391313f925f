"""The Positional tab's length experiment (model/lengths/): its settings, Run, Cancel and Save…, a progress bar, and
the curves (exact match and token accuracy over the input's length, one per scheme, the trained lengths shaded), whose
points open their model and sentence in the Explore tab when clicked. Shows what it is given; emits what the user asks."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.widgets.legend_plot import LegendPlot
from model.figures.lengths import SCHEME_COLOURS
from model.lengths.experiment import CORPORA, LengthResult, LengthSettings
from model.nn.config import TRANSFORMER_POSITIONS

TRAINED_BRUSH = (200, 200, 200, 70)  # the trained lengths' shade


def _spin(low: int, high: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setToolTip(tip)
    return box


class LengthsPanel(QWidget):
    """Signals: ``run_requested(LengthSettings)``, ``cancel_requested()``, ``save_requested(path)``,
    ``point_clicked(scheme, length)``."""

    run_requested = Signal(object)
    cancel_requested = Signal()
    save_requested = Signal(str)
    point_clicked = Signal(str, int)

    def __init__(self) -> None:
        super().__init__()
        defaults = LengthSettings()
        self.corpus = QComboBox()
        self.corpus.addItems(CORPORA)
        self.corpus.setToolTip("copy, reverse and sort: symbol sequences (one piece per symbol); toy-fr: sentences (words)")
        self.train_max = _spin(2, 200, defaults.train_max, "The longest training sentence (pieces; words for toy-fr)")
        self.test_max = _spin(2, 400, defaults.test_max, "The longest sentence read after training")
        self.steps = _spin(10, 100_000, defaults.steps, "Training steps, the same for every scheme")
        self.per_length = _spin(1, 500, defaults.per_length, "Test sentences read at each length")
        self.schemes = {name: QCheckBox(name) for name in TRANSFORMER_POSITIONS}
        for box in self.schemes.values():
            box.setChecked(True)
        self.run_button, self.cancel_button, self.save_button = QPushButton("Run"), QPushButton("Cancel"), QPushButton("Save…")
        self.run_button.setToolTip("Train one model per scheme checked (same data, seed and steps), then read every length")
        self.cancel_button.setEnabled(False)
        self.save_button.setEnabled(False)
        self.save_button.setToolTip("The curves as a figure (PNG, SVG, PDF) or the table (CSV)")
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setFormat("")
        self.note = QLabel("Train the same model with each positional scheme on short sentences and read longer ones.")
        self.note.setWordWrap(True)
        self.plots = [LegendPlot(title, "input length") for title in ("Exact match", "Token accuracy")]
        for plot in self.plots:
            plot.plot_item.setYRange(0, 1, padding=0.03)
        self._layout()
        self.run_button.clicked.connect(lambda: self.run_requested.emit(self.settings()))
        self.cancel_button.clicked.connect(self.cancel_requested.emit)
        self.save_button.clicked.connect(self._on_save_clicked)

    def _layout(self) -> None:
        first, second = QHBoxLayout(), QHBoxLayout()
        for label, widget in (
            ("Corpus:", self.corpus),
            ("Train up to:", self.train_max),
            ("Read up to:", self.test_max),
            ("Steps:", self.steps),
            ("Sentences per length:", self.per_length),
        ):
            first.addWidget(QLabel(label))
            first.addWidget(widget)
        first.addStretch(1)
        second.addWidget(QLabel("Schemes:"))
        for box in self.schemes.values():
            second.addWidget(box)
        second.addStretch(1)
        for button in (self.run_button, self.cancel_button, self.save_button):
            second.addWidget(button)
        plots = QHBoxLayout()
        for plot in self.plots:
            plots.addWidget(plot, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(first)
        layout.addLayout(second)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.note)
        layout.addLayout(plots, 1)

    def settings(self) -> LengthSettings:
        """The settings the form holds."""
        schemes = tuple(name for name, box in self.schemes.items() if box.isChecked())
        return LengthSettings(
            corpus=self.corpus.currentText(),
            train_max=self.train_max.value(),
            test_max=self.test_max.value(),
            schemes=schemes,
            steps=self.steps.value(),
            per_length=self.per_length.value(),
        )

    def set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        if not running:
            self.progress_bar.setRange(0, 1)
            self.progress_bar.setValue(0)
            self.progress_bar.setFormat("")

    def show_progress(self, stage: str, done: int, total: int) -> None:
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(min(done, total))
        self.progress_bar.setFormat(f"{stage} {done}/{total}")

    def show_message(self, text: str) -> None:
        self.note.setText(text)

    def show_result(self, result: LengthResult | None) -> None:
        """The curves of ``result`` (none: cleared), each point clickable."""
        self.save_button.setEnabled(result is not None)
        for plot in self.plots:
            plot.clear()
        if result is None:
            return
        settings = result.settings
        for plot, attribute in zip(self.plots, ("exact_match", "token_accuracy")):
            shade = pg.LinearRegionItem((settings.train_min - 0.5, settings.train_max + 0.5), movable=False, brush=TRAINED_BRUSH)
            shade.setToolTip("The lengths the models were trained on")
            for edge in shade.lines:
                edge.setPen(pg.mkPen(TRAINED_BRUSH[:3]))
            plot.plot_item.addItem(shade)
            for scheme in settings.schemes:
                rows = result.of(scheme)
                colour = SCHEME_COLOURS.get(scheme, "#333333")
                lengths, values = [row.length for row in rows], [getattr(row, attribute) for row in rows]
                plot.plot(lengths, values, pen=pg.mkPen(colour, width=2), name=scheme)
                points = pg.ScatterPlotItem(lengths, values, size=7, brush=pg.mkBrush(colour), pen=None, data=[scheme] * len(rows))
                points.setToolTip("Click a point: its model and a sentence of that length in the Explore tab")
                points.sigClicked.connect(self._on_points_clicked)
                plot.plot_item.addItem(points)
            plot.plot_item.setXRange(0.5, settings.test_max + 0.5, padding=0)

    def _on_points_clicked(self, _item, points, *_args) -> None:
        if len(points):
            point = points[0]
            self.point_clicked.emit(str(point.data()), int(round(point.pos().x())))

    def _on_save_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Save the length experiment", "lengths.pdf", "Figures and tables (*.pdf *.png *.svg *.csv)"
        )
        if path:
            self.save_requested.emit(path)
