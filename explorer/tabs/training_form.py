"""The training settings form: corpus (with its size and sample pairs), tokenizer, model config,
training options and device. It builds a TrainingRequest and remembers the last choices.

Every corpus comes with a preset (model.training.presets): choosing a built-in corpus, or reading a file, fills the
form with it, so Start with no change trains for minutes, not hours. What the user changes is theirs: it
is remembered, marked in the preset line, and "Use the preset" puts the preset's values back.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.controllers.training import TrainingController
from explorer.settings_values import SettingsValues
from explorer.tabs.form_values import CORPUS_TIPS, SETTING_FIELDS, preset_value, restore_changed, save_changed, set_value
from explorer.tabs.model_group import ModelGroup, spin
from model.data.corpora import BUILTIN_CORPORA, CorpusSpec, Splits, generate_builtin
from model.device import available_devices
from model.errors import UserError
from model.training.pipeline import TokenizerOptions
from model.training.presets import NO_EPOCH_LIMIT, Preset, corpus_figures, family_preset, file_preset, preset_for
from model.training.recording import DEFAULT_SNAPSHOTS, TimelineOptions
from model.training.run import TrainingRequest
from model.training.trainer import TrainingOptions

TSV_CHOICE, MOSES_CHOICE = "TSV file…", "Moses pair…"
TAGGING_CHOICE, LABELS_CHOICE = "Tagging file (word/TAG)…", "Labelled sentences (text TAB label)…"
PREVIEW_COLUMNS = {"translation": ["Source", "Target"], "tagging": ["Words", "Tags"], "classification": ["Text", "Class"]}
FILE_TASKS = {TSV_CHOICE: "translation", MOSES_CHOICE: "translation", TAGGING_CHOICE: "tagging", LABELS_CHOICE: "classification"}


class TrainingForm(QWidget):
    corpus_error = Signal(str)
    settings_changed = Signal()  # any field, the corpus or the preset changed: the expected duration follows
    corpus_changed = Signal()  # another corpus was chosen: the last run's curves are not about it

    def __init__(self, training: TrainingController, settings: QSettings | SettingsValues) -> None:
        super().__init__()
        self.training, self.settings = training, SettingsValues.of(settings)
        self.corpus_paths: tuple[str, str | None] | None = None  # a chosen file (and Moses target)
        self.preset: Preset | None = None  # the corpus's preset for the chosen family
        self.base_preset: Preset | None = None  # the corpus's own preset
        self.corpus_task = "translation"  # what a chosen file holds
        self.changed: set[str] = set()  # fields the user set, kept when the preset changes
        self._applying = False
        self.corpus_figures: dict | None = None  # pairs and lengths of the chosen corpus, for the estimate
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

        layout.addWidget(self._corpus_box())

        row = QVBoxLayout()  # stacked: each form keeps the panel's full width
        self.model_group = ModelGroup()
        for name, box in self.model_group.fields().items():  # the group's boxes are this form's fields (presets, changes)
            setattr(self, name, box)
        self.vocab_size, self.joint_vocab = self.model_group.vocab_size, self.model_group.joint_vocab
        self.preset_fields = (*self.model_group.rows, *SETTING_FIELDS)  # what a preset sets
        self.model_group.family.activated.connect(self._on_family_chosen)
        row.addWidget(self.model_group)

        row.addWidget(self._training_box())
        layout.addLayout(row)

        self._restore()
        for name, widget in self._fields().items():
            signal = (
                widget.toggled
                if isinstance(widget, QCheckBox)
                else widget.currentTextChanged
                if isinstance(widget, QComboBox)
                else widget.valueChanged
            )
            signal.connect(lambda _value=None, name=name: self._on_field_edited(name))
        self.corpus.activated.connect(self._on_corpus_chosen)
        self.corpus.currentTextChanged.connect(self._on_corpus_changed)
        self.corpus_seed.valueChanged.connect(self._on_preview_requested)
        self.corpus_size.valueChanged.connect(self._on_preview_requested)
        training.corpus_read.connect(self._on_corpus_read)
        training.corpus_failed.connect(self._on_corpus_failed)
        self._on_preview_requested()

    def _corpus_box(self) -> QGroupBox:
        """The corpus: a built-in one (its size and seed) or a file, and a preview of its pairs."""
        corpus_box = QGroupBox("Corpus")
        corpus_form = QFormLayout(corpus_box)
        self.corpus = QComboBox()
        self.corpus.addItems([*BUILTIN_CORPORA, *FILE_TASKS])
        for index, name in enumerate(BUILTIN_CORPORA):
            self.corpus.setItemData(index, CORPUS_TIPS[name], 3)  # Qt.ItemDataRole.ToolTipRole
        self.corpus.setToolTip("A built-in corpus, or your own tab-separated file or Moses-style pair of files")
        self.corpus_size = spin(100, 1_000_000, 20000, "Pairs to generate for a built-in corpus", 1000)
        self.corpus_seed = spin(0, 2**31 - 1, 0, "Generation seed of a built-in corpus")
        self.corpus_info = QLabel()
        self.corpus_info.setWordWrap(True)
        self.samples = QTableWidget(0, 2)
        self.samples.setHorizontalHeaderLabels(["Source", "Target"])
        self.samples.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.samples.verticalHeader().setVisible(False)
        self.samples.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.samples.setMaximumHeight(150)
        self.samples.setToolTip("Some pairs of the corpus")
        corpus_form.addRow("Corpus", self.corpus)
        corpus_form.addRow("Pairs", self.corpus_size)
        corpus_form.addRow("Seed", self.corpus_seed)
        corpus_form.addRow(self.corpus_info)
        corpus_form.addRow(self.samples)
        return corpus_box

    def _training_box(self) -> QGroupBox:
        """The training options, under the preset line and its "Use the preset" button."""
        options_box = QGroupBox("Training")
        options_form = QFormLayout(options_box)
        self.preset_info = QLabel()
        self.preset_info.setWordWrap(True)
        self.preset_button = QPushButton("Use the preset")
        self.preset_button.setToolTip("Put back every value of this corpus's preset")
        self.preset_button.clicked.connect(self._on_preset_requested)
        self._make_training_boxes()
        options_form.addRow(self.preset_info)
        options_form.addRow(self.preset_button)
        for label, widget in (
            ("Time budget (min)", self.max_minutes),
            ("Epochs", self.epochs),
            ("Max steps", self.max_steps),
            ("Batch size", self.batch_size),
            ("Batch pieces", self.batch_tokens),
            ("Warm-up", self.warmup),
            ("Learning rate ×", self.lr_factor),
            ("Schedule", self.lr_decay),
            ("Averaging (steps)", self.average_steps),
            ("Validate every", self.valid_every),
            ("Early stop after", self.patience),
            ("", self.keep_best),
            ("Label smoothing", self.label_smoothing),
            ("Seed", self.seed),
            ("Timeline", self.timeline),
            ("Device", self.device),
        ):
            options_form.addRow(label, widget)
        return options_box

    def _make_training_boxes(self) -> None:
        """The Training group's boxes, each with its range, its "none" text and its tooltip."""
        self.max_minutes = spin(
            0.0,
            10000.0,
            2.0,
            "Time budget in minutes (0 = none): training stops at the first step past it, validates and keeps the best weights",
            1.0,
            1,
        )
        self.epochs = spin(
            0, NO_EPOCH_LIMIT, 0, "Passes over the training pairs (0 = no limit: the time budget or max steps end the run)"
        )
        self.epochs.setSpecialValueText("no limit")
        self.max_steps = spin(0, 10_000_000, 0, "Stop after this many steps (0 = no limit)", 100)
        self.max_steps.setSpecialValueText("no limit")
        self.batch_size = spin(1, 4096, 64, "Sentence pairs per step (a cap when batching by pieces)", 8)
        self.batch_tokens = spin(
            0, 1_000_000, 0, "Pieces per step (0 = batch by pairs): short pairs come in large batches, long ones in small", 500
        )
        self.batch_tokens.setSpecialValueText("by pairs")
        self.warmup = spin(1, 100000, 400, "Warm-up steps of the learning-rate schedule", 100)
        self.lr_factor = spin(0.01, 10.0, 1.0, "Scales the learning rate (the paper's peak d_model^-0.5 x warmup^-0.5)", 0.1, 2)
        self.lr_decay = QComboBox()
        self.lr_decay.addItems(["linear", "rsqrt"])
        self.lr_decay.setToolTip("After warm-up: linear to 0 at the end of the budget, or 1/sqrt(step) as in the paper")
        self.average_steps = spin(
            0, 100000, 400, "Validate and keep an average of the weights over about this many steps (0 = none)", 100
        )
        self.valid_every = spin(0, 1_000_000, 0, "Steps between validations (0 = after each epoch)", 100)
        self.valid_every.setSpecialValueText("each epoch")
        self.patience = spin(0, 1000, 0, "Stop after this many validations without a better BLEU (0 = never)")
        self.patience.setSpecialValueText("never")
        self.keep_best = QCheckBox("Keep the best validated weights")
        self.keep_best.setChecked(True)
        self.keep_best.setToolTip("End with the weights of the validation with the best BLEU, not the last step's")
        self.label_smoothing = spin(0.0, 0.9, 0.1, "Label smoothing of the loss (the paper: 0.1)", 0.05, 2)
        self.seed = spin(0, 2**31 - 1, 0, "Seed of initialisation, batch order and dropout")
        self.timeline = spin(
            0, 1000, DEFAULT_SNAPSHOTS, "Snapshots of the weights kept while training, to watch it learn (0 = none, else 2 or more)"
        )
        self.timeline.setSpecialValueText("none")
        self.device = QComboBox()
        self.device.addItems(available_devices())
        self.device.setCurrentIndex(self.device.count() - 1)
        self.device.setToolTip("Train on the CPU or a CUDA GPU (bf16 autocast there)")

    # --- corpus ---------------------------------------------------------------------------------
    def _on_corpus_chosen(self, _index=None) -> None:
        """The user picked an entry: a file entry asks for the file(s). Built-in corpora are previewed by
        _on_corpus_changed, which also follows changes made from code."""
        choice = self.corpus.currentText()
        if choice not in FILE_TASKS:
            return
        folder = str(self.settings.folder("train/corpus_folder"))
        source, _ = QFileDialog.getOpenFileName(
            self, "Source side of a Moses pair" if choice == MOSES_CHOICE else choice.rstrip("…"), folder
        )
        target = None
        if source and choice == MOSES_CHOICE:
            target, _ = QFileDialog.getOpenFileName(self, "Target side of the Moses pair", str(Path(source).parent))
        if not source or (choice == MOSES_CHOICE and not target):
            self.corpus.setCurrentIndex(0)  # back to a built-in corpus, previewed through _on_corpus_changed
        else:
            self.settings.setValue("train/corpus_folder", str(Path(source).parent))
            self.set_corpus_file(source, target, FILE_TASKS[choice])

    def _on_corpus_changed(self, choice: str) -> None:
        self.corpus_changed.emit()
        if choice in BUILTIN_CORPORA:
            self.apply_preset(preset_for(choice))
            self._on_preview_requested()

    def _on_family_chosen(self, _index=None) -> None:
        """Another family for the same corpus: its preset's model settings (the corpus's data and budget stay)."""
        if self.base_preset is not None:
            self.apply_preset(self.base_preset)

    # --- presets --------------------------------------------------------------------------------
    def apply_preset(self, preset: Preset, keep_changes: bool = True) -> None:
        """Fill the form with ``preset`` (for the chosen family); fields the user changed keep their values unless
        ``keep_changes`` is False ("Use the preset")."""
        self.base_preset = preset
        self.model_group.offer_families(preset.family, self.task())
        preset = family_preset(preset, self.model_group.current_family())
        self.preset = preset
        if not keep_changes:
            self.changed.clear()
        values = {name: preset_value(preset, name) for name in self.preset_fields}
        if preset.corpus_size:
            values["corpus_size"] = preset.corpus_size
        self._applying = True
        try:
            for name, value in values.items():
                if name not in self.changed and value is not None:
                    set_value(getattr(self, name), value)
        finally:
            self._applying = False
        self._show_preset_info()
        self.settings_changed.emit()

    def _on_preset_requested(self) -> None:
        if self.preset is not None:
            self.apply_preset(self.preset, keep_changes=False)

    def _on_field_edited(self, name: str) -> None:
        if not self._applying:
            self.changed.add(name)
            self._show_preset_info()
        self.settings_changed.emit()

    def _show_preset_info(self) -> None:
        if self.preset is None:
            self.preset_info.setText("")
            return
        what = "this file" if self.preset.name == "file" else self.preset.name
        text = f"<b>Preset</b> ({what}): {self.preset.why}."
        mine = sorted(name for name in self.changed if name in self.preset_fields or name == "corpus_size")
        if mine:
            text += " Changed by you: " + ", ".join(name.replace("_", " ") for name in mine) + "."
        self.preset_info.setText(text)
        self.preset_button.setEnabled(bool(mine))

    def set_corpus_file(self, source: str, target: str | None = None, task: str = "translation") -> None:
        self.corpus_paths = (source, target)
        self.corpus_task = task
        choice = MOSES_CHOICE if target else next(c for c, t in FILE_TASKS.items() if t == task and c != MOSES_CHOICE)
        self.corpus.setCurrentText(choice)
        self._on_preview_requested()

    def corpus_spec(self) -> CorpusSpec:
        choice = self.corpus.currentText()
        if choice in BUILTIN_CORPORA:
            return CorpusSpec(choice, size=self.corpus_size.value(), seed=self.corpus_seed.value())
        if not self.corpus_paths:
            raise ValueError("choose a corpus file first")
        return CorpusSpec(self.corpus_paths[0], target_path=self.corpus_paths[1], task=self.corpus_task)

    def task(self) -> str:
        """What the chosen corpus is for (translation, tagging, classification)."""
        choice = self.corpus.currentText()
        return CorpusSpec(choice).task if choice in BUILTIN_CORPORA else self.corpus_task

    def _on_preview_requested(self, _value=None) -> None:
        builtin = self.corpus.currentText() in BUILTIN_CORPORA
        if builtin:
            self.training.drop_corpus_reading()  # any file still being read is no longer wanted
        self.corpus_size.setEnabled(builtin)
        self.corpus_seed.setEnabled(builtin)
        try:
            spec = self.corpus_spec()
        except UserError as error:
            self._show_preview_error(str(error))
            return
        if builtin:  # a handful generated at once: the full corpus is generated when training starts
            sample = generate_builtin(spec.name, 200, spec.seed)
            self.corpus_figures = dict(corpus_figures(sample), pairs=int((spec.size or 0) * 0.9))  # lengths from a sample
            self._show_preview(
                generate_builtin(spec.name, 6, spec.seed),
                f"{spec.size:,} pairs, generated from "
                f"seed {spec.seed}: 90% training, 5% validation, 5% test. {CORPUS_TIPS[spec.name]}.",
            )
            return
        self.corpus_info.setText("Reading the corpus…")
        self.training.read_corpus(spec)  # a later choice supersedes this reading

    def _on_corpus_read(self, spec: CorpusSpec, splits: Splits) -> None:
        total = len(splits.train) + len(splits.valid) + len(splits.test)
        skipped = f"; {splits.skipped_lines} malformed lines skipped" if splits.skipped_lines else ""
        self.corpus_figures = corpus_figures(splits.train)
        self.apply_preset(file_preset(splits, spec.task))
        self._show_preview(
            splits.train[:6],
            f"{total:,} pairs: {len(splits.train):,} training, "
            f"{len(splits.valid):,} validation, {len(splits.test):,} test{skipped}.",
        )

    def _on_corpus_failed(self, text: str) -> None:
        self._show_preview_error(text)
        self.corpus_error.emit(text)

    def _show_preview(self, pairs, info: str) -> None:
        self.corpus_info.setText(info)
        self.samples.setHorizontalHeaderLabels(PREVIEW_COLUMNS[self.task()])
        self.samples.setRowCount(len(pairs))
        for row, pair in enumerate(pairs):
            for column, text in enumerate((pair.source, pair.target)):
                self.samples.setItem(row, column, QTableWidgetItem(text))

    def _show_preview_error(self, text: str) -> None:
        self.corpus_info.setText(f"<b>Cannot use this corpus:</b> {text}")
        self.samples.setRowCount(0)

    # --- the request ----------------------------------------------------------------------------
    def _model_and_training(self) -> tuple[dict, TrainingOptions]:
        model_options = self.model_group.options()
        if self.preset is not None and "max_len" in self.preset.model:
            model_options["max_len"] = self.preset.model["max_len"]
        return model_options, self.training_options()

    def training_options(self) -> TrainingOptions:
        """The Training group as TrainingOptions (0 in a box that allows it means "none")."""
        return TrainingOptions(
            epochs=self.epochs.value() or NO_EPOCH_LIMIT,
            max_minutes=self.max_minutes.value() or None,
            max_steps=self.max_steps.value() or None,
            batch_size=self.batch_size.value(),
            batch_tokens=self.batch_tokens.value() or None,
            warmup_steps=self.warmup.value(),
            lr_factor=self.lr_factor.value(),
            lr_decay=self.lr_decay.currentText(),
            average_steps=self.average_steps.value(),
            valid_every=self.valid_every.value() or None,
            patience=self.patience.value() or None,
            keep_best=self.keep_best.isChecked(),
            label_smoothing=self.label_smoothing.value(),
            seed=self.seed.value(),
        )

    def request(self) -> TrainingRequest:
        """What to train; a UserError with a readable reason when a choice cannot work."""
        model_options, training = self._model_and_training()
        tokenizer = TokenizerOptions(vocab_size=self.vocab_size.value(), joint=self.joint_vocab.isChecked())
        family = self.model_group.current_family()
        timeline = TimelineOptions(self.timeline.value())
        timeline.validate()  # 1 snapshot: a reason, not a run
        device = self.device.currentText()
        return TrainingRequest(self.corpus_spec(), tokenizer, model_options, training, device, None, family, timeline)

    # --- settings -------------------------------------------------------------------------------
    def _fields(self) -> dict:
        return {
            name: widget
            for name, widget in vars(self).items()
            if isinstance(widget, (QSpinBox, QDoubleSpinBox, QComboBox, QCheckBox)) and name != "corpus"
        }

    def save_settings(self) -> None:
        """The corpus, and the fields the user changed from its preset (the rest follows the preset)."""
        if self.corpus.currentText() in BUILTIN_CORPORA:
            self.settings.setValue("train/corpus", self.corpus.currentText())
        save_changed(self.settings, self._fields(), self.changed)

    def _restore(self) -> None:
        corpus = self.settings.choice("train/corpus", BUILTIN_CORPORA[0], BUILTIN_CORPORA)
        self.corpus.setCurrentText(corpus)
        self.apply_preset(preset_for(corpus))
        self.changed |= restore_changed(self.settings, self._fields())
        self._show_preset_info()
