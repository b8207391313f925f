"""Activation patching as the Interventions view shows it: the pair, the direction, and one grid at a time.

The clean sentence (the Explore tab's source by default) and the corrupted one are typed, or a minimal pair is chosen
(a feature, then one of its pairs: both fields are filled and the French change the grammar expects is shown).
The view patches on its own: a pair chosen, a sentence typed (Enter, or leaving the field), the Explore tab's sentence
as the clean one, another direction or step each say what is shown (``pair_changed(clean, corrupted, direction,
step)``: the controller patches it while this sub-tab is shown); "Patch" patches again now (``patch_requested``, the
same arguments). The preview (attribution patching) comes first and the exact result (activation patching) replaces
it, the label above the grid saying which is shown.

The grid combo chooses one of the result's grids: layers × heads for the heads of three kinds, layers × positions
(the source pieces, "clean/corrupted" where they differ, or the decoder's) for the residual streams, layers × one
column for the feed-forward blocks. Its colours are diverging, centred at 0, symmetric, with one colour bar; its title
names the tokens compared ("restores 'le' over 'les' at step 1").
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget

from explorer.widgets.heatmap import DIVERGING, HeatmapView, shown_labels
from model.interventions.minimal_pairs import FEATURES, MinimalPair
from model.interventions.patching import COMPONENTS, DIRECTIONS, Component, PatchingResult

TYPED = "typed"  # the feature choice for a pair typed by hand
METHOD_LABELS = {
    "attribution": "Preview (attribution patching, first-order estimate): the exact result follows",
    "exact": "Exact (activation patching): every cell one patched run",
}
DIRECTION_TIPS = {
    "denoising": "Denoising: each clean activation patched into the corrupted run; 1 = the clean behaviour restored",
    "noising": "Noising: each corrupted activation patched into the clean run; 1 = no harm done, 0 = all of it lost",
}


def patching_title(result: PatchingResult) -> str:
    """What a grid measures: "restores 'le' over 'les' at step 1" (denoising) or "keeps …" (noising)."""
    labels = result.labels
    clean, compared = (
        (labels.clean_token, labels.compared_token) if labels.names else shown_labels([labels.clean_token, labels.compared_token])
    )
    verb = "restores" if result.direction == "denoising" else "keeps"
    return f"{verb} {clean!r} over {compared!r} {result.labels.at(result.step)}"


PLACE_TIPS = {
    "step": "The target step whose next token is compared, from 1; 'first difference': the first step at which the "
    "corrupted sentence's translation chooses another token",
    "position": "The piece whose prediction (its tag, or a masked-LM head's word) is compared, from 1; 'first "
    "difference': the first piece whose prediction differs between the two texts",
    "sentence": "A sentence classifier predicts once: the sentence's class is compared",
}


def symmetric_limits(values: np.ndarray) -> tuple[float, float]:
    """Levels centred at 0 that hold every value and 1 (the clean metric)."""
    limit = max(float(np.abs(values).max()) if values.size else 0.0, 1.0)
    return -limit, limit


class PatchingView(QWidget):
    patch_requested = Signal(str, str, str, int)  # clean, corrupted, direction, step (from 1; 0: the first that differs)
    pair_changed = Signal(str, str, str, int)  # the same: what the view shows now, patched on its own
    pairs_requested = Signal(str)  # a feature: the tab answers with set_pairs

    def __init__(self) -> None:
        super().__init__()
        self.result: PatchingResult | None = None
        self.pairs: list[MinimalPair] = []
        self.translates = True  # the model translates: each pair's expected French change is said
        self.clean, self.corrupted = QLineEdit(), QLineEdit()
        self.clean.setPlaceholderText("the clean sentence (the Explore tab's by default)")
        self.corrupted.setPlaceholderText("the corrupted sentence: as many pieces as the clean one")
        self.feature = QComboBox()
        self.feature.addItems([TYPED, *FEATURES])
        self.feature.setToolTip("A minimal pair of toy-fr sentences that differ in one feature, or a pair typed by hand")
        self.pair_box = QComboBox()
        self.pair_box.setMinimumContentsLength(30)
        self.expected = QLabel()
        self.expected.setWordWrap(True)
        self.direction = QComboBox()
        for direction in DIRECTIONS:
            self.direction.addItem(direction)
            self.direction.setItemData(self.direction.count() - 1, DIRECTION_TIPS[direction], 3)  # 3: the tooltip role
        self.step = QSpinBox()
        self.step.setRange(0, 999)
        self.step.setSpecialValueText("first difference")
        self.step_label = QLabel("Step:")
        self.set_place("step")
        self.patch_button = QPushButton("Patch")
        self.patch_button.setToolTip(
            "Patched on its own when the pair, direction or step changes (the preview first, then the exact grids, in the "
            "background); press to patch again now"
        )
        self.grid_box = QComboBox()
        self.grid_box.addItems(list(COMPONENTS))
        self.method = QLabel()
        self.method.setStyleSheet("font-weight: bold;")
        self.heatmap = HeatmapView(DIVERGING, "restored")  # 1 = clean, 0 = corrupted: the title says how; short for 720 rows
        self._lay_out()
        self.feature.currentTextChanged.connect(self._on_feature_changed)
        self.pair_box.currentIndexChanged.connect(self._on_pair_chosen)
        self.corrupted.textEdited.connect(lambda _text: self.expected.clear())  # typed: no change is expected
        self.patch_button.clicked.connect(self._on_patch_clicked)
        self.grid_box.currentTextChanged.connect(lambda _name: self._draw())
        for field in (self.clean, self.corrupted):
            field.editingFinished.connect(self._on_pair_changed)  # Enter, or the field left
        self.direction.currentTextChanged.connect(lambda _direction: self._on_pair_changed())
        self.step.valueChanged.connect(lambda _step: self._on_pair_changed())

    def _lay_out(self) -> None:
        form = QGridLayout()
        form.addWidget(QLabel("Clean:"), 0, 0)
        form.addWidget(self.clean, 0, 1)
        form.addWidget(QLabel("Minimal pair:"), 0, 2)
        form.addWidget(self.feature, 0, 3)
        form.addWidget(self.pair_box, 0, 4)
        form.addWidget(QLabel("Corrupted:"), 1, 0)
        form.addWidget(self.corrupted, 1, 1)
        form.addWidget(self.expected, 1, 2, 1, 3)
        form.setColumnStretch(1, 3)
        form.setColumnStretch(4, 2)
        run = QHBoxLayout()
        for widget in (
            QLabel("Direction:"),
            self.direction,
            self.step_label,
            self.step,
            self.patch_button,
            QLabel("Grid:"),
            self.grid_box,
        ):
            run.addWidget(widget)
        run.addWidget(self.method, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(form)
        layout.addLayout(run)
        layout.addWidget(self.heatmap, 1)

    def set_place(self, place: str) -> None:
        """What the step box counts: a decoder's "step", an encoder-only model's "position" (a piece's prediction) or
        "sentence" (a sentence classifier's one prediction: nothing to choose)."""
        self.step_label.setText("Step:" if place == "step" else "Position:")
        self.step.setEnabled(place != "sentence")
        if place == "sentence":
            self.step.setValue(0)
        self.step.setToolTip(PLACE_TIPS[place])

    # --- the pair -----------------------------------------------------------------------------------
    def set_clean(self, text: str) -> None:
        """The Explore tab's sentence, as the clean one, unless a minimal pair is chosen."""
        if self.feature.currentText() == TYPED and text != self.clean.text():
            self.clean.setText(text)
            self._on_pair_changed()

    def _on_feature_changed(self, feature: str) -> None:
        if feature == TYPED:
            self.set_pairs([])
        else:
            self.pairs_requested.emit(feature)

    def set_pairs(self, pairs: list[MinimalPair], translates: bool = True) -> None:
        """The minimal pairs offered for the feature chosen; the first one is filled in. ``translates``: the model
        translates, so the French each pair is expected to change is said (a decoder-only model continues the text)."""
        self.pairs, self.translates = list(pairs), translates
        self.pair_box.blockSignals(True)
        self.pair_box.clear()
        self.pair_box.addItems([f"{pair.clean.source} / {pair.corrupted.source}" for pair in self.pairs])
        self.pair_box.blockSignals(False)
        self.pair_box.setEnabled(bool(self.pairs))
        self.expected.clear()
        if self.pairs:
            self._on_pair_chosen(0)

    def _on_pair_chosen(self, index: int) -> None:
        if not 0 <= index < len(self.pairs):
            return
        pair = self.pairs[index]
        self.clean.setText(pair.clean.source)
        self.corrupted.setText(pair.corrupted.source)
        changes = "; ".join(f"{before or '∅'} → {after or '∅'}" for before, after in pair.expected_changes)
        unequal = "" if pair.same_pieces is not False else " (unequal piece counts: it cannot be patched)"
        expected = f"Expected change in French: {changes}" if self.translates else "The prompts differ in one feature"
        self.expected.setText(f"{expected}{unequal}")
        self._on_pair_changed()

    def _on_patch_clicked(self) -> None:
        self.patch_requested.emit(self.clean.text(), self.corrupted.text(), self.direction.currentText(), self.step.value())

    def _on_pair_changed(self) -> None:
        self.pair_changed.emit(self.clean.text(), self.corrupted.text(), self.direction.currentText(), self.step.value())

    # --- the result ---------------------------------------------------------------------------------
    def set_result(self, result: PatchingResult | None) -> None:
        self.result = result
        self.method.setText("" if result is None else METHOD_LABELS[result.method])
        self._offer_grids([str(component) for component in result.grids] if result is not None else list(COMPONENTS))
        self._draw()

    def _offer_grids(self, names: list[str]) -> None:
        """The grid box offers ``names`` (a decoder-only model's grids are the decoder's), the choice kept if offered."""
        if [self.grid_box.itemText(index) for index in range(self.grid_box.count())] == names:
            return
        chosen = self.grid_box.currentText()
        with QSignalBlocker(self.grid_box):
            self.grid_box.clear()
            self.grid_box.addItems(names)
            self.grid_box.setCurrentIndex(max(names.index(chosen) if chosen in names else 0, 0))

    def _draw(self) -> None:
        result, name = self.result, self.grid_box.currentText()
        if result is None or name not in result.grids:
            self.heatmap.set_matrix(np.zeros((0, 0), np.float32), [], [], "", levels=symmetric_limits(np.zeros(0)))
            return
        component = Component.parse(name)
        grid = result.grids[component]
        self.heatmap.plot.getAxis("left").set_name("layer")
        self.heatmap.plot.getAxis("top").set_name({"heads": "head", "residual": "position"}.get(component.part, ""))
        title = f"{name} ({result.direction}): how much each patch {patching_title(result)} (1 = clean, 0 = corrupted)"
        columns = ["/".join(shown_labels(column.split("/"))) for column in grid.columns]  # "▁cat/▁cats" -> "cat/cats"
        self.heatmap.set_matrix(grid.values, grid.rows, columns, title, levels=symmetric_limits(grid.values))
