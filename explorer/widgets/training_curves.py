"""Live training curves: loss, token accuracy, learning rate and BLEU over steps (pyqtgraph).

Points arrive with every step; the plots redraw once a second. A redraw runs pyqtgraph's Python paint
code in the window's thread, which takes the interpreter lock away from the training thread: redrawing
four times a second cost training about a fifth of its speed. Most of a redraw was the axes (py-spy: 40 of
the window thread's 90 lock-holding samples in ``AxisItem.paint``), laid out again whenever their range moved,
and with auto range every axis moved every second. So the ranges grow in steps (1, 2, 5 × 10^k: the step axis
to the next of them above the last step, loss and learning rate from 0 to the next above their largest value)
and the axes are cached as pixmaps: between those steps a redraw repaints only the curves. Each range is padded by a
dot's radius and a little more, in pixels, so a validation dot at the last step or at a perfect score is whole; every
validation series has dots, so a single validation is drawn (a one-point line draws nothing).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer

from explorer.widgets.plot_style import show_light_grid

TRAIN_PEN = pg.mkPen("#4c78a8", width=2)
VALID_PEN = pg.mkPen("#f58518", width=2)
DOT_PX = 7  # a validation dot's size
VALID_SYMBOL = dict(symbol="o", symbolSize=DOT_PX, symbolBrush="#f58518", symbolPen=None)
EXACT_COLOUR = "#b279a2"
EXACT_SYMBOL = dict(symbol="t", symbolSize=DOT_PX, symbolBrush=EXACT_COLOUR, symbolPen=None)
PAD_PX = DOT_PX / 2 + 3  # a dot's radius and a gap: the room at each end of a range


def stepped_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 × 10^k at or above ``value`` (> 0): an axis end that moves rarely."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(mark * power for mark in (1.0, 2.0, 5.0, 10.0) if mark * power >= value * (1 - 1e-12))


class TrainingCurves(pg.GraphicsLayoutWidget):
    def __init__(self):
        super().__init__()
        self.setToolTip("Blue: training batches (smoothed); orange: validation (each epoch, or every N steps)")
        self.setMinimumHeight(260)
        self.train: dict[str, list[float]] = {name: [] for name in ("step", "loss", "accuracy", "learning_rate")}
        self.valid: dict[str, list[float]] = {name: [] for name in ("step", "loss", "accuracy", "bleu", "exact_match")}
        self.loss_plot = self._plot(0, 0, "Loss (cross-entropy per piece)")
        self.accuracy_plot = self._plot(0, 1, "Token accuracy")
        self.rate_plot = self._plot(1, 0, "Learning rate")
        self.bleu_plot = self._plot(1, 1, "Validation BLEU / exact match ×100")
        self.loss_plot.addLegend(offset=(-10, 10))
        self.bleu_plot.addLegend(offset=(-10, -10))
        self.curves = {
            "train_loss": self.loss_plot.plot(pen=TRAIN_PEN, name="train"),
            "valid_loss": self.loss_plot.plot(pen=VALID_PEN, name="validation", **VALID_SYMBOL),
            "train_accuracy": self.accuracy_plot.plot(pen=TRAIN_PEN),
            "valid_accuracy": self.accuracy_plot.plot(pen=VALID_PEN, **VALID_SYMBOL),
            "learning_rate": self.rate_plot.plot(pen=pg.mkPen("#54a24b", width=2)),
            "bleu": self.bleu_plot.plot(pen=VALID_PEN, name="BLEU", **VALID_SYMBOL),
            "exact_match": self.bleu_plot.plot(
                pen=pg.mkPen(EXACT_COLOUR, width=2, style=pg.QtCore.Qt.PenStyle.DashLine), name="exact match ×100", **EXACT_SYMBOL
            ),
        }
        self._ranges: dict[str, tuple[float, float]] = {}  # each plot's range as last set (x: the step axis)
        self._dirty = False
        self._timer = QTimer(self)
        self._timer.setInterval(1000)  # ms; validation points are drawn as soon as they arrive
        self._timer.timeout.connect(self._on_redraw_due)
        self._timer.start()

    def _plot(self, row: int, column: int, title: str) -> pg.PlotItem:
        plot = self.addPlot(row=row, col=column, title=title, enableMenu=False)
        show_light_grid(plot)
        plot.setLabel("bottom", "step")
        plot.setDownsampling(auto=True, mode="peak")  # a long run has more steps than the plot has pixels
        plot.setClipToView(True)
        plot.disableAutoRange()  # ranges grow in steps (_follow_ranges): a moving axis is laid out again each redraw
        for side in ("left", "bottom"):
            axis = plot.getAxis(side)
            axis.setCacheMode(axis.CacheMode.DeviceCoordinateCache)  # a still axis is copied, not painted again
        return plot

    def clear_curves(self) -> None:
        for series in (*self.train.values(), *self.valid.values()):
            series.clear()
        self._ranges.clear()
        self.bleu_plot.setTitle("Validation BLEU / exact match ×100")
        self.accuracy_plot.setTitle("Token accuracy")
        self._dirty = True
        self._on_redraw_due()

    def add_progress(self, progress) -> None:
        """A model.training.trainer.Progress."""
        self.train["step"].append(progress.step)
        self.train["loss"].append(progress.train_loss)
        self.train["accuracy"].append(progress.token_accuracy)
        self.train["learning_rate"].append(progress.learning_rate)
        self._dirty = True

    def add_validation(self, validation) -> None:
        """A model.training.trainer.Validation."""
        scores = validation.scores
        if scores.is_labelling and not self.valid["step"]:  # a classifier: its macro-F1 in place of BLEU
            self.bleu_plot.setTitle("Validation macro-F1 / all labels right ×100")
            self.accuracy_plot.setTitle("Label accuracy")
        self.valid["step"].append(validation.step)
        self.valid["loss"].append(scores.loss)
        self.valid["accuracy"].append(scores.token_accuracy)
        self.valid["bleu"].append(100 * scores.macro_f1 if scores.is_labelling else scores.bleu)
        self.valid["exact_match"].append(100 * scores.exact_match)
        self._dirty = True
        self._on_redraw_due()

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) a curve holds (all of it: what is drawn is clipped to the view); for tests and exports."""
        curve = self.curves[name]
        return curve.xData, curve.yData

    def _on_redraw_due(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        train_steps = np.asarray(self.train["step"], dtype=float)
        valid_steps = np.asarray(self.valid["step"], dtype=float)
        self.curves["train_loss"].setData(train_steps, np.asarray(self.train["loss"], dtype=float))
        self.curves["train_accuracy"].setData(train_steps, np.asarray(self.train["accuracy"], dtype=float))
        self.curves["learning_rate"].setData(train_steps, np.asarray(self.train["learning_rate"], dtype=float))
        for curve, key in (
            ("valid_loss", "loss"),
            ("valid_accuracy", "accuracy"),
            ("bleu", "bleu"),
            ("exact_match", "exact_match"),
        ):
            self.curves[curve].setData(valid_steps, np.asarray(self.valid[key], dtype=float))
        self._follow_ranges()

    def _follow_ranges(self) -> None:
        """The step axis to the stepped ceiling of the last step; loss and learning rate from 0 to theirs; accuracy
        0-1, BLEU and exact match 0-100. Each padded by PAD_PX at both ends."""
        last_step = max(self.train["step"][-1:] + self.valid["step"][-1:], default=1)
        wanted = {
            "step": (0.0, stepped_ceiling(last_step)),
            "loss": (0.0, stepped_ceiling(max(_finite(self.train["loss"]) + _finite(self.valid["loss"]), default=1.0))),
            "learning_rate": (0.0, stepped_ceiling(max(_finite(self.train["learning_rate"]), default=1.0))),
            "accuracy": (0.0, 1.0),
            "bleu": (0.0, 100.0),  # both series are out of 100
        }
        plots = {"loss": self.loss_plot, "learning_rate": self.rate_plot, "accuracy": self.accuracy_plot, "bleu": self.bleu_plot}
        for name, span in wanted.items():
            if self._ranges.get(name) == span:
                continue
            self._ranges[name] = span
            if name == "step":  # one step axis for the four: a single validation point sits at its step
                padding = max(_padding(plot.vb.width()) for plot in plots.values())  # the same range for the four
                for plot in plots.values():
                    plot.setXRange(*span, padding=padding)
            else:
                plots[name].setYRange(*span, padding=_padding(plots[name].vb.height()))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """The ranges padded again for the plots' new size in pixels (a rare event: the axes move once)."""
        super().resizeEvent(event)
        if hasattr(self, "_ranges") and not self.closed:  # closed: its plots are gone
            self._ranges.clear()
            self._follow_ranges()

    def flush(self) -> None:
        """Draw what has arrived now (tests call it instead of waiting for the timer)."""
        self._dirty = True
        self._on_redraw_due()


def _padding(length_px: float) -> float:
    """The share of a range that is PAD_PX pixels on a plot ``length_px`` long (a plot not laid out yet: 300 px)."""
    return min(PAD_PX / (length_px if length_px > 50 else 300.0), 0.1)


def _finite(values: list[float]) -> list[float]:
    return [value for value in values if math.isfinite(value)]
