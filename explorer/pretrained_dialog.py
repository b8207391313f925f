"""File ▸ Open pretrained model…: the models in the local Hugging Face cache that the app can open, a
folder saved with ``save_pretrained``, or an id typed by hand. Nothing is downloaded; without the
``hf`` extra the dialog says how to install it."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
)

from model.pretrained.hub import INSTALL_HINT, cached_models, hub_cache, transformers_available


class PretrainedDialog(QDialog):
    """``chosen`` holds the folder or id to open once accepted."""

    def __init__(self, parent=None, start_folder: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Open pretrained model")
        self.chosen = ""
        self.start_folder = start_folder
        self.models = cached_models()
        note = QLabel(
            f"Models in the Hugging Face cache ({hub_cache()}); the app never downloads. "
            "Or choose a folder saved with save_pretrained, or type a model id."
            + ("" if transformers_available() else f"\n\nNot available yet: {INSTALL_HINT}.")
        )
        note.setWordWrap(True)
        self.list = QListWidget()
        for model in self.models:
            item = QListWidgetItem(
                f"{model.model_id}    {model.architecture or 'unknown architecture'}, {model.size_bytes / 2**20:,.0f} MB"
            )
            item.setToolTip(str(model.folder))
            self.list.addItem(item)
        if not self.models:
            self.list.addItem("(no models in the cache)")
            self.list.setEnabled(False)
        self.list.currentRowChanged.connect(self._on_row_changed)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        self.entry = QLineEdit()
        self.entry.setPlaceholderText("a folder, or a model id such as Helsinki-NLP/opus-mt-en-fr")
        browse = QPushButton("Folder…")
        browse.clicked.connect(self._on_browse_requested)
        row = QHBoxLayout()
        row.addWidget(self.entry, 1)
        row.addWidget(browse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addWidget(self.list, 1)
        layout.addLayout(row)
        layout.addWidget(buttons)
        self.resize(640, 420)

    def _on_row_changed(self, row: int) -> None:
        if 0 <= row < len(self.models):
            self.entry.setText(self.models[row].model_id)

    def _on_browse_requested(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder saved with save_pretrained", self.start_folder)
        if folder:
            self.entry.setText(folder)

    def accept(self) -> None:
        self.chosen = self.entry.text().strip()
        if self.chosen:
            super().accept()
