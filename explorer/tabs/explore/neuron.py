"""The Explore tab's neuron view, wired in one place: the view among the tab's views, the neuron controller
(explorer/controllers/neuron.py) behind it, its exports, and the term shares it gives the heads table.

The controller computes while the neuron view or the heads table is shown (``set_active``). The view follows the tab's
kind, layer and head (``follow``, from the tab's drawing); a row of the head's attention, the query box, a source piece
clicked (encoder self-attention) or a target token clicked (its step: the decoder's and cross-attention's query follows
the step) chooses the query. "Save…" and the Export menu's "Neuron view…" write the row as a figure or a CSV.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog

from explorer.controllers.background import model_name
from explorer.widgets.neuron_view import SAVE_FILTER, NeuronView
from model.decoding.trace import Trace
from model.errors import UserError
from model.inspection.view import ExploreView
from model.kinds import AttentionKind
from model.neuron.terms import HeadTerms

VIEW_TITLE = "Neuron view"


class ExploreNeuron:
    def __init__(self, tab: Any, controllers: Any) -> None:
        self.tab, self.explore, self.controller = tab, controllers.explore, controllers.neuron
        self.view = NeuronView()
        tab.views.addTab(self.view, VIEW_TITLE)
        tab.views.setTabToolTip(
            tab.views.indexOf(self.view),
            "Inside one head: the query and key vectors, their products, the scores, the softmax row and the scores' "
            "positional terms",
        )
        tab.exports.add_view("Neuron view…", self.save_dialog)
        self._wire()

    def _wire(self) -> None:
        view, controller, tab = self.view, self.controller, self.tab
        controller.changed.connect(view.show_row)
        controller.queries_changed.connect(view.set_queries)
        controller.message.connect(view.show_message)
        controller.terms_ready.connect(self._on_terms_ready)
        view.query_chosen.connect(controller.set_query)
        view.save_requested.connect(self.save)
        tab.source_tokens.token_clicked.connect(self._on_source_clicked)
        tab.views.currentChanged.connect(lambda _index: self._follow())
        self.explore.model_changed.connect(lambda _bundle: self._on_model_changed())
        self._on_model_changed()

    def _follow(self) -> None:
        """The controller computes while the neuron view or the heads table is shown, and only then."""
        self.controller.set_active(self.tab.views.currentWidget() in (self.view, self.tab.head_table))

    def _on_model_changed(self) -> None:
        self.tab.head_table.show_terms(self.controller.splits())
        self._follow()

    def _on_terms_ready(self) -> None:
        if self.tab.views.currentWidget() is self.tab.head_table:
            self.tab.refresh()

    def _on_source_clicked(self, index: int) -> None:
        if self.controller.kind is AttentionKind.ENCODER:
            self.controller.set_query(index)

    # --- what the tab draws -----------------------------------------------------------------------
    def follow(self, state: ExploreView) -> None:
        """The tab's kind, layer and head, drawn in the view."""
        self.controller.follow(state.kind, state.layer, state.head)

    def head_terms(self, state: ExploreView, shown: Trace) -> HeadTerms | None:
        """Every head's term shares for the heads table: of raw attention, with the heads the table lists."""
        terms = self.controller.head_terms(state.kind)
        if terms is None or shown.measure or terms.shares.shape[:2] != shown.matrix(state.kind).shape[:2]:
            return None
        return terms

    # --- exports ----------------------------------------------------------------------------------
    def save_dialog(self) -> None:
        row = self.controller.row
        name = f"neuron_{row.kind}_L{row.layer + 1}_H{row.head + 1}_q{row.query + 1}.png" if row else "neuron.png"
        folder = self.tab.settings.folder("explore/export_folder")
        path, _ = QFileDialog.getSaveFileName(self.tab, "Save the neuron view", str(folder / name), SAVE_FILTER)
        if path:
            self.save(path)

    def save(self, path: str | Path) -> Path | None:
        """The row shown to ``path`` (a figure or a CSV, by the suffix); None, with the reason, when it cannot be."""
        from explorer.widgets.figure_settings import figure_options  # deferred: matplotlib loads with the first export

        bundle = self.explore.opened
        name = model_name(bundle) if bundle is not None else ""
        name += f", {self.explore.snapshot}" if self.explore.snapshot else ""
        options, dpi = figure_options(self.tab.settings, self.tab.colormap.currentText(), name)
        try:
            written = self.controller.save(path, options, dpi)
        except UserError as error:
            self.explore.message.emit(f"The neuron view could not be saved: {error}")
            return None
        self.explore.message.emit(f"Saved the neuron view to {written}")
        return written
