"""The Explore tab: type a sentence, step through decoding, and see every attention head.

It reads only the session's Trace: the model grid (layers x heads), the focus heatmap (a head, the
mean or max over heads, or rollout), the lines view, the head table, the tokens, the next-token
candidates (click one to force it) and the beam tree. Every view exports (PNG, SVG, PDF, CSV, NPY).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.tabs.decode_controls import DecodeControls
from explorer.tabs.explore_export import ExploreExports
from explorer.widgets.beam_tree_view import BeamTreeView
from explorer.widgets.candidates_view import CandidatesView
from explorer.widgets.head_table import HeadTable
from explorer.widgets.heatmap import COLORMAPS, HeatmapView
from explorer.widgets.lines_view import LinesView
from explorer.widgets.model_grid import ModelGrid
from explorer.widgets.tokens_view import TokensView
from model.inspection.selection import KIND_NAMES, SelectionError, select

EXAMPLE_SENTENCE = "the black cat sees the small dog"
HEAD_CHOICES = ("mean", "max", "rollout")


class ExploreTab(QWidget):
    def __init__(self, session, settings: QSettings):
        super().__init__()
        self.session, self.settings = session, settings
        self.shown = None  # the trace as displayed (word level when chosen)
        self.focus_matrix = None  # the AttentionMatrix in the focus view
        self.layer, self.head = 0, "mean"

        self.controls = DecodeControls()
        self.controls.source.setText(str(settings.value("explore/text", EXAMPLE_SENTENCE)))
        self.source_tokens = TokensView("Source pieces:", "How the tokenizer split the sentence")
        self.target_tokens = TokensView("Target:", "The tokens decoded so far; click one to go to its step "
                                        "(✎ = forced by you)")
        self.kind = QComboBox()
        for kind, name in KIND_NAMES.items():
            self.kind.addItem(name, kind)
        self.kind.setCurrentIndex(max(0, self.kind.findData(settings.value("explore/kind", "cross"))))
        self.kind.setToolTip("Which attention to show: encoder self, decoder masked self, or cross")
        self.layer_box = QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.layer_box.setRange(1, 1)
        self.layer_box.setToolTip("The layer in the focus and lines views")
        self.head_box = QComboBox()
        self.head_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.head_box.setToolTip("A head, the mean or max over heads, or attention rollout through the layers")
        self.word_level = QCheckBox("Words")
        self.word_level.setToolTip("Merge sub-word pieces into words (keys summed, queries averaged)")
        self.word_level.setChecked(settings.value("explore/word_level", False) in (True, "true"))
        self.colormap = QComboBox()
        self.colormap.addItems(COLORMAPS)
        self.colormap.setCurrentText(str(settings.value("explore/colormap", "viridis")))
        self.colormap.setToolTip("Perceptually uniform colour map of every heatmap")
        self.exports = ExploreExports(self)  # the Export menu, Ctrl+E and Ctrl+Shift+C
        export_button = QPushButton("Export ▾")
        export_button.setToolTip("A view as a figure (PNG, SVG, PDF) or data (CSV, NPY), everything at this step, "
                                 "a copy (Ctrl+Shift+C), or the figure settings (width, font, caption)")
        export_button.setMenu(self.exports.menu)
        view_row = QHBoxLayout()
        for widget in (QLabel("Attention:"), self.kind, self.layer_box, self.head_box, self.word_level,
                       QLabel("Colours:"), self.colormap, export_button):
            view_row.addWidget(widget)
        view_row.addStretch(1)

        colours = self.colormap.currentText()
        self.grid = ModelGrid(colours)
        self.focus = HeatmapView(colours)
        self.lines = LinesView()
        self.head_table = HeadTable()
        self.candidates = CandidatesView()
        self.beam_tree = BeamTreeView()
        self.views = QTabWidget()
        self.views.addTab(self.grid, "Model grid")
        self.views.addTab(self.lines, "Lines")
        self.views.addTab(self.head_table, "Heads")
        self.side = QSplitter(Qt.Horizontal)
        self.side.addWidget(self.candidates)
        self.side.addWidget(self.beam_tree)
        self.beam_tree.hide()
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: palette(mid); font-style: italic;")

        self.top_splitter = QSplitter(Qt.Horizontal)
        self.top_splitter.addWidget(self.views)
        self.top_splitter.addWidget(self.focus)
        self.top_splitter.setSizes([600, 700])
        self.main_splitter = QSplitter(Qt.Vertical)
        self.main_splitter.addWidget(self.top_splitter)
        self.main_splitter.addWidget(self.side)
        self.main_splitter.setSizes([560, 300])
        for splitter, key in ((self.top_splitter, "explore/top_splitter"), (self.main_splitter, "explore/splitter")):
            state = settings.value(key)
            if state is not None:
                splitter.restoreState(state)
        layout = QVBoxLayout(self)
        for widget in (self.controls, self.source_tokens, self.target_tokens):
            layout.addWidget(widget)
        layout.addLayout(view_row)
        layout.addWidget(self.hint)
        layout.addWidget(self.main_splitter, 1)

        self.controls.translate_requested.connect(self._on_translate_requested)
        self.controls.step_forward.connect(session.step_forward)
        self.controls.step_back.connect(session.step_back)
        self.controls.run_to_end.connect(session.run_to_end)
        self.controls.reset.connect(session.reset)
        self.controls.step_chosen.connect(session.go_to_step)
        self.target_tokens.token_clicked.connect(lambda index: session.go_to_step(index + 1))
        self.candidates.candidate_clicked.connect(session.force)
        self.beam_tree.hypothesis_clicked.connect(session.show_hypothesis)
        self.beam_tree.node_clicked.connect(self._on_beam_node_clicked)
        self.grid.cell_clicked.connect(self._on_head_chosen)
        self.head_table.head_clicked.connect(self._on_head_chosen)
        self.views.currentChanged.connect(self._on_view_option_changed)
        self.kind.currentIndexChanged.connect(self._on_view_option_changed)
        self.layer_box.valueChanged.connect(self._on_layer_changed)
        self.head_box.currentIndexChanged.connect(self._on_head_box_changed)
        self.word_level.toggled.connect(self._on_view_option_changed)
        self.colormap.currentTextChanged.connect(self._on_colormap_changed)
        session.model_changed.connect(self._on_model_changed)
        session.trace_changed.connect(self._on_trace_changed)
        self._on_model_changed(session.bundle)

    # --- session signals ------------------------------------------------------------------------
    def _on_model_changed(self, bundle) -> None:
        if bundle is None:
            self.hint.setText("No model is open. File ▸ Open model… (Ctrl+O), drop a .safetensors file here, "
                              "or train one in the Train tab.")
            self.hint.show()
            return
        config = bundle.config
        self.layer_box.blockSignals(True)
        self.layer_box.setRange(1, max(config.n_encoder_layers, config.n_decoder_layers))
        self.layer_box.blockSignals(False)
        self.head_box.blockSignals(True)
        self.head_box.clear()
        self.head_box.addItems([f"head {h + 1}" for h in range(config.n_heads)] +
                               ["mean over heads", "max over heads", "rollout"])
        self.head_box.setCurrentIndex(config.n_heads)
        self.head_box.blockSignals(False)
        self.layer, self.head = 0, "mean"
        self.hint.hide()
        if self.session.stepper is None and self.controls.source.text().strip():
            self._translate_readable(self.controls.source.text())

    def _translate_readable(self, text: str) -> None:
        """Decode the sentence through a new model; one mostly unknown to its source tokenizer (a corpus
        of another language or symbols) is replaced by an example the model can read, and the hint says so."""
        session = self.session
        if session.can_read(text):
            session.translate(text, self.controls.options())
            return
        share, example = session.unknown_share(text), session.example_sentence()
        quoted = text if len(text) <= 60 else text[:57].rstrip() + "…"
        unknown = f"{share:.0%} of the pieces of “{quoted}” are unknown (<unk>) to this model's source vocabulary"
        if example is None:
            session.translate(text, self.controls.options())
            self.hint.setText(f"{unknown}, and no example sentence was found for it: type a sentence in the "
                              "language (or symbols) it was trained on.")
        else:
            sentence, origin = example
            self.controls.source.setText(sentence)
            session.translate(sentence, self.controls.options())
            self.hint.setText(f"{unknown}: showing “{sentence}”, from {origin}, instead.")
            session.message.emit(f"Example sentence replaced by one this model can read, from {origin}.")
        self.hint.show()

    def _on_translate_requested(self, text: str) -> None:
        self.settings.setValue("explore/text", text)
        self.session.translate(text, self.controls.options())

    def _on_trace_changed(self, trace) -> None:
        session = self.session
        self.controls.set_steps(session.current_step, session.total_steps, session.finished)
        self.refresh()

    # --- view options ---------------------------------------------------------------------------
    def current_kind(self) -> str:
        return self.kind.currentData()

    def _on_view_option_changed(self, *_args) -> None:
        self.refresh()

    def _on_colormap_changed(self, name: str) -> None:
        self.grid.set_colormap(name)
        self.focus.set_colormap(name)
        self.settings.setValue("explore/colormap", name)

    def _on_layer_changed(self, value: int) -> None:
        self.layer = value - 1
        self.refresh()

    def _on_head_box_changed(self, index: int) -> None:
        n_heads = self.session.bundle.config.n_heads if self.session.bundle else 0
        self.head = index if index < n_heads else HEAD_CHOICES[index - n_heads]
        self.refresh()

    def _on_head_chosen(self, layer: int, head: int) -> None:
        """A grid cell or a head-table row: focus that head."""
        self.layer, self.head = layer, head
        for box, value in ((self.layer_box, layer + 1), (self.head_box, head)):
            box.blockSignals(True)
            (box.setValue if box is self.layer_box else box.setCurrentIndex)(value)
            box.blockSignals(False)
        self.refresh()

    # --- drawing --------------------------------------------------------------------------------
    def refresh(self) -> None:
        trace = self.session.trace
        if trace is None:  # nothing decoded (yet): empty views, not the last model's attention
            self.shown, self.focus_matrix = None, None
            self.source_tokens.set_tokens([])
            self.target_tokens.set_tokens([])
            self.focus.set_matrix(np.zeros((0, 0), np.float32), [], [], "")
            self.lines.set_weights(np.zeros((0, 0, 0), np.float32), [], [])
            self.candidates.set_candidates(None, [], [], [], None)
            self.head_table.setRowCount(0)
            self.beam_tree.set_tree(None, None, None)
            self.beam_tree.hide()
            return
        self._show_decoding(trace)  # tokens, candidates, beam: they never depend on the focus choice
        self.shown = trace.word_level() if self.word_level.isChecked() else trace
        kind = self.current_kind()
        weights = self.shown.matrix(kind)  # [layers, heads, queries, keys]
        layer = min(self.layer, weights.shape[0] - 1)
        head = self.head
        if head == "rollout" and kind == "cross":
            head = "mean"
            self.hint.setText("Rollout follows self-attention through the layers: showing the mean for cross.")
            self.hint.show()
        else:
            self.hint.hide()
        queries, keys = self.shown.axis_labels(kind)
        current_row = len(queries) - 1 if kind != "encoder" and queries else None
        try:
            self.focus_matrix = select(self.shown, kind, layer, head)
        except SelectionError as error:
            self.session.message.emit(str(error))
            return
        self.focus.set_matrix(self.focus_matrix.values, queries, keys, self.focus_matrix.title, current_row,
                              token_level=self.shown.level)
        shown_view = self.views.currentWidget()  # the other two update when their tab is chosen
        if shown_view is self.grid:
            self.grid.set_weights(weights)
            self.grid.select(layer, head if isinstance(head, int) else None)
        elif shown_view is self.lines:
            self.lines.set_weights(weights[layer], queries, keys, current_row,
                                   focused_head=head if isinstance(head, int) else None, token_level=self.shown.level)
        else:
            self.head_table.set_weights(weights, keys, kind)
            self.head_table.select_head(layer, head if isinstance(head, int) else None)

    def _show_decoding(self, trace) -> None:
        """Tokens, the candidates of the current step (at step 0: those step 1 is chosen from) and the beam."""
        self.source_tokens.set_tokens(trace.source_tokens, token_level=trace.level)
        n = trace.n_steps
        self.target_tokens.set_tokens(trace.target_tokens, n - 1 if n else None, list(trace.forced), trace.level)
        bundle, stepper = self.session.bundle, self.session.stepper
        vocabulary = bundle.config.target_vocab_size if bundle is not None else None
        if n:
            self.candidates.set_candidates(n - 1, trace.candidate_ids[-1], trace.candidate_tokens[-1],
                                           trace.candidate_probabilities[-1], int(trace.chosen_ids[-1]), vocabulary)
        elif len(trace.next_candidate_ids):
            self.candidates.set_candidates(0, trace.next_candidate_ids, trace.next_candidate_tokens,
                                           trace.next_candidate_probabilities, None, vocabulary)
        else:
            self.candidates.set_candidates(None, [], [], [], None)
        beam = stepper.beam if stepper is not None else None
        appearing = beam is not None and self.beam_tree.isHidden()
        self.beam_tree.set_tree(beam, bundle.target_tokenizer if bundle is not None else None,
                                self.session.hypothesis_rank, stepper.options.length_penalty if beam else 0.6)
        self.beam_tree.setVisible(beam is not None)
        total = sum(self.side.sizes())
        if appearing and total > 0:  # room for every column of the beam view, the rest to the candidates
            wanted = min(self.beam_tree.sizeHint().width(), int(total * 0.65))
            self.side.setSizes([total - wanted, wanted])

    def _on_beam_node_clicked(self, rank: int, n_steps: int) -> None:
        """A row of the beam tree: its best hypothesis, at the step where the row's first token was chosen."""
        self.session.show_hypothesis(rank)
        self.session.go_to_step(n_steps)

    # --- export (explorer/export.py) ---------------------------------------------------------------
    def export_view(self, name: str, path: str | Path) -> Path:
        """The view ``name`` (focus, grid, lines, candidates) as a figure or data, by the suffix."""
        return self.exports.export_view(name, path)

    def export_all_to(self, folder: str | Path) -> list[Path]:
        return self.exports.export_all_to(folder)

    def copy_view(self, name: str):
        return self.exports.copy_view(name)

    def save_settings(self) -> None:
        self.settings.setValue("explore/kind", self.current_kind())
        self.settings.setValue("explore/word_level", self.word_level.isChecked())
        self.settings.setValue("explore/splitter", self.main_splitter.saveState())
        self.settings.setValue("explore/top_splitter", self.top_splitter.saveState())
