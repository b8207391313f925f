"""The positional-encoding tab for the active model: the encoding matrix (positions x dimensions),
chosen dimensions as curves over positions, the similarity matrix between positions, and the
relative-position property — PE(pos + k) is a fixed rotation of PE(pos) — as the measured error
over k. For learned positions: the learned table and its similarity matrix. A snapshot of the model's training
(explorer/controllers/timeline.py) is shown as it was then, named above the plots.

Matrices whose values are all ≥ 0 (the similarity of sinusoidal encodings) get a sequential colour
map over (min, max); matrices with both signs a diverging map over a symmetric range. Axes are
numbered at a step fixed by their range (1, 2 or 5 × 10ⁿ), so redrawing keeps the same step, and
the legends sit in a line of their own below the plots, where they cover no data.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.controllers.explore import ExploreController
from explorer.settings_values import SettingsValues
from explorer.widgets.heatmap import HeatmapView
from explorer.widgets.legend_plot import LegendPlot
from explorer.widgets.lines_view import head_colour
from model.family import Positions
from model.figures.layout import FigureError
from model.files import OutputError
from model.inspection.position_reports import positional_report
from model.inspection.positional import DIVERGING_MAP, SEQUENTIAL_MAP, PositionalReport
from model.inspection.positional import colour_scale as positional_colour_scale

MAX_DIMENSIONS = 12  # curves drawn at most
DEFAULT_DIMENSIONS = "0, 1, 8, 9, 32, 33"  # two pairs of fast and one pair of slower (sin, cos) waves
TICK_TARGET = 8  # about this many numbered ticks along an axis
ROTATION_TITLE = "Relative position: max |Rₖ·PE(pos) − PE(pos+k)| over pos"


def nice_step(span: float, target: int = TICK_TARGET) -> float:
    """The smallest step of 1, 2 or 5 × 10ⁿ that numbers ``span`` with at most ``target`` steps."""
    if not span > 0:
        return 1.0
    raw = span / max(target, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))


def index_step(count: int, target: int = TICK_TARGET) -> int:
    """Step between numbered rows or columns (positions, dimensions, offsets): a whole number."""
    return max(1, int(round(nice_step(count, target))))


def colour_scale(values: np.ndarray) -> tuple[tuple[float, float], str]:
    """(levels, pyqtgraph colour map): the core's choice (model.inspection.positional.colour_scale) by name."""
    levels, diverging = positional_colour_scale(values)
    return levels, DIVERGING_MAP if diverging else SEQUENTIAL_MAP


def parse_dimensions(text: str, d_model: int, first: int = 0) -> tuple[list[int], list[str]]:
    """The dimensions (or heads) to draw from a comma-separated list numbered from ``first`` (heads count from 1,
    as everywhere in the app), as indices from 0, and why each other entry was ignored."""
    chosen: list[int] = []
    problems: list[str] = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        digits = part.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()):  # ASCII digits only: int() would take '٣' or '1_0'
            problems.append(f"“{part}” is not a number")
            continue
        number = int(part)
        dimension = number - first
        if not 0 <= dimension < d_model:
            problems.append(f"{number} is out of range {first}..{first + d_model - 1}")
        elif dimension in chosen:
            problems.append(f"{number} is a duplicate")
        elif len(chosen) >= MAX_DIMENSIONS:
            problems.append(f"{number}: at most {MAX_DIMENSIONS} are drawn")
        else:
            chosen.append(dimension)
    return chosen, problems


class NumberedHeatmap(HeatmapView):
    """A heatmap of numbered rows and columns (positions, dimensions), labelled at a fixed step."""

    def _set_ticks(self) -> None:
        for side, labels in (("left", self.query_labels), ("top", self.key_labels)):
            axis = self.plot.getAxis(side)
            if hasattr(axis, "set_tokens"):
                axis.set_tokens(None)  # numbers, not tokens: a plain axis with the ticks below
            step = index_step(len(labels))
            axis.setTicks([[(index + 0.5, labels[index]) for index in range(0, len(labels), step)], []])


