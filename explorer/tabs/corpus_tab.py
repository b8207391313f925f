"""The Corpus tab: a corpus index (model/corpus/) of the Explore tab's model, built in the background and searched.

Above, the index: open one (a folder), or build one from a built-in corpus or a text, TSV or Moses file of your own
into a folder, with progress and Cancel (Build again resumes after the chunks finished). Below, three panels
(explorer/tabs/corpus_panels.py): the tokens nearest a token at a layer (from the Explore tab's right-click menu on a
token, or a piece typed here), the sentences where a head behaves a given way (from the heads table's right-click
menu, or typed), and the joint query-key map of a head or of a layer's heads. Clicking a result opens its sentence in
the Explore tab at its token. All state lives in the corpus controller (explorer/controllers/corpus.py).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.controllers.window import WindowControllers
from explorer.settings_values import SettingsValues
from explorer.tabs.corpus_panels import HeadQueryPanel, QKMapPanel, SimilarTokensPanel
from explorer.tabs.explore.layout import size_to_current_page
from explorer.widgets.progress_bar import show_busy, show_counted
from model.corpus.build import IndexOptions
from model.corpus.index import CorpusIndex
from model.corpus.sources import DEFAULT_BUILTIN_LIMIT, IndexCorpus
from model.data.corpora import BUILTIN_CORPORA

FIGURE_FILTER = "PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"


class CorpusTab(QWidget):
    def __init__(self, controllers: WindowControllers, settings: SettingsValues) -> None:
        super().__init__()
        self.corpus, self.explore, self.settings = controllers.corpus, controllers.explore, settings
        self.similar, self.heads, self.maps = SimilarTokensPanel(), HeadQueryPanel(), QKMapPanel()
        self.panels = QTabWidget()
        self.panels.addTab(self.similar, "Similar tokens")
        self.panels.addTab(self.heads, "Head query")
        self.panels.addTab(self.maps, "Query–key map")
        # Only the panel shown sets how small the tab may get: the query-key map's row (1,060 px) made the window
        # scroll at 1024 px on every panel.
        size_to_current_page(self.panels)
        self.panels.currentChanged.connect(lambda _index: size_to_current_page(self.panels))
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self._index_box())
        layout.addWidget(self.panels, 1)
        layout.addWidget(self.status)
        self._connect()
        self._on_index_changed(self.corpus.index)

    def _index_box(self) -> QGroupBox:
        box = QGroupBox("Index")
        self.index_label = QLabel("No index open: open one, or build one with the Explore tab's model.")
        self.open_button = QPushButton("Open index…")
        self.source = QComboBox()
        self.source.setEditable(True)
        self.source.addItems([name for name in BUILTIN_CORPORA if IndexCorpus(name).is_builtin])
        self.source.setToolTip("A built-in corpus, or the path of a text file (a sentence a line), a TSV file or a Moses source")
        self.file_button = QPushButton("File…")
        self.target = QLineEdit()
        self.target.setPlaceholderText("target file of a Moses pair (optional)")
        self.limit = QSpinBox()
        self.limit.setRange(0, 10_000_000)
        self.limit.setSpecialValueText("default")
        self.limit.setToolTip(
            f"The first N distinct sentences (default: a built-in corpus's {DEFAULT_BUILTIN_LIMIT:,}, a file's all)"
        )
        self.layers, self.head_choice = QLineEdit("all"), QLineEdit("all")
        self.layers.setToolTip("Residual layers kept: all, or e.g. encoder:3,decoder:3 (0: the embeddings)")
        self.head_choice.setToolTip("Heads whose queries and keys are kept: all, none, or e.g. decoder,cross:3")
        self.folder = QLineEdit(self.settings.text("corpus/folder", ""))
        self.folder.setPlaceholderText("the index's folder (new, empty, or an unfinished index to resume)")
        self.folder_button = QPushButton("Folder…")
        self.build_button, self.cancel_button = QPushButton("Build"), QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        rows = QVBoxLayout(box)
        for widgets in (
            (self.open_button, self.index_label),
            (QLabel("Build from"), self.source, self.file_button, self.target, QLabel("sentences"), self.limit),
            (QLabel("layers"), self.layers, QLabel("heads"), self.head_choice, QLabel("into"), self.folder, self.folder_button),
            (self.build_button, self.cancel_button, self.progress),
        ):
            row = QHBoxLayout()
            for widget in widgets:
                row.addWidget(widget)
            row.addStretch(1)
            rows.addLayout(row)
        return box

    def _connect(self) -> None:
        corpus = self.corpus
        self.open_button.clicked.connect(self._on_open)
        self.file_button.clicked.connect(self._on_file)
        self.folder_button.clicked.connect(self._on_folder)
        self.build_button.clicked.connect(self.build)
        self.cancel_button.clicked.connect(corpus.cancel_build)
        corpus.index_changed.connect(self._on_index_changed)
        corpus.building_changed.connect(self._on_building_changed)
        corpus.progress.connect(self._on_progress)
        corpus.message.connect(self.status.setText, check_nargs=False)  # a Qt method: no signature to check
        corpus.tokens_found.connect(self._on_tokens_found)
        corpus.sentences_found.connect(self._on_sentences_found)
        corpus.map_ready.connect(self.maps.show_maps)
        corpus.head_chosen.connect(self._on_head_chosen)
        self.similar.search_requested.connect(
            lambda layer, token, k, metric: corpus.search_index_token(layer, token, k=k, metric=metric)
        )
        self.heads.query_requested.connect(corpus.query_head)
        self.maps.draw_requested.connect(corpus.draw_map)
        self.maps.export_requested.connect(self._on_export)
        for table in (self.similar.table, self.heads.table):
            table.result_chosen.connect(self._open_result)
        self.maps.view.point_chosen.connect(self._open_result)

    # --- the index ---------------------------------------------------------------------------------
    def _on_open(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a corpus index", self.folder.text() or str(Path.home()))
        if folder:
            self.open_index(folder)

    def open_index(self, folder: str) -> bool:
        self.folder.setText(folder)
        self.settings.setValue("corpus/folder", folder)
        return self.corpus.open_index(folder)

    def _on_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "A corpus file", str(Path.home()), "Text and TSV files (*.txt *.tsv);;All files (*)"
        )
        if path:
            self.source.setEditText(path)

    def _on_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "The index's folder", self.folder.text() or str(Path.home()))
        if folder:
            self.folder.setText(folder)

    def build(self) -> bool:
        """Build (or resume) the index the fields describe, with the Explore tab's model."""
        corpus = IndexCorpus(self.source.currentText().strip(), self.target.text().strip() or None, self.limit.value() or None)
        options = IndexOptions(layers=self.layers.text().strip() or "all", heads=self.head_choice.text().strip() or "all")
        self.settings.setValue("corpus/folder", self.folder.text())
        return self.corpus.build(corpus, self.folder.text().strip(), options)

    def _on_index_changed(self, index: CorpusIndex | None) -> None:
        manifest = index.manifest if index is not None else None
        self.index_label.setText(index.describe() if index is not None else "No index open.")
        for panel in (self.similar, self.heads, self.maps):
            panel.set_index(manifest)

    def _on_building_changed(self, building: bool) -> None:
        self.build_button.setEnabled(not building)
        self.cancel_button.setEnabled(building)
        self.progress.setVisible(building)
        if building:
            show_busy(self.progress)
            self.status.setText("Indexing…")

    def _on_progress(self, text: str, done: int, total: int) -> None:
        show_counted(self.progress, done, total)
        self.status.setText(text[:1].upper() + text[1:] + "…")

    # --- results -----------------------------------------------------------------------------------
    def _on_tokens_found(self, results) -> None:
        self.panels.setCurrentWidget(self.similar)
        self.similar.show_results(results)
        self.status.setText("")

    def _on_sentences_found(self, result) -> None:
        self.panels.setCurrentWidget(self.heads)
        self.heads.show_result(result)
        self.status.setText("")

    def _on_head_chosen(self, head, predicate: str) -> None:
        self.panels.setCurrentWidget(self.heads)
        self.heads.set_head(head, predicate)

    def _open_result(self, sentence_id: int, side: str, position: int) -> None:
        self.corpus.open_result(sentence_id, side, position if position >= 0 else None)

    def _on_export(self, what: str) -> None:
        if not self.maps.view.panels:
            self.status.setText("Draw a map first.")
            return
        folder = self.settings.folder("corpus/export_folder")
        if what == "csv":
            path, _ = QFileDialog.getSaveFileName(self, "Export the map's points", str(folder / "qk-map.csv"), "CSV (*.csv)")
        else:
            path, _ = QFileDialog.getSaveFileName(self, "Export the map", str(folder / "qk-map.png"), FIGURE_FILTER)
        if path:
            self.export_map(path)

    def export_map(self, path: str) -> Path | None:
        written = self.corpus.export_map(path, self.maps.colour_box.currentText())
        if written is not None:
            self.settings.setValue("corpus/export_folder", str(Path(path).parent))
            self.status.setText(f"Wrote {written}")
        return written
