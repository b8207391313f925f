"""The training settings form: corpus (with its size and sample pairs), tokenizer, model config,
training options and device. It builds a TrainingRequest and remembers the last choices.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox,
                               QLabel, QSpinBox, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
                               QHeaderView, QAbstractItemView)

from model.corpora import BUILTIN_CORPORA, DEFAULT_SIZES, CorpusSpec, generate_builtin, load_corpus
from model.device import available_devices
from model.pipeline import TokenizerOptions
from model.training import TrainingOptions

from .workers import TrainingRequest, start_task

TSV_CHOICE, MOSES_CHOICE = "TSV file…", "Moses pair…"
CORPUS_TIPS = {
    "toy-fr": "English→French from a grammar and a bilingual lexicon, with gold word alignments",
    "copy": "Copy a sequence of symbols: cross-attention should be diagonal",
    "reverse": "Reverse a sequence of symbols: cross-attention should be anti-diagonal",
    "sort": "Sort a sequence of symbols",
}


def _spin(low, high, value, tip, step=1, decimals=None):
    box = QDoubleSpinBox() if decimals is not None else QSpinBox()
    if decimals is not None:
        box.setDecimals(decimals)
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setValue(value)
    box.setToolTip(tip)
    return box


class TrainingForm(QWidget):
    corpus_error = Signal(str)

    def __init__(self, settings: QSettings):
        super().__init__()
        self.settings = settings
        self.corpus_paths: tuple[str, str | None] | None = None  # a chosen file (and Moses target)
        self._tasks = set()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

        corpus_box = QGroupBox("Corpus")
        corpus_form = QFormLayout(corpus_box)
        self.corpus = QComboBox()
        self.corpus.addItems([*BUILTIN_CORPORA, TSV_CHOICE, MOSES_CHOICE])
        for index, name in enumerate(BUILTIN_CORPORA):
            self.corpus.setItemData(index, CORPUS_TIPS[name], 3)  # Qt.ToolTipRole
        self.corpus.setToolTip("A built-in corpus, or your own tab-separated file or Moses-style pair of files")
        self.corpus_size = _spin(100, 1_000_000, 20000, "Pairs to generate for a built-in corpus", 1000)
        self.corpus_seed = _spin(0, 2**31 - 1, 0, "Generation seed of a built-in corpus")
        self.corpus_info = QLabel()
        self.corpus_info.setWordWrap(True)
        self.samples = QTableWidget(0, 2)
        self.samples.setHorizontalHeaderLabels(["Source", "Target"])
        self.samples.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.samples.verticalHeader().setVisible(False)
        self.samples.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.samples.setMaximumHeight(150)
        self.samples.setToolTip("Some pairs of the corpus")
        corpus_form.addRow("Corpus", self.corpus)
        corpus_form.addRow("Pairs", self.corpus_size)
        corpus_form.addRow("Seed", self.corpus_seed)
        corpus_form.addRow(self.corpus_info)
        corpus_form.addRow(self.samples)
        layout.addWidget(corpus_box)

        row = QVBoxLayout()  # stacked: each form keeps the panel's full width
        model_box = QGroupBox("Model")
        model_form = QFormLayout(model_box)
        self.encoder_layers = _spin(1, 12, 3, "Encoder layers")
        self.decoder_layers = _spin(1, 12, 3, "Decoder layers")
        self.d_model = _spin(16, 1024, 128, "Width of every representation (d_model); a multiple of the heads", 16)
        self.heads = _spin(1, 16, 4, "Attention heads per layer")
        self.d_ff = _spin(16, 4096, 512, "Inner width of the feed-forward sublayers (d_ff)", 64)
        self.dropout = _spin(0.0, 0.9, 0.1, "Dropout on sublayer outputs and embeddings", 0.05, 2)
        self.norm = QComboBox()
        self.norm.addItems(["post", "pre"])
        self.norm.setToolTip("post: LayerNorm after each residual, as in the paper; pre: before each sublayer")
        self.positions = QComboBox()
        self.positions.addItems(["sinusoidal", "learned"])
        self.positions.setToolTip("Sinusoidal positional encoding (the paper) or a learned table")
        self.vocab_size = _spin(20, 32000, 2000, "SentencePiece vocabulary size (a soft limit)", 100)
        self.joint_vocab = QCheckBox("Joint vocabulary, tied embeddings")
        self.joint_vocab.setChecked(True)
        self.joint_vocab.setToolTip("One tokenizer for both languages; source, target and output share one matrix")
        for label, widget in (("Encoder layers", self.encoder_layers), ("Decoder layers", self.decoder_layers),
                              ("d_model", self.d_model), ("Heads", self.heads), ("d_ff", self.d_ff),
                              ("Dropout", self.dropout), ("Norm", self.norm), ("Positions", self.positions),
                              ("Vocabulary", self.vocab_size), ("", self.joint_vocab)):
            model_form.addRow(label, widget)
        row.addWidget(model_box)

        options_box = QGroupBox("Training")
        options_form = QFormLayout(options_box)
        self.epochs = _spin(1, 1000, 10, "Passes over the training pairs")
        self.max_minutes = _spin(0.0, 10000.0, 0.0, "Time budget in minutes (0 = none); stops at a step", 1.0, 1)
        self.max_steps = _spin(0, 10_000_000, 0, "Stop after this many steps (0 = no limit)", 100)
        self.batch_size = _spin(1, 4096, 64, "Sentence pairs per step", 8)
        self.warmup = _spin(1, 100000, 400, "Warm-up steps of the paper's learning-rate schedule", 100)
        self.label_smoothing = _spin(0.0, 0.9, 0.1, "Label smoothing of the loss (the paper: 0.1)", 0.05, 2)
        self.seed = _spin(0, 2**31 - 1, 0, "Seed of initialisation, batch order and dropout")
        self.device = QComboBox()
        self.device.addItems(available_devices())
        self.device.setCurrentIndex(self.device.count() - 1)
        self.device.setToolTip("Train on the CPU or a CUDA GPU (bf16 autocast there)")
        for label, widget in (("Epochs", self.epochs), ("Time budget (min)", self.max_minutes),
                              ("Max steps", self.max_steps), ("Batch size", self.batch_size),
                              ("Warm-up", self.warmup), ("Label smoothing", self.label_smoothing),
                              ("Seed", self.seed), ("Device", self.device)):
            options_form.addRow(label, widget)
        row.addWidget(options_box)
        layout.addLayout(row)

        self._restore()
        self.corpus.activated.connect(self._on_corpus_chosen)
        self.corpus.currentTextChanged.connect(self._on_corpus_changed)
        self.corpus_seed.valueChanged.connect(self._on_preview_requested)
        self.corpus_size.valueChanged.connect(self._on_preview_requested)
        self._on_preview_requested()

    # --- corpus ---------------------------------------------------------------------------------
    def _on_corpus_chosen(self, _index=None) -> None:
        """The user picked an entry: a file entry asks for the file(s). Built-in corpora are previewed by
        _on_corpus_changed, which also follows changes made from code."""
        choice = self.corpus.currentText()
        if choice not in (TSV_CHOICE, MOSES_CHOICE):
            return
        folder = self.settings.value("train/corpus_folder", str(Path.home()))
        source, _ = QFileDialog.getOpenFileName(self, "Corpus file" if choice == TSV_CHOICE else
                                                "Source side of a Moses pair", folder)
        target = None
        if source and choice == MOSES_CHOICE:
            target, _ = QFileDialog.getOpenFileName(self, "Target side of the Moses pair", str(Path(source).parent))
        if not source or (choice == MOSES_CHOICE and not target):
            self.corpus.setCurrentIndex(0)  # back to a built-in corpus, previewed through _on_corpus_changed
        else:
            self.settings.setValue("train/corpus_folder", str(Path(source).parent))
            self.set_corpus_file(source, target)

    def _on_corpus_changed(self, choice: str) -> None:
        if choice in BUILTIN_CORPORA:
            self._on_preview_requested()

    def set_corpus_file(self, source: str, target: str | None = None) -> None:
        self.corpus_paths = (source, target)
        self.corpus.setCurrentText(MOSES_CHOICE if target else TSV_CHOICE)
        self._on_preview_requested()

    def corpus_spec(self) -> CorpusSpec:
        choice = self.corpus.currentText()
        if choice in BUILTIN_CORPORA:
            return CorpusSpec(choice, size=self.corpus_size.value(), seed=self.corpus_seed.value())
        if not self.corpus_paths:
            raise ValueError("choose a corpus file first")
        return CorpusSpec(self.corpus_paths[0], target_path=self.corpus_paths[1])

    def _on_preview_requested(self, _value=None) -> None:
        builtin = self.corpus.currentText() in BUILTIN_CORPORA
        self.corpus_size.setEnabled(builtin)
        self.corpus_seed.setEnabled(builtin)
        try:
            spec = self.corpus_spec()
        except ValueError as error:
            self._show_preview_error(str(error))
            return
        if builtin:  # a handful generated at once: the full corpus is generated when training starts
            self._show_preview(generate_builtin(spec.name, 6, spec.seed), f"{spec.size:,} pairs, generated from "
                               f"seed {spec.seed}: 90% training, 5% validation, 5% test. {CORPUS_TIPS[spec.name]}.")
            return
        self.corpus_info.setText("Reading the corpus…")

        def read():
            splits = load_corpus(spec)
            return splits

        def done(splits):
            self._tasks.discard(task)
            total = len(splits.train) + len(splits.valid) + len(splits.test)
            skipped = f"; {splits.skipped_lines} malformed lines skipped" if splits.skipped_lines else ""
            self._show_preview(splits.train[:6], f"{total:,} pairs: {len(splits.train):,} training, "
                               f"{len(splits.valid):,} validation, {len(splits.test):,} test{skipped}.")

        def failed(text):
            self._tasks.discard(task)
            self._show_preview_error(text)
            self.corpus_error.emit(text)

        task = start_task(read, done, failed)
        self._tasks.add(task)

    def _show_preview(self, pairs, info: str) -> None:
        self.corpus_info.setText(info)
        self.samples.setRowCount(len(pairs))
        for row, pair in enumerate(pairs):
            for column, text in enumerate((pair.source, pair.target)):
                self.samples.setItem(row, column, QTableWidgetItem(text))

    def _show_preview_error(self, text: str) -> None:
        self.corpus_info.setText(f"<b>Cannot use this corpus:</b> {text}")
        self.samples.setRowCount(0)

    # --- the request ----------------------------------------------------------------------------
    def request(self) -> TrainingRequest:
        """What to train; ValueError with a readable reason when a choice cannot work."""
        if self.d_model.value() % self.heads.value():
            raise ValueError(f"d_model ({self.d_model.value()}) must be a multiple of the number of heads "
                             f"({self.heads.value()})")
        model_options = dict(n_encoder_layers=self.encoder_layers.value(), n_decoder_layers=self.decoder_layers.value(),
                             d_model=self.d_model.value(), n_heads=self.heads.value(), d_ff=self.d_ff.value(),
                             dropout=self.dropout.value(), norm_placement=self.norm.currentText(),
                             positional_encoding=self.positions.currentText(),
                             tie_embeddings=self.joint_vocab.isChecked())
        training = TrainingOptions(epochs=self.epochs.value(), max_minutes=self.max_minutes.value() or None,
                                   max_steps=self.max_steps.value() or None, batch_size=self.batch_size.value(),
                                   warmup_steps=self.warmup.value(), label_smoothing=self.label_smoothing.value(),
                                   seed=self.seed.value())
        tokenizer = TokenizerOptions(vocab_size=self.vocab_size.value(), joint=self.joint_vocab.isChecked())
        return TrainingRequest(self.corpus_spec(), tokenizer, model_options, training, self.device.currentText())

    # --- settings -------------------------------------------------------------------------------
    def _fields(self) -> dict:
        return {name: widget for name, widget in vars(self).items()
                if isinstance(widget, (QSpinBox, QDoubleSpinBox, QComboBox, QCheckBox)) and name != "corpus"}

    def save_settings(self) -> None:
        if self.corpus.currentText() in BUILTIN_CORPORA:
            self.settings.setValue("train/corpus", self.corpus.currentText())
        for name, widget in self._fields().items():
            value = (widget.isChecked() if isinstance(widget, QCheckBox) else widget.currentText()
                     if isinstance(widget, QComboBox) else widget.value())
            self.settings.setValue(f"train/{name}", value)

    def _restore(self) -> None:
        corpus = self.settings.value("train/corpus")
        if corpus in BUILTIN_CORPORA:
            self.corpus.setCurrentText(corpus)
        for name, widget in self._fields().items():
            value = self.settings.value(f"train/{name}")
            if value is None:
                continue
            if isinstance(widget, QCheckBox):
                widget.setChecked(value in (True, "true"))
            elif isinstance(widget, QComboBox):
                if widget.findText(str(value)) >= 0:
                    widget.setCurrentText(str(value))
            else:
                widget.setValue(type(widget.value())(float(value)))
        if corpus is None:
            self.corpus_size.setValue(DEFAULT_SIZES[self.corpus.currentText()])
