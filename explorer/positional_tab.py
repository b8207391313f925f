"""The positional-encoding tab for the active model: the encoding matrix (positions x dimensions),
chosen dimensions as curves over positions, the similarity matrix between positions, and the
relative-position property — PE(pos + k) is a fixed rotation of PE(pos) — as the measured error
over k. For learned positions: the learned table and its similarity matrix.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from model.positional import positional_report

from .heatmap import HeatmapView
from .lines_view import head_colour
from .plot_style import show_light_grid


class PositionalTab(QWidget):
    def __init__(self, session):
        super().__init__()
        self.session = session
        self.report = None
        self.positions = QSpinBox()
        self.positions.setRange(2, 4096)
        self.positions.setValue(64)
        self.positions.setToolTip("How many positions to show")
        self.dimensions = QLineEdit("0, 1, 8, 9, 32, 33")
        self.dimensions.setToolTip("Dimensions drawn as curves over positions (comma-separated)")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.table_view = HeatmapView(value_label="encoding value")
        self.similarity_view = HeatmapView(value_label="dot product")
        self.curves = pg.PlotWidget(title="Chosen dimensions over positions")
        self.curves.setLabel("bottom", "position")
        self.curves.addLegend(offset=(-10, 10))
        show_light_grid(self.curves)
        self.rotation = pg.PlotWidget(title="Relative position: max |R_k·PE(pos) − PE(pos+k)| over pos")
        self.rotation.setLabel("bottom", "offset k")
        self.rotation.setLogMode(y=True)
        self.rotation.addLegend(offset=(-10, 10))
        show_light_grid(self.rotation)
        for widget, tip in ((self.table_view, "The encoding added to each position's embedding"),
                            (self.similarity_view, "Dot products between the encodings of two positions"),
                            (self.curves, "Each dimension is a sine or cosine of its own wavelength"),
                            (self.rotation, "After rotating each (sin, cos) pair by k·ω, PE(pos) lands on "
                                            "PE(pos+k) for every pos: the error is at float precision")):
            widget.setToolTip(tip)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Positions:"))
        controls.addWidget(self.positions)
        controls.addWidget(QLabel("Dimensions:"))
        controls.addWidget(self.dimensions, 1)
        grid = QGridLayout()
        grid.addWidget(self.table_view, 0, 0)
        grid.addWidget(self.similarity_view, 0, 1)
        grid.addWidget(self.curves, 1, 0)
        grid.addWidget(self.rotation, 1, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.summary)
        layout.addLayout(grid, 1)
        self.positions.valueChanged.connect(self._on_options_changed)
        self.dimensions.editingFinished.connect(self._on_options_changed)
        session.model_changed.connect(self._on_model_changed)
        self._on_model_changed(session.bundle)

    def chosen_dimensions(self, d_model: int) -> list[int]:
        chosen = []
        for part in self.dimensions.text().replace(";", ",").split(","):
            part = part.strip()
            if part.isdigit() and int(part) < d_model and int(part) not in chosen:
                chosen.append(int(part))
        return chosen[:12]

    def _on_model_changed(self, bundle) -> None:
        if bundle is None:
            self.report = None
            self.summary.setText("Open or train a model to see its positional encoding.")
            return
        self.positions.blockSignals(True)
        self.positions.setMaximum(bundle.config.max_len)
        self.positions.blockSignals(False)
        self._on_options_changed()

    def _on_options_changed(self, *_args) -> None:
        bundle = self.session.bundle
        if bundle is None:
            return
        self.report = report = positional_report(bundle, self.positions.value())
        n_positions, d_model = report.table.shape
        labels = [str(p) for p in range(n_positions)]
        limit = float(np.abs(report.table).max()) or 1.0
        self.table_view.set_matrix(report.table, labels, [str(d) for d in range(d_model)],
                                   f"{report.kind} encoding: positions × dimensions", levels=(-limit, limit))
        self.table_view.plot.getAxis("left").setLabel("position")
        self.table_view.plot.getAxis("top").setLabel("dimension")
        self.table_view.color_bar.setColorMap(pg.colormap.get("CET-D1"))
        similarity_limit = float(np.abs(report.similarity).max()) or 1.0
        self.similarity_view.set_matrix(report.similarity, labels, labels, "similarity PE(i)·PE(j)",
                                        levels=(-similarity_limit, similarity_limit))
        self.similarity_view.plot.getAxis("left").setLabel("position i")
        self.similarity_view.plot.getAxis("top").setLabel("position j")
        self.similarity_view.color_bar.setColorMap(pg.colormap.get("CET-D1"))
        self.curves.clear()
        for index, dimension in enumerate(self.chosen_dimensions(d_model)):
            self.curves.plot(np.arange(n_positions), report.table[:, dimension],
                             pen=pg.mkPen(head_colour(index), width=2), name=f"dim {dimension}")
        self.rotation.clear()
        if report.kind == "sinusoidal":
            self.rotation.plot(report.offsets, np.maximum(report.rotation_error, 1e-12),
                               pen=pg.mkPen("#54a24b", width=2), symbol="o", symbolSize=5, name="after rotation R_k")
        self.rotation.plot(report.offsets, np.maximum(report.unrotated_error, 1e-12),
                           pen=pg.mkPen("#e45756", width=2, style=Qt.DashLine), name="without rotation")
        if report.kind == "sinusoidal":
            self.summary.setText(
                f"Sinusoidal encoding, d_model {d_model}. For every offset k a fixed rotation of each (sin, cos) pair "
                f"maps PE(pos) to PE(pos+k) for all positions: the largest error over k ≤ {report.offsets[-1]} is "
                f"{np.nanmax(report.rotation_error):.1e}, against {report.unrotated_error.max():.2f} without rotating.")
        else:
            self.summary.setText(f"Learned positional table, d_model {d_model}: no fixed rotation relates its "
                                 "positions; the similarity matrix shows what it learned about nearness.")
