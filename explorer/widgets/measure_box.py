"""The "Reading" box: raw attention weights or one of the contribution measures: every measure registered when the
box is made (model/inspection/measure_catalogue.py; the app's own come with model/attribution/measures.py).

Every measure is listed; one the open model or the kind shown does not define is disabled, its tooltip saying
why (a measure computed for the app's Transformer only, ALTI without cross-attention, saliency without the
encoder). The measure chosen stays chosen when the kind changes: the views then say it is not defined there.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QComboBox

from model.attribution.measures import MEASURES, NAMES

TOOLTIP = (
    "What the attention views show: the raw weights, or a measure of what each token contributed — "
    "norm-based, ALTI/ALTI+, value zeroing, attention × gradient, gradient × input, integrated gradients, "
    "or Shift-Att. Gradient measures are computed in the background; the views update when they are ready."
)


class MeasureBox(QComboBox):
    measure_chosen = Signal(str)

    def __init__(self):
        super().__init__()
        self.names = tuple(NAMES)  # the measures registered now, one item each
        for name in self.names:
            self.addItem(MEASURES[name].label, name)
            self.setItemData(self.count() - 1, MEASURES[name].what, Qt.ItemDataRole.ToolTipRole)
        self.setToolTip(TOOLTIP)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.reasons: dict[str, str] = {}  # why each measure cannot be shown now ('' when it can)
        self.currentIndexChanged.connect(self._on_index_changed)

    @property
    def measure(self) -> str:
        return str(self.currentData() or "attention")

    def set_measure(self, name: str) -> None:
        index = self.names.index(name) if name in self.names else 0
        self.setCurrentIndex(index)

    def set_available(self, reasons: dict[str, str]) -> None:
        """Enable the measures with no reason against them; disable the rest, their tooltip saying why."""
        if reasons == self.reasons:  # redrawn steps change nothing here
            return
        self.reasons = dict(reasons)
        items = self.model()
        assert isinstance(items, QStandardItemModel)
        for index, name in enumerate(self.names):
            reason = reasons.get(name, "")
            item = items.item(index)
            item.setEnabled(not reason)
            self.setItemData(index, reason or MEASURES[name].what, Qt.ItemDataRole.ToolTipRole)

    def reason(self) -> str:
        """Why the chosen measure cannot be shown now ('' when it can)."""
        return self.reasons.get(self.measure, "")

    def _on_index_changed(self, _index: int) -> None:
        self.measure_chosen.emit(self.measure)
