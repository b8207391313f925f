"""The Explore tab's "Over training" view: curves per head over the snapshots of the open model's timeline, on one
log step axis (explorer/widgets/timeline_plots.py): training loss and validation scores, AER of each cross-attention
head with the step each became alignment-like (▼), normalised entropy and roles of the heads of a kind, importance
when measured; the largest changes between consecutive snapshots shaded and listed ("phase changes"). Clicking one
asks to see its pair of snapshots; the explored snapshot is a dashed line.

It is given ``HeadCurves`` (model/timeline/curves.py: plain arrays) and says what the user asked through signals.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from explorer.widgets.lines_view import head_colour
from explorer.widgets.progress_bar import show_busy, show_counted
from explorer.widgets.scroll_area import scrolled
from explorer.widgets.timeline_plots import (
    MARKED_CHANGES,
    CurvesLayoutWidget,
    head_legend,
    head_lines,
    log_step,
    mark_changes,
    role_legend,
    role_squares,
    step_plot,
)
from model.kinds import AttentionKind
from model.timeline.curves import HeadCurves

EMPTY_TEXT = (
    "Curves over training: while this view is shown, the sentence is decoded with every snapshot (forced along the final "
    "model's translation) and each head's entropy, role and AER measured, in the background. “Compute curves” measures "
    "them again, with head importance when asked (the slowest curve)."
)
VALID_COLOURS = ("#e45756", "#4c78a8", "#54a24b", "#b279a2")


class CurvesView(QWidget):
    compute_requested = Signal(int)  # head importance on this many pairs (0: none)
    cancel_requested = Signal()
    change_chosen = Signal(int)  # a phase change's place in the list (from 0)

    def __init__(self) -> None:
        super().__init__()
        self.curves: HeadCurves | None = None
        self.step: int | None = None  # the explored snapshot's step
        self.plots: list[pg.PlotItem] = []
        self._markers: list[pg.InfiniteLine] = []
        self.compute_button = QPushButton("Compute curves")
        self.compute_button.setToolTip(
            "Measure the curves again, in the background (they follow the sentence on their own; head importance only "
            "when asked here)"
        )
        self.importance = QCheckBox("with head importance on")
        self.importance.setToolTip("Importance needs a backward pass per sentence and snapshot: the slowest curve")
        self.importance_pairs = QSpinBox()
        self.importance_pairs.setRange(1, 1000)
        self.importance_pairs.setValue(20)
        self.importance_pairs.setSuffix(" pairs")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.kind = QComboBox()
        self.kind.setToolTip("The kind of attention whose heads' entropy and roles are drawn")
        self.kind.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.layout_widget = CurvesLayoutWidget()
        self.empty = QLabel(EMPTY_TEXT)
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.changes = QListWidget()
        self.changes.setWordWrap(True)
        self.changes.setToolTip(
            "The largest changes between consecutive snapshots, ranked by rate: the change divided by the distance of the two "
            "snapshots in log step, ln(1 + step), so that a sudden change ranks above a slow one of the same size. Click one "
            "to see it"
        )
        self.onsets = QLabel()
        self.onsets.setWordWrap(True)
        self._layout()
        self.compute_button.clicked.connect(self._on_compute_clicked)
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.changes.itemClicked.connect(lambda item: self.change_chosen.emit(self.changes.row(item)))
        self.kind.activated.connect(lambda _index: self._draw())
        self.show_curves(None)

    def _layout(self) -> None:
        row = QHBoxLayout()
        for widget in (self.compute_button, self.importance, self.importance_pairs, self.cancel_button, self.progress):
            row.addWidget(widget)
        row.addWidget(self.status, 1)
        row.addWidget(QLabel("Heads of:"))
        row.addWidget(self.kind)
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.onsets)  # first: the list below scrolls, a label at the bottom was cut off
        ranked = QLabel("<b>Phase changes</b>, by rate: change ÷ log-step distance (click one)")
        ranked.setWordWrap(True)
        ranked.setToolTip(self.changes.toolTip())
        side_layout.addWidget(ranked)
        side_layout.addWidget(self.changes, 1)
        plots = QWidget()
        plots_layout = QVBoxLayout(plots)
        plots_layout.setContentsMargins(0, 0, 0, 0)
        plots_layout.addWidget(self.empty)
        plots_layout.addWidget(self.layout_widget, 1)
        plots_layout.addWidget(self.legend)
        # Each pane scrolls when the window leaves it less than it needs (issue 39: the plots and the onsets were cut).
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(scrolled(plots))
        splitter.addWidget(scrolled(side))
        splitter.setSizes([760, 300])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(row)
        layout.addWidget(splitter, 1)

    def _on_compute_clicked(self) -> None:
        self.compute_requested.emit(self.importance_pairs.value() if self.importance.isChecked() else 0)

    # --- state -----------------------------------------------------------------------------------
    def set_running(self, running: bool) -> None:
        self.compute_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)
        if running:
            show_busy(self.progress)

    def set_progress(self, stage: str, done: int, total: int) -> None:
        show_counted(self.progress, done, total)
        self.progress.setFormat(f"{stage}: {done}/{total}")
        self.progress.setToolTip(f"{stage}: {done} of {total} snapshots")

    def show_message(self, text: str) -> None:
        self.status.setText(text)

    def mark_step(self, step: int | None) -> None:
        """The explored snapshot's step, a dashed line on every plot."""
        self.step = step
        for marker in self._markers:
            marker.setVisible(step is not None)
            if step is not None:
                marker.setValue(float(log_step(step)))

    # --- drawing ---------------------------------------------------------------------------------
    def show_curves(self, curves: HeadCurves | None) -> None:
        self.curves = curves
        chosen = self.kind.currentData()
        self.kind.clear()
        for kind in curves.kinds if curves is not None else ():
            self.kind.addItem(kind.label, kind)
        if self.kind.count():
            wanted = chosen if self.kind.findData(chosen) >= 0 else AttentionKind.CROSS
            self.kind.setCurrentIndex(max(self.kind.findData(wanted), 0))
        self.changes.clear()
        if curves is not None:
            self.changes.addItems([change.describe() for change in curves.phase_changes])
            onsets = [html.escape(onset.describe()) for onset in curves.onsets]
            self.onsets.setText(
                "<b>Alignment-like from</b> (AER &lt; {:g} to the end):<br>{}".format(
                    curves.onset_threshold, "<br>".join(onsets) or "no head yet"
                )
                if curves.aer is not None
                else "No AER: this model has no cross-attention, or its corpus no gold alignments."
            )
        else:
            self.onsets.setText("")
        self._draw()

    def _draw(self) -> None:
        self.layout_widget.clear()
        self.plots, self._markers = [], []
        curves = self.curves
        self.empty.setVisible(curves is None)
        self.layout_widget.setVisible(curves is not None)
        self.legend.setVisible(curves is not None)
        if curves is None:
            self.layout_widget.fit_minimum()
            return
        x = log_step(curves.steps)
        kind = AttentionKind.parse(self.kind.currentData()) if self.kind.count() else curves.kinds[0]  # Qt gives text
        loss, scores = self._draw_training(curves, x)
        aer = self._draw_aer(curves, x)
        entropy = step_plot(self.layout_widget, 2, 0, f"Normalised entropy, {kind.label}", "entropy")
        head_lines(entropy, x, curves.normalised_entropy[kind])
        entropy.setYRange(0, 1.02, padding=0)
        n_layers, n_heads = curves.normalised_entropy[kind].shape[1:]
        self.legend.setText(head_legend(n_layers, n_heads, min(MARKED_CHANGES, len(curves.phase_changes))))
        importance = curves.importance if curves.importance and kind in curves.importance else None
        # The roles beside the AER and entropy, as high as both: a row a head, each named (12 rows for 3 x 4 heads).
        roles = step_plot(self.layout_widget, 1, 1, "", "", rowspan=3 if importance is not None else 2)
        roles.setTitle(f"Roles, {kind.value}: {role_legend(role_squares(roles, x, curves.roles[kind]))}", size="9pt")
        self.plots = [loss, scores, aer, entropy, roles]
        if importance is not None:
            importance_plot = step_plot(self.layout_widget, 3, 0, f"Importance ({curves.importance_where})", "importance")
            head_lines(importance_plot, x, importance[kind])
            self.plots.append(importance_plot)
        stretches = [(c.rank, c.step_before, c.step_after) for c in curves.phase_changes]
        for plot in self.plots:
            if plot is not loss:
                plot.setXLink(loss)
            mark_changes(plot, stretches, 1.0 if plot is aer and curves.aer is not None else None)
            marker = pg.InfiniteLine(0.0, angle=90, pen=pg.mkPen("#333", width=1, style=Qt.PenStyle.DashLine))
            plot.addItem(marker, ignoreBounds=True)
            self._markers.append(marker)
        loss.setXRange(float(x.min()), float(x.max()), padding=0.04)
        grid = self.layout_widget.ci.layout
        for column in (0, 1):  # the two columns share the width, the rows the height
            grid.setColumnStretchFactor(column, 1)
        for row in range(len(self.plots) - 2):
            grid.setRowStretchFactor(row, 1)
        self.mark_step(self.step)
        self.layout_widget.fit_minimum()

    def _draw_training(self, curves: HeadCurves, x: np.ndarray) -> tuple[pg.PlotItem, pg.PlotItem]:
        """The training loss (and validation losses), and the other validation scores (a BLEU out of 100 ÷ 100)."""
        loss = step_plot(self.layout_widget, 0, 0, "Training loss (validation loss ●)", "loss")
        loss.plot(x, curves.train_loss, pen=pg.mkPen("k", width=2), symbol="o", symbolSize=4, connect="finite")
        for name, values in curves.validation.items():
            if "loss" in name:
                loss.plot(x, values, pen=None, symbol="o", symbolSize=7, symbolBrush="#e45756")
        scores = step_plot(self.layout_widget, 0, 1, "", "score")
        names = []
        for number, (name, values) in enumerate((n, v) for n, v in curves.validation.items() if "loss" not in n):
            scaled = values / 100 if np.nanmax(np.abs(values), initial=0) > 1.5 else values
            brush = VALID_COLOURS[number % len(VALID_COLOURS)]
            scores.plot(x, scaled, pen=pg.mkPen(brush, width=1), symbol="o", symbolSize=7, symbolBrush=brush, connect="finite")
            names.append(f'<span style="color:{brush}">●</span> {html.escape(name)}{" ÷ 100" if scaled is not values else ""}')
        scores.setTitle(f"Validation: {' '.join(names) or 'none recorded'}", size="9pt")
        return loss, scores

    def _draw_aer(self, curves: HeadCurves, x: np.ndarray) -> pg.PlotItem:
        """Each cross head's AER, the threshold dashed and each head's onset of alignment (▼)."""
        aer = step_plot(self.layout_widget, 1, 0, f"AER of each cross head ({curves.aer_where or 'none'})", "AER")
        if curves.aer is None:
            return aer
        head_lines(aer, x, curves.aer)
        aer.addItem(pg.InfiniteLine(curves.onset_threshold, angle=0, pen=pg.mkPen("#888", style=Qt.PenStyle.DashLine)))
        for onset in curves.onsets:
            at = [float(log_step(onset.step))]
            aer.plot(at, [onset.aer], pen=None, symbol="t", symbolSize=12, symbolBrush=head_colour(onset.head))
        aer.setYRange(0, 1.02, padding=0)
        return aer
