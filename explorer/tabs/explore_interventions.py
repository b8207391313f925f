"""The Explore tab's Interventions view, wired in one place: the view among the tab's views, the interventions
controller (explorer/controllers/interventions.py) behind it, and its exports.

The controller follows the sentence and the model only while the view is the one shown (``set_active``), so the other
views are never slowed by it; a step of the Explore tab moves the highlighted step. "Save CSV…" writes the shown
tool's result (explorer/controllers/interventions_export.py); ``export_figure`` is the one place its figures are made.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QTabWidget

from explorer.controllers.explore import ExploreController
from explorer.controllers.interventions import TOOLS, InterventionsController
from explorer.controllers.interventions_export import save_figure, write_result_csv
from explorer.widgets.interventions_view import InterventionsView
from model.errors import UserError

VIEW_TITLE = "Interventions"


class ExploreInterventions:
    def __init__(self, views: QTabWidget, explore: ExploreController, interventions: InterventionsController) -> None:
        self.views, self.explore, self.controller = views, explore, interventions
        self.view = InterventionsView()
        views.addTab(self.view, VIEW_TITLE)
        views.setTabToolTip(
            views.indexOf(self.view), "Logit lens, DecoderLens, direct logit attribution and activation patching of the sentence"
        )
        self._wire()

    def _wire(self) -> None:
        view, controller, patching = self.view, self.controller, self.view.patching
        controller.ready.connect(view.show_result)
        controller.step_changed.connect(view.set_step)
        controller.message.connect(view.show_message)
        controller.progress.connect(view.set_progress)
        patching.patch_requested.connect(self._on_patch_requested)
        patching.pairs_requested.connect(lambda feature: patching.set_pairs(controller.pairs(feature)))
        view.csv_requested.connect(self.save_csv)
        self.views.currentChanged.connect(lambda _index: self._follow())
        self.explore.model_changed.connect(lambda _bundle: self._on_model_changed())
        self.explore.trace_changed.connect(lambda _trace: patching.set_clean(self.explore.text))
        self._on_model_changed()

    def _follow(self) -> None:
        """The controller computes while the view is shown, and only then."""
        self.controller.set_active(self.views.currentWidget() is self.view)

    def _on_model_changed(self) -> None:
        self.view.show_message(self.controller.unavailable())
        self._follow()

    def _on_patch_requested(self, clean: str, corrupted: str, direction: str) -> None:
        self.view.show_message("")
        if self.controller.patch(clean, corrupted, direction):
            self.view.show_tool("patching")

    # --- exports ----------------------------------------------------------------------------------
    def save_csv(self, tool: str, path: str | Path) -> Path | None:
        """The tool's result shown to ``path`` as CSV; None (and the reason in the view) when there is none or it
        cannot be written."""
        result = self.view.results.get(tool)
        if result is None or tool not in TOOLS:
            self.view.show_message(f"No {tool} result to save yet.")
            return None
        try:
            written = write_result_csv(tool, result, path)
        except UserError as error:  # a path that cannot be written, or no figure yet
            self.view.show_message(f"The {tool} could not be saved: {error}")
            return None
        self.view.show_message(f"Saved the {tool} to {written}.")
        return written

    def export_figure(self, path: str | Path) -> Path | None:
        """The shown tool's result as a figure (PNG, SVG or PDF): the one place the window makes one."""
        tool = self.view.tool
        result = self.view.results.get(tool)
        if result is None:
            self.view.show_message(f"No {tool} result to draw yet.")
            return None
        try:
            return save_figure(tool, result, path)
        except UserError as error:  # a path that cannot be written, or no figure yet
            self.view.show_message(str(error))
            return None