class PositionalTab(QWidget):
    def __init__(
        self,
        explore: ExploreController,
        settings: QSettings | SettingsValues | None = None,
        lengths: QWidget | None = None,  # the length experiment's panel, a page beside the encoding's
    ) -> None:
        super().__init__()
        self.explore, self.settings = explore, SettingsValues.of(settings)
        self.report: PositionalReport | None = None
        self.dimension_problems: list[str] = []
        self._new_model = False  # the model changed: a dimension list that does not fit it is replaced
        self.positions = QSpinBox()
        self.positions.setRange(2, 4096)
        self.positions.setValue(64)
        self.positions.setToolTip("How many positions to show")
        self.dimensions = QLineEdit(DEFAULT_DIMENSIONS)
        self.dimensions_label = QLabel("Dimensions:")
        self.dimensions.setToolTip(f"Dimensions drawn as curves over positions (comma-separated, at most {MAX_DIMENSIONS})")
        self.dimensions_error = QLabel()
        self.dimensions_error.setWordWrap(True)
        self.dimensions_error.setStyleSheet("color: #d62728;")
        self.dimensions_error.hide()
        self.summary, self.snapshot = QLabel(), QLabel()  # the snapshot of the model's training shown, if any
        self.summary.setWordWrap(True)
        self.table_view = NumberedHeatmap(value_label="encoding value")
        self.similarity_view = NumberedHeatmap(value_label="dot product")
        self.curves = LegendPlot("Chosen dimensions over positions", "position")
        self.rotation = LegendPlot(ROTATION_TITLE, "offset k")
        self.rotation.plot_item.setLogMode(y=True)
        self.rotation.plot_item.getAxis("left").setTickSpacing(levels=[(1, 0)])  # one tick a decade
        for widget, tip in (
            (self.table_view, "The encoding added to each position's embedding"),
            (self.similarity_view, "Dot products between the encodings of two positions"),
            (self.curves, "Each dimension is a sine or cosine of its own wavelength"),
            (
                self.rotation,
                "After rotating each (sin, cos) pair by k·ω, PE(pos) lands on "
                "PE(pos+k) for every pos: the error is at float precision",
            ),
        ):
            widget.setToolTip(tip)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Positions:"))
        controls.addWidget(self.positions)
        controls.addWidget(self.dimensions_label)
        controls.addWidget(self.dimensions, 1)
        export_button = QPushButton("Export…")
        export_button.setToolTip(
            "These four plots as a figure (PNG, SVG, PDF; the Explore tab's figure settings), or the encoding table as CSV or NPY"
        )
        export_button.clicked.connect(self._on_export_requested)
        controls.addWidget(export_button)
        grid = QGridLayout()
        grid.addWidget(self.table_view, 0, 0)
        grid.addWidget(self.similarity_view, 0, 1)
        grid.addWidget(self.curves, 1, 0)
        grid.addWidget(self.rotation, 1, 1)
        encoding = QWidget()
        layout = QVBoxLayout(encoding)
        layout.addLayout(controls)
        layout.addWidget(self.dimensions_error)
        layout.addWidget(self.snapshot)
        layout.addWidget(self.summary)
        layout.addLayout(grid, 1)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.pages = QTabWidget()
        self.pages.addTab(encoding, "Encoding")
        if lengths is not None:
            self.pages.addTab(lengths, "Length experiment")
            self.pages.setTabToolTip(1, "Each positional scheme trained on short sentences and read on longer ones")
        outer.addWidget(self.pages)
        self.positions.valueChanged.connect(self._on_options_changed)
        self.dimensions.editingFinished.connect(self._on_options_changed)
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(lambda _bundle: self._on_options_changed())
        explore.snapshot_changed.connect(self._on_snapshot_changed)
        self._on_snapshot_changed(explore.snapshot)
        self._on_model_changed(explore.bundle)

    def _on_snapshot_changed(self, name: str) -> None:
        self.snapshot.setText(f"<b>Snapshot of its training:</b> {html.escape(name)}" if name else "")
        self.snapshot.setVisible(bool(name))

    def chosen_dimensions(self, d_model: int) -> list[int]:
        first = 1 if self.report is not None and self.report.relative else 0
        return parse_dimensions(self.dimensions.text(), d_model, first)[0]

    def _choices_for(self, report: PositionalReport) -> tuple[list[int], list[str]]:
        """The dimensions (heads, from 1, for a relative bias) the box names. On a model's first drawing, a list
        written for another model (dimension 8 for 4 heads) is replaced by this model's default, not flagged."""
        first, count = (1, report.table.shape[1]) if report.relative else (0, report.table.shape[1])
        chosen, problems = parse_dimensions(self.dimensions.text(), count, first)
        if problems and self._new_model:
            fitting = [int(d) for d in DEFAULT_DIMENSIONS.split(",") if int(d) < count]  # a narrow table: the pairs it has
            if report.relative or not fitting:
                default = ", ".join(str(first + d) for d in range(min(count, 4)))
            else:
                default = ", ".join(map(str, fitting))
            self.dimensions.setText(default)
            chosen, problems = parse_dimensions(default, count, first)
        self._new_model = False
        return chosen, problems

    def _on_model_changed(self, bundle) -> None:
        if bundle is None:
            self.report = None
            self.summary.setText("Open or train a model to see its positional encoding.")
            return
        self.positions.blockSignals(True)
        self.positions.setMaximum(bundle.config.max_len)
        self.positions.blockSignals(False)
        self._new_model = True
        self._on_options_changed()

    def _show_dimension_problems(self, problems: list[str]) -> None:
        self.dimension_problems = problems
        if problems:
            self.dimensions_error.setText("Ignored: " + "; ".join(problems) + ".")
            self.dimensions.setStyleSheet("QLineEdit { border: 2px solid #d62728; }")
        else:
            self.dimensions_error.clear()
            self.dimensions.setStyleSheet("")
        self.dimensions_error.setVisible(bool(problems))

    def _draw_matrix(
        self, view: NumberedHeatmap, values: np.ndarray, rows: list[str], columns: list[str], title: str, axes: tuple[str, str]
    ) -> None:
        levels, colours = colour_scale(values)
        view.set_matrix(values, rows, columns, title, levels=levels)
        view.color_bar.setColorMap(pg.colormap.get(colours))
        view.plot.getAxis("left").set_name(axes[0])
        view.plot.getAxis("top").set_name(axes[1])

    def _on_options_changed(self, *_args) -> None:
        bundle = self.explore.bundle
        if bundle is None:
            return
        self.report = report = positional_report(bundle, self.positions.value())
        if report is None:
            for view in (self.table_view, self.similarity_view):
                view.set_matrix(np.zeros((1, 1)), [""], [""], "", levels=(0.0, 1.0))
            self.curves.clear()
            self.rotation.clear()
            why = (
                "an RNN has no positional encoding: its recurrence reads the pieces in order, so position is in its state"
                if bundle.family.capabilities.positions is Positions.RECURRENCE
                else "this model has no positional table or position bias to show"
            )
            self.summary.setText(f"{bundle.describe()}: {why}.")
            return
        n_positions, d_model = report.table.shape
        titles, first = report.panel_titles(), 1 if report.relative else 0  # heads from 1, dimensions from 0
        columns = [str(first + d) for d in range(d_model)]
        for view, label in zip((self.table_view, self.similarity_view), report.value_labels()):
            view.set_value_label(label)
        self._draw_matrix(self.table_view, report.table, report.row_labels, columns, *titles["table"])
        second_columns = [str(first + d) for d in range(report.similarity.shape[1])]
        second_rows = report.row_labels if report.relative else [str(p) for p in range(n_positions)]
        self._draw_matrix(self.similarity_view, report.similarity, second_rows, second_columns, *titles["second"])
        self.dimensions_label.setText("Heads:" if report.relative else "Keys:" if report.kind == "none" else "Dimensions:")
        chosen, problems = self._choices_for(report)
        self._show_dimension_problems(problems)
        self._draw_curves(report, chosen)
        self._draw_rotation(report)
        self.rotation.setVisible(report.table_like)  # a bias by distance, or masks, have no rotation to measure
        if report.summary:  # said by the report itself (the app's Transformer's rope, ALiBi, relative bias, none)
            self.summary.setText(report.summary)
        elif report.relative:
            self.summary.setText(
                f"T5 adds no position vector to the embeddings: each of the {d_model} heads of the first layer adds a learned "
                "bias to its attention logits by the distance key − query (in buckets: exact near, logarithmic far). "
                "Left the encoder's (both directions), right the decoder's (only keys at or before the query); "
                "the curves are the chosen heads (the dimensions box picks heads here)."
            )
        elif report.kind == "rotary":
            self.summary.setText(
                f"Rotary positions, heads of {d_model} dimensions: nothing is added to the embeddings; every head turns each "
                "(sin, cos) pair of its queries and keys by the angle p·w (left). A fixed rotation maps the angles at p to "
                f"those at p+k: the largest error over k ≤ {report.offsets[-1]} is {np.nanmax(report.rotation_error):.1e}, "
                "so a query–key score depends on their offset only (right: constant along each diagonal)."
            )
        elif report.kind == "sinusoidal":
            self.summary.setText(
                f"Sinusoidal encoding, d_model {d_model}. For every offset k a fixed rotation of each (sin, cos) pair "
                f"maps PE(pos) to PE(pos+k) for all positions: the largest error over k ≤ {report.offsets[-1]} is "
                f"{np.nanmax(report.rotation_error):.1e}, against {report.unrotated_error.max():.2f} without rotating."
            )
        else:
            self.summary.setText(
                f"Learned positional table, d_model {d_model}: no fixed rotation relates its "
                "positions; the similarity matrix shows what it learned about nearness."
            )

    def _draw_curves(self, report, chosen: list[int]) -> None:
        """The chosen dimensions over positions, on axes fixed by the whole table (not by the dimensions
        chosen), so that choosing others keeps the scale and the tick step."""
        n_positions = report.table.shape[0]
        positions = report.row_values if report.relative else np.arange(n_positions)
        title, (x_label, prefix) = report.panel_titles()["curves"]
        first = 1 if report.relative else 0
        self.curves.clear()
        self.curves.plot_item.setTitle(title[:1].upper() + title[1:])
        self.curves.plot_item.setLabel("bottom", x_label)
        for index, dimension in enumerate(chosen):
            self.curves.plot(
                positions,
                report.table[:, dimension],
                pen=pg.mkPen(head_colour(index), width=2),
                name=f"{prefix} {first + dimension}",
            )
        limit = float(np.abs(report.table).max()) or 1.0
        plot = self.curves.plot_item
        plot.setXRange(float(positions[0]), float(max(positions[-1], positions[0] + 1)), padding=0)
        plot.setYRange(-limit, limit, padding=0.05)
        plot.getAxis("bottom").setTickSpacing(levels=[(index_step(n_positions - 1), 0)])
        plot.getAxis("left").setTickSpacing(levels=[(nice_step(2 * limit, 4), 0)])

    def _draw_rotation(self, report) -> None:
        self.rotation.clear()
        if report.relative:
            return
        if report.rotates:
            self.rotation.plot(
                report.offsets,
                np.maximum(report.rotation_error, 1e-12),
                pen=pg.mkPen("#54a24b", width=2),
                symbol="o",
                symbolSize=5,
                name="after rotation Rₖ",
            )
        self.rotation.plot(
            report.offsets,
            np.maximum(report.unrotated_error, 1e-12),
            pen=pg.mkPen("#e45756", width=2, style=Qt.PenStyle.DashLine),
            name="without rotation",
        )
        plot = self.rotation.plot_item
        plot.setXRange(float(report.offsets[0]), float(report.offsets[-1]), padding=0.02)
        plot.getAxis("bottom").setTickSpacing(levels=[(index_step(int(report.offsets[-1])), 0)])

    # --- export ---------------------------------------------------------------------------------
    def export_to(self, path: str | Path) -> Path:
        """The four plots as a figure, or the encoding table [positions, d_model] as data, by the suffix."""
        from explorer.widgets.figure_settings import figure_options  # deferred: matplotlib loads with the first export
        from model.cli.recorded import model_reference, positional_record  # deferred: matplotlib loads with the first export
        from model.figures.export import save_table  # deferred: matplotlib loads with the first export
        from model.figures.positional import positional_figure  # deferred: matplotlib loads with the first export
        from model.figures.saving import save_figure  # deferred: matplotlib loads with the first export
        from model.provenance.embed import write_sidecar  # deferred: Pillow and pypdf load with the first export

        if self.report is None:
            raise OutputError("no model is open")
        path = Path(path)
        bundle = self.explore.bundle
        report = self.report
        table = report.table  # [positions, d_model]
        name = Path(bundle.path).stem if bundle is not None and bundle.path else "unsaved model"
        name += f", {self.explore.snapshot}" if self.explore.snapshot else ""
        options, dpi = figure_options(self.settings, "viridis", name)
        dimensions = self.chosen_dimensions(table.shape[1])[:12]
        record = None
        if bundle is not None:  # the export command of this view (model/provenance/), as the command line records it
            model = model_reference(bundle)
            record = positional_record(bundle, model, report, self.positions.value(), dimensions, options, dpi)
        if path.suffix.lower() in (".csv", ".npy"):
            columns = [str(d) for d in range(table.shape[1])]
            written = save_table(table, table, report.row_labels, columns, path, "position \\ dimension")
            write_sidecar(written, record)
            return written
        return save_figure(positional_figure(report, dimensions, options), path, dpi, record)

    def _on_export_requested(self) -> None:
        folder = self.settings.folder("explore/export_folder")
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Export the positional encoding",
            str(folder / "positional.png"),
            "PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf);;CSV table (*.csv);;NumPy array (*.npy)",
        )
        if not path:
            return
        try:
            written = self.export_to(path)
        except (OutputError, FigureError) as error:
            self.explore.message.emit(f"Export failed: {error}")
            return
        self.explore.message.emit(f"Exported {written}")
