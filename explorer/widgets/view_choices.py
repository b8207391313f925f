"""The Explore tab's row of view choices: which kind of attention, layer and head (or the mean, max, rollout),
words or pieces, and the colour map. The boxes offer what the trace shown has (``set_kinds``, ``set_choices``),
keeping what the user wished when it is among them."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QSpinBox

from explorer.widgets.heatmap import COLORMAPS
from model.decoding.trace import Trace
from model.inspection.selection import AGGREGATES, head_title, map_titles
from model.kinds import AttentionKind


class ViewChoices:
    def __init__(self, word_level: bool, colormap: str) -> None:
        self.kind = QComboBox()
        self.kind.setToolTip("Which attention to show: encoder self, decoder masked self, or cross")
        self.layer_box = QSpinBox()
        self.layer_box.setPrefix("layer ")
        self.layer_box.setRange(1, 1)
        self.layer_box.setToolTip("The layer in the focus and lines views")
        self.head_box = QComboBox()
        self.head_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.head_box.setToolTip("A head, the mean or max over heads, or attention rollout through the layers")
        self.word_level = QCheckBox("Words")
        self.word_level.setToolTip("Merge sub-word pieces into words (keys summed, queries averaged)")
        self.word_level.setChecked(word_level)
        self.colormap = QComboBox()
        self.colormap.addItems(COLORMAPS)
        self.colormap.setCurrentText(colormap)
        self.colormap.setToolTip("Perceptually uniform colour map of every heatmap")

    def set_kinds(self, kinds: tuple[AttentionKind, ...], wished: AttentionKind) -> None:
        """Offer ``kinds`` (those the trace has), showing the ``wished`` one when it is among them (else the first, as
        the views do): the box says what is drawn, whoever chose it (the box, or a phase change clicked)."""
        self.kind.blockSignals(True)
        if [self.kind.itemData(i) for i in range(self.kind.count())] != list(kinds):
            self.kind.clear()
            for kind in kinds:
                self.kind.addItem(kind.label, kind)
        self.kind.setCurrentIndex(max(0, self.kind.findData(wished)))
        self.kind.blockSignals(False)

    def set_choices(self, trace: Trace, kind: AttentionKind, layer: int, wished_head: int | str) -> None:
        """The layer and head boxes for ``kind``: its layers, its heads and the aggregates it allows."""
        n_layers, n_heads = trace.matrix(kind).shape[:2]
        _, head_titles = map_titles(trace, kind)
        # One map per layer (a layer-wide measure): that map alone, titled "all heads"; else each head, then the
        # aggregates (rollout of cross-attention shows the mean, with a note).
        choices = [0] if head_titles == ["all heads"] else [*range(n_heads), *AGGREGATES]
        for box in (self.layer_box, self.head_box):
            box.blockSignals(True)
        self.layer_box.setRange(1, n_layers)
        self.layer_box.setValue(layer + 1)
        titles = [head_titles[choice] if isinstance(choice, int) else head_title(choice) for choice in choices]
        if [self.head_box.itemText(i) for i in range(self.head_box.count())] != titles:
            self.head_box.clear()
            for title, choice in zip(titles, choices):
                self.head_box.addItem(title, choice)
        self.head_box.setCurrentIndex(max(0, self.head_box.findData(wished_head)))
        for box in (self.layer_box, self.head_box):
            box.blockSignals(False)
