"""The Interventions view of the Explore tab: one sub-tab per tool, a status line and "Save…".

Sub-tabs: "Logit lens" (readings × steps, explorer/widgets/lens_views.py), "DecoderLens" (encoder layer →
translation), "Logit attribution" (the parts of the current step's logit, explorer/widgets/attribution_view.py),
"Patching" (a clean and a corrupted sentence, explorer/widgets/patching_view.py) and "Circuits" (the edges that carry
the patching pair's prediction, explorer/widgets/circuit_view.py). The status line shows one line: what
is being computed, why nothing can be (a model that cannot be patched), or a bad input's error.

The view shows plain data the Explore tab hands it (``show_result(tool, result)``, ``set_step``, ``show_message``,
``set_progress``) and says what the user asked: ``save_requested(tool, path)`` (the shown sub-tab's result, to a file
chosen here), and the patching view's own signals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QTabWidget, QVBoxLayout, QWidget

from explorer.widgets.attribution_view import AttributionView
from explorer.widgets.circuit_view import CircuitView
from explorer.widgets.lens_views import DecoderLensTable, LensHeatmap
from explorer.widgets.patching_view import PatchingView

# The tools, by the names the controller gives them (explorer/controllers/interventions.py), and their sub-tabs.
TOOL_TABS = (
    ("logit lens", "Logit lens"),
    ("DecoderLens", "DecoderLens"),
    ("logit attribution", "Logit attribution"),
    ("patching", "Patching"),
    ("circuits", "Circuits"),
)
SAVE_FORMATS = "CSV: every number (*.csv);;PNG figure (*.png);;SVG figure (*.svg);;PDF figure (*.pdf)"
GRAPH_FORMATS = ";;JSON graph (node-link data) (*.json);;GraphML graph (*.graphml)"  # a circuit's too


class InterventionsView(QWidget):
    save_requested = Signal(str, str)  # tool, path: save the tool's result shown (a CSV or a figure, by the suffix)

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[str, Any] = {}  # tool -> the result shown
        self.step: int | None = None
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setStyleSheet("font-style: italic;")
        self.progress = QLabel()
        self.progress.setStyleSheet("color: palette(mid);")
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Write the shown tool's result: every number of it (CSV), or its figure (PNG, SVG, PDF)")
        self.save_button.setEnabled(False)
        self.lens, self.decoder_lens = LensHeatmap(), DecoderLensTable()
        self.attribution, self.patching, self.circuits = AttributionView(), PatchingView(), CircuitView()
        self.attribution.position_chosen.connect(self._on_position_chosen)
        self.tools = QTabWidget()
        widgets: tuple[QWidget, ...] = (self.lens, self.decoder_lens, self.attribution, self.patching, self.circuits)
        self.tool_widgets: dict[str, QWidget] = {tool: widget for (tool, _), widget in zip(TOOL_TABS, widgets)}
        for tool, title in TOOL_TABS:
            self.tools.addTab(self.tool_widgets[tool], title)
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.progress)
        top.addWidget(self.save_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.tools, 1)
        self.save_button.clicked.connect(self._on_save_clicked)
        self.tools.currentChanged.connect(lambda _index: self._enable_save())

    @property
    def tool(self) -> str:
        """The tool of the sub-tab shown."""
        return TOOL_TABS[self.tools.currentIndex()][0]

    def show_tool(self, tool: str) -> None:
        self.tools.setCurrentWidget(self.tool_widgets[tool])

    def set_tools(self, served: tuple[str, ...], reasons: dict[str, str] | None = None) -> None:
        """Enable the sub-tabs of the tools the model serves; another is greyed, its tooltip saying why (``reasons``:
        tool -> the one line). After a model with none (every sub-tab greyed, Qt's current one left on the last), the
        first served is shown."""
        had_none = not any(self.tools.isTabEnabled(index) for index in range(self.tools.count()))
        for index, (tool, _title) in enumerate(TOOL_TABS):
            why = (reasons or {}).get(tool) or f"the {tool} is not computed for this model"
            self.tools.setTabEnabled(index, tool in served)
            self.tools.setTabToolTip(index, "" if tool in served else why[:1].upper() + why[1:] + ".")
        if served and (had_none or self.tool not in served):
            self.show_tool(served[0])

    def show_result(self, tool: str, result: Any) -> None:
        """A tool's result (None: clear it)."""
        if result is None:
            self.results.pop(tool, None)
        else:
            self.results[tool] = result
        if tool == "logit lens":
            self.lens.set_lens(result, self.step)
        elif tool == "DecoderLens":
            self.decoder_lens.set_result(result)
        elif tool == "logit attribution":
            self.attribution.set_attribution(result, self.step)
        elif tool == "circuits":
            self.circuits.set_result(result)
        else:
            self.patching.set_result(result)
        if tool in ("logit lens", "logit attribution"):
            self._offer_candidates()
        self._enable_save()

    def set_step(self, step: int | None) -> None:
        """The Explore tab's step (from 0): outlined in the lens, shown by the attribution (with that step's other
        candidates, read from the lens's last reading, offered to compare with)."""
        self.step = step
        self.lens.set_highlighted_step(step)
        self.attribution.set_step(step)
        self._offer_candidates()

    def _on_position_chosen(self, position: int) -> None:
        """An encoder-only model's piece chosen in the attribution's box: split, its other candidates offered."""
        self.attribution.set_step(position)
        self._offer_candidates()

    def _offer_candidates(self) -> None:
        lens, shown = self.results.get("logit lens"), self.attribution.step
        if lens is None or shown is None or shown >= len(lens.chosen_ids):
            self.attribution.set_candidates([])
            return
        ids, pieces = lens.candidate_ids[-1][shown], lens.candidate_tokens[-1][shown]
        chosen = int(lens.chosen_ids[shown])
        self.attribution.set_candidates([(int(token), piece) for token, piece in zip(ids, pieces) if int(token) != chosen])

    def show_message(self, text: str) -> None:
        self.status.setText(text)

    def set_progress(self, text: str) -> None:
        self.progress.setText(text)

    def _enable_save(self) -> None:
        self.save_button.setEnabled(self.tool in self.results)

    def _on_save_clicked(self) -> None:
        tool = self.tool
        suggested = Path.home() / f"{tool.lower().replace(' ', '-')}.csv"
        formats = SAVE_FORMATS + (GRAPH_FORMATS if tool == "circuits" else "")
        path, _ = QFileDialog.getSaveFileName(self, f"Save the {tool}", str(suggested), formats)
        if path:
            self.save_requested.emit(tool, path)
