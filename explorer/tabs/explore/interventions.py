"""The Explore tab's Interventions view, wired in one place: the view among the tab's views, the interventions
controller (explorer/controllers/interventions.py) behind it, and its exports.

The controller follows the Explore tab's decoding (its output tokens, its model's knocked-out heads) only while the
view is the one shown (``set_active``), so the other views are never slowed by it; a step of the Explore tab moves the
highlighted step, and a tool that cannot follow the decoding says so in the view's message line. Patching computes on its own the
pair, direction and step its sub-tab shows, while that sub-tab is shown. "Save CSV…" writes the shown
tool's result as a CSV or its figure, by the suffix (explorer/controllers/interventions_export.py).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QTabWidget

from explorer.controllers.background import model_name
from explorer.controllers.circuits import CircuitsController
from explorer.controllers.explore import ExploreController
from explorer.controllers.followed import WORDS, followed_decoding, pair_read
from explorer.controllers.interventions import TOOLS, InterventionsController
from explorer.controllers.interventions_export import save_result
from explorer.widgets.interventions_view import InterventionsView
from model.errors import UserError

VIEW_TITLE = "Interventions"


class ExploreInterventions:
    def __init__(
        self, views: QTabWidget, explore: ExploreController, interventions: InterventionsController, circuits: CircuitsController
    ) -> None:
        self.views, self.explore, self.controller, self.circuits = views, explore, interventions, circuits
        self.view = InterventionsView()
        views.addTab(self.view, VIEW_TITLE)
        views.setTabToolTip(
            views.indexOf(self.view),
            "Logit lens, DecoderLens, direct logit attribution, activation patching and circuits of the sentence",
        )
        self._wire()
        self._wire_circuits()

    def _wire(self) -> None:
        view, controller, patching = self.view, self.controller, self.view.patching
        controller.ready.connect(view.show_result)
        controller.step_changed.connect(view.set_step)
        controller.message.connect(view.show_message)
        controller.progress.connect(view.set_progress)
        patching.patch_requested.connect(self._on_patch_requested)
        patching.pair_changed.connect(
            lambda clean, corrupted, direction, step: controller.want_patch(
                clean, corrupted, direction, step - 1 if step > 0 else None
            )
        )
        view.tools.currentChanged.connect(lambda _index: self._follow())
        view.attribution.versus_chosen.connect(controller.attribute_versus)
        patching.pairs_requested.connect(lambda feature: patching.set_pairs(controller.pairs(feature), controller.translates()))
        view.save_requested.connect(self.save)
        self.views.currentChanged.connect(lambda _index: self._follow())
        self.explore.model_changed.connect(lambda _bundle: self._on_model_changed())
        self.explore.trace_changed.connect(lambda _trace: patching.set_clean(self.explore.text))
        self._on_model_changed()

    def _wire_circuits(self) -> None:
        """The Circuits sub-tab reads the Patching sub-tab's pair; a node clicked opens its head in the model grid."""
        view, circuits = self.view, self.circuits
        circuits.ready.connect(lambda result: view.show_result("circuits", result))
        circuits.message.connect(view.show_message)
        circuits.progress.connect(view.set_progress)
        circuits.pair_shown.connect(view.circuits.set_pair)
        view.patching.pair_changed.connect(
            lambda clean, corrupted, _direction, step: circuits.want(clean, corrupted, step - 1 if step > 0 else None)
        )
        view.circuits.options_changed.connect(circuits.set_options)
        view.circuits.find_requested.connect(self._on_find_requested)
        view.circuits.pair_edit_requested.connect(lambda: view.show_tool("patching"))
        view.circuits.node_clicked.connect(circuits.open_node)
        circuits.node_opened.connect(lambda _kind, _layer, _head: self.views.setCurrentIndex(0))  # the grid, its focus

    def _on_find_requested(self) -> None:
        wanted = self.circuits.wanted
        if wanted is None:
            self.view.show_message("Choose a pair in the Patching sub-tab first: the circuit carries its prediction.")
            return
        self.view.show_message("")
        self.circuits.find(*wanted)

    def _follow(self) -> None:
        """The controllers compute while the view is shown, and only then (patching, circuits: while their sub-tab is)."""
        shown = self.views.currentWidget() is self.view
        tool = self.view.tools.currentWidget()
        self.controller.set_active(shown, patching=shown and tool is self.view.patching)
        self.circuits.set_active(shown and tool is self.view.circuits)

    def _on_model_changed(self) -> None:
        self.view.show_message(self.controller.unavailable())
        self.view.circuits.show_message(self.circuits.unavailable())
        self.view.set_tools(self.controller.tools(), self.controller.reasons())
        self.view.patching.set_place(self.controller.place())
        self._follow()

    def _on_patch_requested(self, clean: str, corrupted: str, direction: str, step: int) -> None:
        self.view.show_message("")
        if self.controller.patch(clean, corrupted, direction, step - 1 if step > 0 else None):
            self.view.show_tool("patching")

    # --- exports ---
    def record(self, tool: str, result, source: str, step: int, grid: str | None):
        """The record of a tool's file (model/provenance/): the ``lens`` or ``patch`` command of what the view shows, as
        the command line records it; what the command line cannot follow (a decoding that is not greedy) named."""
        from model.cli.recorded import (  # deferred: matplotlib loads with the first export
            lens_record,
            model_reference,
            patch_record,
        )

        bundle = self.explore.bundle
        if bundle is None:
            return None
        model = model_reference(bundle)
        if tool == "patching":
            clean, corrupted, _direction, asked = self.controller.patch_wanted or ("", "", "", None)
            record = patch_record(bundle, model, result, clean, corrupted, None if asked is None else asked + 1, grid)
        else:
            names = {"logit lens": "logit-lens", "logit attribution": "attribution", "DecoderLens": "decoder-lens"}
            record = lens_record(bundle, model, source, names[tool], step + 1 if tool == "logit attribution" else 1)
        decoding = self.controller.computed if tool != "patching" else followed_decoding(self.explore)
        follows = tool != "DecoderLens" and (tool != "patching" or pair_read(self.explore, record.input["text"])[1] is not None)
        modes = [mode for mode in (decoding.modes if decoding is not None else ()) if mode != WORDS]  # words: pieces read
        if follows and modes:
            record.beyond_the_command("the decoding followed: " + ", ".join(modes))
        return record

    # --- saving --------------------------------------------------------------------------------
    def save(self, tool: str, path: str | Path) -> Path | None:
        """The tool's result shown, to ``path``: a CSV, or its figure by the suffix (.png, .svg, .pdf); None (and the
        reason in the view) when there is none or it cannot be written."""
        if tool == "circuits":
            return self.circuits.save(path)
        result = self.view.results.get(tool)
        if result is None or tool not in TOOLS:
            self.view.show_message(f"No {tool} result to save yet.")
            return None
        grid = self.view.patching.grid_box.currentText() or None
        step = self.view.step if self.view.step is not None else 0
        try:
            bundle, computed = self.explore.bundle, self.controller.computed
            source = computed.text if computed is not None else self.explore.text  # the sentence the readings read
            record = self.record(tool, result, source, step, grid if Path(path).suffix.lower() != ".csv" else None)
            written = save_result(tool, result, path, step, grid, model_name(bundle) if bundle is not None else "", source, record)
        except UserError as error:  # a path that cannot be written, or a suffix that is neither
            self.view.show_message(f"The {tool} could not be saved: {error}")
            return None
        self.view.show_message(f"Saved the {tool} to {written}.")
        return written
