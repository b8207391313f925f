"""The corpus box of a view that measures or grades a model on sentences of a corpus (head importance, the report
card): shown only for a model that names no training corpus (a pretrained folder), offering the corpora it may be
measured on, the first chosen."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox


class CorpusBox(QComboBox):
    chosen = Signal(str)  # the corpus chosen ("" when the model names its own and nothing is offered)

    def __init__(self, tooltip: str) -> None:
        super().__init__()
        self.setToolTip(tooltip)
        self.setVisible(False)
        self.currentTextChanged.connect(self.chosen.emit)

    def offer(self, names: list[str]) -> None:
        """Offer ``names`` (none: the box hidden); the first is chosen, and said so once."""
        self.blockSignals(True)
        self.clear()
        self.addItems(names)
        self.blockSignals(False)
        self.setVisible(bool(names))
        self.chosen.emit(names[0] if names else "")
