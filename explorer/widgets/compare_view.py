"""The Explore tab's "Side by side" view: the explored model and a second one on the same sentence.

Two heatmaps, each a model's cross-attention head chosen by its alignment with toy-fr's gold alignments
(explorer/controllers/compare.py), with the model's name, the head and its AER above it. They step together
with the decoding controls. The row above them picks the second model (a shipped one or a file), asks for a
fresh toy-fr sentence whose gold alignment is known, and exports the pair as one figure (PNG, SVG, PDF).
The view is given the panels and the note to show (``show_panels``) and says what the user asked through its
signals; it never sees the controller.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QGridLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from explorer.widgets.heatmap import HeatmapView
from explorer.widgets.save_dialog import ask_save_path
from model.inspection.comparison import Panel, compared_matrix
from model.inspection.selection import head_title
from model.io.shipped import shipped_models

NONE_CHOICE, FILE_CHOICE = "(none)", "Model file…"
SNAPSHOT_DATA = "snapshot"  # the item naming a snapshot of the model's training put beside it (from the timeline bar)
FIGURE_FILTER = "PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf)"


class CompareView(QWidget):
    fresh_requested = Signal()  # a toy-fr sentence (its gold alignment known) to decode
    export_requested = Signal(str)  # the path to write the pair figure to
    partner_chosen = Signal(str)  # the model to put beside: a shipped model's or a file's path
    partner_cleared = Signal()  # nothing beside
    head_chosen = Signal(int, object)  # (side, (layer, head) or None: the best-aligning one)

    def __init__(self, colormap_name: str = "viridis") -> None:
        super().__init__()
        self.panels: list[Panel] = []
        self.note_text = ""
        self._stale = False  # panels arrived while the view was hidden: drawn when it is shown
        self.partner = QComboBox()
        self.partner.setToolTip("The model shown beside the session's: a shipped model, or a model file")
        self._fill_partners()
        self.fresh = QPushButton("toy-fr sentence")
        self.fresh.setToolTip(
            "Translate a fresh toy-fr sentence (never seen in training) whose gold word alignment is known: each side "
            "then shows its AER on it"
        )
        self.export_button = QPushButton("Export pair…")
        self.export_button.setToolTip("Both heatmaps as one figure (PNG, SVG, PDF), with the figure settings' width and font")
        row = QHBoxLayout()
        for widget in (QLabel("Beside it:"), self.partner, self.fresh, self.export_button):
            row.addWidget(widget)
        row.addStretch(1)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.headings = [QLabel(), QLabel()]
        self.head_boxes = [QComboBox(), QComboBox()]
        self.heatmaps = [HeatmapView(colormap_name), HeatmapView(colormap_name)]
        grid = QGridLayout()
        for column, (heading, box, heatmap) in enumerate(zip(self.headings, self.head_boxes, self.heatmaps)):
            heading.setWordWrap(True)
            box.setToolTip(
                "The head shown: the best-aligning one (by AER on toy-fr's gold alignments, on the pairs and seed named "
                "above: the head evaluate reports for them), a layer's mean, or any head"
            )
            box.activated.connect(lambda index, side=column: self._on_head_chosen(side, index))
            grid.addWidget(heading, 0, column)
            grid.addWidget(box, 1, column)
            grid.addWidget(heatmap, 2, column)
            grid.setColumnStretch(column, 1)
        grid.setRowStretch(2, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.note)
        layout.addLayout(grid, 1)
        self.partner.activated.connect(self._on_partner_chosen)
        self.fresh.clicked.connect(self._on_fresh_requested)
        self.export_button.clicked.connect(self._on_export_clicked)
        self.show_panels([], "")

    def _fill_partners(self) -> None:
        self.partner.addItem(NONE_CHOICE, None)
        for name, path in shipped_models().items():
            self.partner.addItem(name, str(path))
        self.partner.addItem(FILE_CHOICE, None)

    def set_colormap(self, name: str) -> None:
        for heatmap in self.heatmaps:
            heatmap.set_colormap(name)

    def name_snapshot(self, name: str) -> None:
        """Say which snapshot of the model's training is beside it ("" when none is: the item goes)."""
        position = self.partner.findData(SNAPSHOT_DATA)
        if position >= 0:
            self.partner.removeItem(position)
        if name:
            self.partner.insertItem(1, name, SNAPSHOT_DATA)
            self.partner.setCurrentIndex(1)
        elif position >= 0 and self.partner.currentIndex() in (-1, position):
            self.partner.setCurrentIndex(0)

    # --- choices --------------------------------------------------------------------------------
    def _on_partner_chosen(self, index: int) -> None:
        choice = self.partner.itemText(index)
        if choice == NONE_CHOICE:
            self.partner_cleared.emit()
            return
        path = self.partner.itemData(index)
        if path == SNAPSHOT_DATA:
            return  # already beside it
        if choice == FILE_CHOICE:
            path, _ = QFileDialog.getOpenFileName(
                self, "Model to put beside", str(Path.home()), "Models (*.safetensors);;All files (*)"
            )
            if not path:
                return
        self.partner_chosen.emit(path)

    def _on_head_chosen(self, side: int, index: int) -> None:
        self.head_chosen.emit(side, self.head_boxes[side].itemData(index))

    def _fill_heads(self, box: QComboBox, panel) -> None:
        """The heads a side offers: its best-aligning one first, then each layer's mean and heads."""
        choices: list = [None]
        for layer in range(panel.n_layers):
            choices += [(layer, "mean")] + [(layer, head) for head in range(panel.n_heads)] if panel.n_heads > 1 else [(layer, 0)]
        if [box.itemData(i) for i in range(box.count())] != choices:
            box.clear()
            for choice in choices:
                text = "best-aligning head" if choice is None else f"layer {choice[0] + 1}, {head_title(choice[1])}"
                box.addItem(text, choice)
        shown = None if panel.choice.corpus_aer is not None else (panel.choice.layer, panel.choice.head)
        box.setCurrentIndex(choices.index(shown) if shown in choices else 0)  # findData compares tuples by identity

    def _on_fresh_requested(self) -> None:
        self.fresh_requested.emit()

    def _on_export_clicked(self) -> None:
        path = ask_save_path(self, "Export the pair", Path.home() / "side-by-side.pdf", FIGURE_FILTER)
        if path:
            self.export_requested.emit(path)

    # --- drawing --------------------------------------------------------------------------------
    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """The layout's minimum, with the note's and the headings' lines counted at their widths: a layout counts a
        wrapped label at its own minimum, and at 1024x640 a two-line note left the heatmaps 56 px for plots of 60, cut
        with no scroll bar (issue 39)."""
        hint = super().minimumSizeHint()
        extra = _lines_beyond_minimum(self.note) + max(_lines_beyond_minimum(heading) for heading in self.headings)
        return QSize(hint.width(), hint.height() + extra)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.updateGeometry()  # the labels' lines follow the width

    def show_panels(self, panels: list[Panel], note: str) -> None:
        """Every step of the explored decoding: drawn at once when the view is shown, else when it is next shown."""
        self.panels, self.note_text = panels, note
        self.export_button.setEnabled(len(panels) == 2)
        self._stale = True
        if self.isVisible():
            self._draw()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if self._stale:
            self._draw()

    def _draw(self) -> None:
        self._stale = False
        panels = self.panels
        if len(panels) != 2:
            why = self.note_text
            if why == self.note.text() and not any(heatmap.values.size for heatmap in self.heatmaps):
                return  # already says so, with nothing drawn
            self.note.setText(why)
            self.note.show()
            for heading, box, heatmap in zip(self.headings, self.head_boxes, self.heatmaps):
                heading.setText("")
                box.clear()
                heatmap.set_matrix(np.zeros((0, 0), np.float32), [], [], "")
            self.updateGeometry()
            return
        self.note.setText(self.note_text)
        self.note.show()
        for panel, heading, box, heatmap in zip(panels, self.headings, self.head_boxes, self.heatmaps):
            self._fill_heads(box, panel)
            matrix, shown = compared_matrix(panel.trace, panel.choice, word_level=True)
            heading.setText(
                f"<b>{html.escape(panel.name)}</b> — {html.escape(panel.description)}<br>{html.escape(panel.details(forced=False))}"
                f"<br>{html.escape(panel.translation_heading())}: <i>{html.escape(panel.translation())}</i>"
            )
            heatmap.set_matrix(
                matrix.values, matrix.query_labels, matrix.key_labels, matrix.title, matrix.current_row, token_level=shown.level
            )
        self.updateGeometry()


def _lines_beyond_minimum(label: QLabel) -> int:
    """The px a shown word-wrapped label needs at its width beyond its minimum height."""
    if label.isHidden() or not label.text() or label.width() <= 1:
        return 0
    return max(label.heightForWidth(label.width()) - label.minimumSizeHint().height(), 0)
