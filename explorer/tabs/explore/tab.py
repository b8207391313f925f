"""The Explore tab: type a sentence, step through decoding, and see every attention head.

It reads only the Explore controller's Trace: the model grid (layers x heads), the focus heatmap (a head, the
mean or max over heads, or rollout), the lines view, the head table, the tokens, the next-token
candidates (click one to force it) and the beam tree. Every view exports (PNG, SVG, PDF, CSV, NPY).
What the views show (kind, layer, head, level) is one ``ExploreView`` (model/inspection/view.py), fitted
to the kinds, layers and heads the trace has: a kind the model lacks is not offered. A model with a timeline of
its training gets a timeline bar and an "Over training" view (explorer/tabs/explore/timeline.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, QSize, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTabWidget, QWidget

from explorer.controllers.window import WindowControllers
from explorer.settings_values import SettingsValues
from explorer.tabs.explore.corpus import ExploreCorpus
from explorer.tabs.explore.decode_controls import DecodeControls
from explorer.tabs.explore.export import ExploreExports
from explorer.tabs.explore.interventions import ExploreInterventions
from explorer.tabs.explore.layout import lay_out, minimum_size, save_layout, size_to_current_page
from explorer.tabs.explore.measures import ExploreMeasures
from explorer.tabs.explore.neuron import ExploreNeuron
from explorer.tabs.explore.report_card import ExploreReportCard
from explorer.tabs.explore.served_tabs import ServedTabs
from explorer.tabs.explore.timeline import ExploreTimeline
from explorer.widgets.compare_view import CompareView
from explorer.widgets.decoding_panels import DecodingPanels
from explorer.widgets.head_table import HeadTable
from explorer.widgets.heatmap import COLORMAPS, HeatmapView
from explorer.widgets.lines_view import LinesView
from explorer.widgets.model_grid import ModelGrid
from explorer.widgets.tokens_view import TokensView
from explorer.widgets.view_choices import ViewChoices
from model.decoding.trace import Trace
from model.inspection.selection import AttentionMatrix, SelectionError, map_titles
from model.inspection.view import ExploreView
from model.kinds import AttentionKind
from model.nn.masking import Head

EXAMPLE_SENTENCE = "the black cat sees the small dog"
LIVE_DELAY_MS = 250  # an encoder-only model reads the text again this long after the last key


class ExploreTab(QWidget):
    def __init__(self, controllers: WindowControllers, settings: QSettings | SettingsValues) -> None:
        super().__init__()
        self.explore, self.runner, self.settings = controllers.explore, controllers.runner, SettingsValues.of(settings)
        settings = self.settings
        explore = self.explore
        self.shown: Trace | None = None  # the trace as displayed (word level when chosen)
        self._replaced_why = ""  # why the sentence decoded is not the one typed (text_replaced), until another is asked for
        self.view_trace: Trace | None = None  # the whole trace the views read: the Explore controller's, or its measured copy
        self.focus_matrix: AttentionMatrix | None = None  # the AttentionMatrix in the focus view
        # What the user chose (``state``: the Explore controller's ``view``), and that choice fitted to the trace
        # (``shown_state``: what the views and exports show).
        explore.choose_view(
            ExploreView(
                kind=AttentionKind(settings.choice("explore/kind", "cross", (str(kind) for kind in AttentionKind))),
                word_level=settings.boolean("explore/word_level", False),
            )
        )
        self.shown_state = self.state

        self.controls = DecodeControls()
        self.controls.source.setText(settings.text("explore/text", EXAMPLE_SENTENCE))
        self.source_tokens = TokensView(
            "Source pieces:",
            "How the tokenizer split the sentence. A word it saw often is one piece; a rarer one (a capitalised word, "
            "seen mostly at a sentence's start) is split into smaller pieces, “Je” → J·e: that is the tokenizer, not "
            "the display. A dashed orange chip is a piece it never saw (<unk>).",
        )
        self.target_tokens = TokensView("Target:", "The tokens decoded so far; click one to go to its step (✎ = forced by you)")
        self.choices = ViewChoices(self.state.word_level, settings.choice("explore/colormap", "viridis", COLORMAPS))
        self.kind, self.layer_box, self.head_box = self.choices.kind, self.choices.layer_box, self.choices.head_box
        self.word_level, self.colormap = self.choices.word_level, self.choices.colormap
        self._set_kinds(tuple(AttentionKind))
        self.exports = ExploreExports(self)  # the Export menu, Ctrl+E and Ctrl+Shift+C
        export_button = QPushButton("Export ▾")
        export_button.setToolTip(
            "A view as a figure (PNG, SVG, PDF) or data (CSV, NPY), everything at this step, "
            "a copy (Ctrl+Shift+C), or the figure settings (width, font, caption)"
        )
        export_button.setMenu(self.exports.menu)
        self.restore_button = QPushButton("Restore heads")
        self.restore_button.setToolTip("Put back every head knocked out (Ctrl+click a cell of the model grid knocks one out)")
        self.restore_button.hide()
        self.readings = ExploreMeasures(  # measures beyond attention, AER table, head importance
            explore, controllers.measures, controllers.alignment, controllers.importance
        )
        self.measure_box, self.measures, self.contrast = self.readings.box, controllers.measures, self.readings.contrast
        view_row = QHBoxLayout()
        attention = (QLabel("Attention:"), self.kind, self.layer_box, self.head_box, self.word_level)
        reading = (QLabel("Reading:"), self.measure_box, self.readings.status, QLabel("Colours:"), self.colormap)
        for widget in (*attention, *reading, export_button, self.restore_button):
            view_row.addWidget(widget)
        view_row.addStretch(1)

        self._build_views(controllers, view_row)
        self._connect(controllers)

    def _build_views(self, controllers: WindowControllers, view_row: QHBoxLayout) -> None:
        """The views (grid, lines, heads, AER table, importance, side by side), the side panels, the hint, laid out."""
        colours = self.colormap.currentText()
        self.grid = ModelGrid(colours)
        self.focus = HeatmapView(colours)
        self.lines = LinesView()
        self.head_table = HeadTable()
        self.views = QTabWidget()
        self.views.addTab(self.grid, "Model grid")
        self.views.addTab(self.lines, "Lines")
        self.views.addTab(self.head_table, "Heads")
        self.views.addTab(self.readings.alignment_view, "Alignment (AER)")
        self.views.addTab(self.readings.importance_view, "Head importance")
        self.compare = controllers.compare  # a second model on the same sentence, stepping together
        self.compare_view = CompareView(colours)
        self.views.addTab(self.compare_view, "Side by side")
        self.interventions = ExploreInterventions(  # lenses, patching, circuits
            self.views, self.explore, controllers.interventions, controllers.circuits
        )
        self.neuron = ExploreNeuron(self, controllers)  # one head inside, and every head's positional terms
        self.corpus_search = ExploreCorpus(self, controllers.corpus)  # right-click a token or a head: search the corpus
        self.report_card = ExploreReportCard(self.views, self.explore, controllers.report_card)  # every reading graded
        self.over_training = ExploreTimeline(self, controllers)  # the timeline bar, "Over training" and its exports
        self.over_training.add_exports(self.exports.menu)
        self.side = DecodingPanels(self.contrast)  # candidates (or an encoder-only model's predictions), the beam
        self.candidates, self.predictions, self.beam_tree = self.side.candidates, self.side.predictions, self.side.beam_tree
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: palette(mid); font-style: italic;")
        self.top_splitter, self.main_splitter = lay_out(self, view_row)  # explorer/tabs/explore/layout.py
        self.served = ServedTabs(self.views)  # a view the open model does not serve: greyed out, the reason its tooltip

    def _connect(self, controllers: WindowControllers) -> None:
        """The user's requests to the controllers, and the controllers' events to the views."""
        explore = self.explore
        self.controls.translate_requested.connect(self._on_translate_requested)
        self._live = QTimer(self)  # an encoder-only model's labels and attention follow the text as it is edited
        self._live.setSingleShot(True)
        self._live.setInterval(LIVE_DELAY_MS)
        self._live.timeout.connect(self._on_live_edit_due)
        self.controls.source.textEdited.connect(self._on_source_edited)
        self.controls.step_forward.connect(explore.step_forward)
        self.controls.step_back.connect(explore.step_back)
        self.controls.run_to_end.connect(explore.run_to_end)
        self.controls.reset.connect(explore.reset)
        self.controls.step_chosen.connect(explore.go_to_step)
        self.controls.languages_chosen.connect(explore.choose_languages)
        self.target_tokens.token_clicked.connect(lambda index: explore.go_to_step(index + 1))
        self.candidates.candidate_clicked.connect(explore.force)
        self.candidates.contrast_requested.connect(self.measures.request_contrast)
        self.measures.changed.connect(self.refresh)
        controllers.importance.importance_ready.connect(lambda _importance: self.refresh())  # the numbers on the grid
        self.beam_tree.hypothesis_clicked.connect(explore.show_hypothesis)
        self.beam_tree.node_clicked.connect(self._on_beam_node_clicked)
        self.grid.cell_clicked.connect(self._on_head_chosen)
        self.grid.head_toggled.connect(self._on_head_toggled)
        self.restore_button.clicked.connect(explore.restore_heads)
        self.head_table.head_clicked.connect(self._on_head_chosen)
        self.views.currentChanged.connect(self._on_views_tab_changed)
        self._wire_compare()
        self.kind.currentIndexChanged.connect(self._on_view_option_changed)
        self.layer_box.valueChanged.connect(self._on_layer_changed)
        self.head_box.currentIndexChanged.connect(self._on_head_box_changed)
        self.word_level.toggled.connect(self._on_view_option_changed)
        self.colormap.currentTextChanged.connect(self._on_colormap_changed)
        explore.model_changed.connect(self._on_model_changed)
        explore.trace_changed.connect(self._on_trace_changed)
        explore.view_changed.connect(lambda _view: self.refresh())  # the boxes follow when drawn (_set_kinds, _set_choices)
        explore.text_replaced.connect(self._on_text_replaced)
        explore.set_source(self.controls.source.text(), self.controls.options())
        self._on_model_changed(explore.bundle)

    def _wire_compare(self) -> None:
        """The side-by-side view shows the compare controller's panels and sends it what the user chose."""
        view, compare = self.compare_view, self.compare
        compare.changed.connect(view.show_panels)
        compare.message.connect(self.explore.message)
        view.partner_chosen.connect(compare.open)
        view.partner_cleared.connect(compare.clear)
        view.head_chosen.connect(compare.set_head)
        view.fresh_requested.connect(self._on_fresh_sentence_requested)
        view.export_requested.connect(self.exports.export_pair)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return minimum_size(self, super().minimumSizeHint())  # the token rows as wrapped at this width

    # --- the view's state -----------------------------------------------------------------------
    @property
    def state(self) -> ExploreView:
        """What the user chose to see: the Explore controller's ``view``, the one source of truth."""
        return self.explore.view

    @state.setter
    def state(self, view: ExploreView) -> None:
        self.explore.choose_view(view)  # drawn again on its view_changed

    @property
    def layer(self) -> int:
        return self.shown_state.layer

    @property
    def head(self) -> int | str:
        return self.state.head

    def _set_kinds(self, kinds: tuple[AttentionKind, ...]) -> None:
        """Offer the kinds the trace has, keeping the chosen one when it is among them."""
        self.choices.set_kinds(kinds, self.state.kind)

    def _set_choices(self, trace: Trace) -> None:
        """The layer and head boxes for the kind shown: its layers, its heads and the aggregates it allows."""
        self.choices.set_choices(trace, self.shown_state.kind, self.shown_state.layer, self.state.head)

    # --- the Explore controller's events ------------------------------------------------------------------------
    def _on_model_changed(self, bundle) -> None:
        self.served.follow(bundle)
        languages = ([], None, None) if bundle is None else (bundle.languages, bundle.source_language, bundle.target_language)
        self.controls.show_languages(*languages)
        if bundle is None:
            self.hint.setText(
                "No model is open. File ▸ Open model… (Ctrl+O), drop a .safetensors file here, or train one in the Train tab."
            )
            self.hint.show()
            return
        self.state = replace(self.state, layer=0, head="mean", hypothesis=None)
        self._replaced_why = ""  # the new model may read the sentence (text_replaced says so after the decoding if not)
        self.hint.hide()

    def _on_text_replaced(self, text: str, why: str) -> None:
        """The controller decoded another sentence than the one typed (the model cannot read it): show both. The why
        stays in the hint, before what each drawing notes (a reading shown as the weights), until another sentence
        or model is asked for."""
        self.controls.source.setText(text)
        self._replaced_why = why
        self.refresh()
        if not self.hint.text().startswith(why):  # a drawing that stopped early (nothing to draw) notes nothing
            self.hint.setText(why)
        self.hint.show()

    def _on_source_edited(self, text: str) -> None:
        self._replaced_why = ""
        self.explore.set_source(text)  # the sentence the next model decodes is the one in the field, Enter or not
        bundle = self.explore.bundle
        if bundle is not None and not bundle.family.capabilities.architecture.has_decoder:
            self._live.start()  # restarted by every key: one pass once the typing pauses

    def _on_live_edit_due(self) -> None:
        text = self.controls.source.text()
        if text.strip():
            self._on_translate_requested(text)

    def _on_translate_requested(self, text: str) -> None:
        self._replaced_why = ""
        self.settings.setValue("explore/text", text)
        self.explore.translate(text, self.controls.options())

    def _on_trace_changed(self, trace: Trace | None) -> None:
        explore = self.explore
        self.controls.set_steps(explore.current_step, explore.total_steps, explore.finished)
        self._draw(trace)

    # --- view options ---------------------------------------------------------------------------
    def current_kind(self) -> AttentionKind:
        """The kind the views show (the one chosen, unless the model lacks it)."""
        return self.shown_state.kind

    def _on_view_option_changed(self, *_args) -> None:
        kind = self.kind.currentData()  # Qt hands the kind back as its text
        self.state = replace(
            self.state,
            kind=AttentionKind.parse(kind) if kind is not None else self.state.kind,
            word_level=self.word_level.isChecked(),
        )

    def _on_colormap_changed(self, name: str) -> None:
        self.grid.set_colormap(self.over_training.colours(name))  # a difference of two snapshots keeps its own
        self.focus.set_colormap(self.over_training.colours(name))
        self.compare_view.set_colormap(name)
        self.settings.setValue("explore/colormap", name)

    def _on_views_tab_changed(self, index: int) -> None:
        """Side by side needs room for two heatmaps, Over training for its curves: the focus view gives them its place."""
        wide = (
            self.compare_view,
            self.over_training.curves_view,
            self.interventions.view,
            self.neuron.view,
            self.report_card.view,
        )  # in the focus' place
        size_to_current_page(self.views)  # only the view shown sets how narrow the views may get
        self.focus.setVisible(self.views.widget(index) not in wide)
        self.refresh()  # the view now shown (and the focus, when it is back) drawn for this step

    def _on_fresh_sentence_requested(self) -> None:
        """A toy-fr sentence with a gold alignment, for the side-by-side view: drawn, then translated."""
        text = self.compare.fresh_sentence()
        self.controls.source.setText(text)
        self._on_translate_requested(text)

    def _on_layer_changed(self, value: int) -> None:
        self.state = replace(self.state, layer=value - 1)

    def _on_head_box_changed(self, index: int) -> None:
        choice = self.head_box.itemData(index)
        if choice is not None:
            self.state = replace(self.state, head=choice)

    def _on_head_chosen(self, layer: int, head: int) -> None:
        """A grid cell or a head-table row: focus that head."""
        self.state = replace(self.state, layer=layer, head=head)

    def _on_head_toggled(self, layer: int, head: int) -> None:
        """Ctrl+click on the grid: knock that head of the kind shown out, or put it back."""
        self.explore.toggle_head(Head(self.current_kind(), layer, head))

    # --- drawing --------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Draw the Explore controller's trace again (the view options, the measure or the importance changed)."""
        self._draw(self.explore.trace)

    def _draw(self, trace: Trace | None) -> None:
        if trace is None:  # nothing decoded (yet): empty views, not the last model's attention
            self.shown, self.focus_matrix, self.view_trace = None, None, None
            self.source_tokens.set_tokens([])
            self.target_tokens.set_tokens([])
            self.focus.set_matrix(np.zeros((0, 0), np.float32), [], [], "")
            self.lines.set_weights(np.zeros((0, 0, 0), np.float32), [], [])
            self.side.clear()
            self.head_table.setRowCount(0)
            return
        self._show_decoding(trace)  # tokens, candidates, beam: they never depend on the focus choice
        self._set_kinds(trace.kinds)
        if not trace.kinds:
            return
        view_trace, measure_note = self.readings.measured(trace, self.state.fitted(trace)[0].kind)
        if self.over_training.partner(trace) is not None:  # two snapshots' difference: of their attention weights
            view_trace, measure_note = trace, "The focus and the grid show the difference of the attention weights."
        self.view_trace = view_trace
        self.shown_state, note = self.state.fitted(view_trace)
        note = " ".join(part for part in (self._replaced_why, note, measure_note) if part)
        self._set_choices(view_trace)
        self.hint.setText(note)  # a note replaces the last hint (a replaced sentence's why stays first)
        self.hint.setVisible(bool(note))
        shown = self.shown = self.shown_state.shown_trace(view_trace)
        state = self.shown_state
        queries, keys = shown.axis_labels(state.kind)
        try:
            focus_matrix = self.focus_matrix = state.matrix(shown)
        except SelectionError as error:
            self.explore.message.emit(str(error))
            return
        current_row = focus_matrix.current_row
        if self.focus.isVisibleTo(self):  # hidden beside Side by side: not redrawn at every step
            values, levels = self.over_training.focus(state, focus_matrix.values)
            title = self.over_training.title(self.readings.focus_title(focus_matrix.title, shown, state.layer))
            self.focus.set_value_label(shown.value_label if levels[0] >= 0 else "difference of attention weight")
            self.focus.set_matrix(values, queries, keys, title, current_row, levels, token_level=shown.level)
        self._draw_view(state, shown, queries, keys, current_row)

    def _draw_view(self, state: ExploreView, shown: Trace, queries: list[str], keys: list[str], current_row: int | None) -> None:
        """The grid, lines or head table (whichever tab is shown; the others update when chosen) for ``state``."""
        weights = shown.matrix(state.kind)  # [layers, heads, queries, keys]
        single_head = state.head if isinstance(state.head, int) else None
        shown_view = self.views.currentWidget()  # the other two update when their tab is chosen
        self.restore_button.setVisible(bool(self.explore.masked_heads))
        if shown_view is self.grid:
            self.grid.set_masked({(h.layer, h.head) for h in self.explore.masked_heads if h.kind is state.kind})
            grid_weights, levels = self.over_training.grid(state, weights)
            self.grid.set_title(self.over_training.title())
            self.grid.set_weights(grid_weights, levels, titles=map_titles(shown, state.kind))
            importance = self.readings.importance.importance_table(state.kind)
            fits = importance is not None and importance.shape == weights.shape[:2]  # not on a layer-wide measure
            self.grid.set_importance(importance if fits else None)
            self.grid.select(state.layer, single_head)
        elif shown_view is self.lines:
            self.lines.set_weights(
                weights[state.layer], queries, keys, current_row, focused_head=single_head, token_level=shown.level
            )
        elif shown_view is self.neuron.view:
            self.neuron.follow(state)
        else:
            self.head_table.set_weights(weights, keys, state.kind, self.neuron.head_terms(state, shown))
            self.head_table.select_head(state.layer, single_head)

    def _show_decoding(self, trace: Trace) -> None:
        """Tokens, and the candidates (or an encoder-only model's predictions) and beam of the current step."""
        focused = self.explore.focused_source  # a corpus search's result points at a source piece
        self.source_tokens.set_tokens(trace.source_tokens, focused, token_level=trace.level, unknown=list(trace.source_unknown))
        n = trace.n_steps
        self.target_tokens.set_tokens(trace.target_tokens, n - 1 if n else None, list(trace.forced), trace.level)
        self.side.show_trace(trace)

    def _on_beam_node_clicked(self, rank: int, n_steps: int) -> None:
        """A row of the beam tree: its best hypothesis, at the step where the row's first token was chosen."""
        self.explore.show_hypothesis(rank)
        self.explore.go_to_step(n_steps)

    # --- export (explorer/tabs/explore/export.py) ---------------------------------------------------------------
    def export_view(self, name: str, path: str | Path) -> Path:
        """The view ``name`` (focus, grid, lines, candidates) as a figure or data, by the suffix."""
        return self.exports.export_view(name, path)

    def export_all_to(self, folder: str | Path) -> list[Path]:
        return self.exports.export_all_to(folder)

    def copy_view(self, name: str):
        return self.exports.copy_view(name)

    def save_settings(self) -> None:
        self.settings.setValue("explore/kind", str(self.current_kind()))
        self.settings.setValue("explore/word_level", self.word_level.isChecked())
        save_layout(self, self.settings)
