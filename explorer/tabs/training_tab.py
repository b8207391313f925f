"""The Train tab: the settings form, Start / Pause / Resume / Stop & keep / Cancel, a progress bar
with ETA and tokens/s, live curves and the sample translations of each validation.

Training runs in the training controller's job (explorer/controllers/training.py); this tab sends it the
user's requests and shows its events (``_on_*``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.controllers.explore import ExploreController
from explorer.controllers.training import TrainingController
from explorer.settings_values import SettingsValues
from explorer.tabs.training_form import TrainingForm
from explorer.widgets.progress_bar import show_busy, show_counted
from explorer.widgets.status_line import StatusLine
from explorer.widgets.training_curves import TrainingCurves
from model.errors import UserError
from model.kinds import StopReason
from model.training.evaluation import same_translation
from model.training.presets import expected_duration
from model.training.run import Prepared, TrainingOutcome
from model.training.trainer import Progress, Validation, format_duration

PROGRESS_INTERVAL_MS = 200  # the progress line's and bar's refresh while training (the curves: once a second)


def _cores(progress: Progress) -> str:
    """ " on 1 of 2 cores (others are busy)" when training gave cores to other programs."""
    threads, cores = progress.cpu_threads, os.cpu_count() or 1
    return f" on {threads} of {cores} cores (other programs are busy)" if 0 < threads < cores else ""


def status_label(text: str = "") -> QLabel:
    """A label for a status line that can grow long (progress, a corpus path, the model's description): it
    wraps, and its width is what the layout gives it, so a long text never makes the window wider."""
    label = QLabel(text)
    label.setWordWrap(True)
    policy = label.sizePolicy()
    policy.setHorizontalPolicy(QSizePolicy.Policy.Ignored)  # keeps the height-for-width of a wrapping label
    label.setSizePolicy(policy)
    label.setMinimumWidth(1)
    return label


class TrainingTab(QWidget):
    trained = Signal(object)  # the ModelBundle that training produced
    failed = Signal(str)

    def __init__(self, explore: ExploreController, training: TrainingController, settings: QSettings | SettingsValues) -> None:
        super().__init__()
        self.explore, self.training, self.settings = explore, training, SettingsValues.of(settings)
        # Asked before a run starts (the window asks Save / Discard / Cancel when an unsaved trained model would be
        # replaced by this run's): False keeps things as they are.
        self.confirm_start: Callable[[], bool] = lambda: True
        self.last_progress: Progress | None = None
        self.validations: list[Validation] = []

        self.form = TrainingForm(training, self.settings)
        self.form.corpus_error.connect(self.failed)
        self.form.corpus_changed.connect(self._on_corpus_switched)
        form_scroll = QScrollArea()
        form_scroll.setWidget(self.form)
        form_scroll.setWidgetResizable(True)
        form_scroll.setMinimumWidth(440)

        self.start_button = self._button("Start", "Start training with these settings (Ctrl+Return)", self._on_start)
        self.pause_button = self._button("Pause", "Pause after the current step (Ctrl+P)", self._on_pause)
        self.resume_button = self._button("Resume", "Go on training (Ctrl+P)", self._on_resume)
        self.keep_button = self._button(
            "Stop && keep", "Stop now and make what was learned the active model", lambda: self._on_stop(keep=True)
        )
        self.cancel_button = self._button(
            "Cancel", "Stop now and discard this training (Escape)", lambda: self._on_stop(keep=False)
        )
        buttons = QHBoxLayout()
        for button in (self.start_button, self.pause_button, self.resume_button, self.keep_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setFormat("%p%")
        self.progress_bar.setToolTip("Share of the planned steps done")
        self.expected_label = status_label()
        self.expected_label.setToolTip("How long Start will train with these settings, measured on this machine")
        self._step_seconds: dict[tuple, float | None] = {}  # measured seconds a step, by model shape and batch
        self._expected_timer = QTimer(self)
        self._expected_timer.setSingleShot(True)
        self._expected_timer.setInterval(300)
        self._expected_timer.timeout.connect(self._on_expected_requested)
        self.form.settings_changed.connect(self._expected_timer.start)
        # The progress line and bar follow the steps at most every PROGRESS_INTERVAL_MS: setting a label's text lays it
        # out while holding the interpreter lock, which the training thread then waits for at every step.
        self._progress_shown_at = float("-inf")
        self._progress_timer = QTimer(self)
        self._progress_timer.setSingleShot(True)
        self._progress_timer.setInterval(PROGRESS_INTERVAL_MS)
        self._progress_timer.timeout.connect(self._show_progress)
        self.progress_label = StatusLine("Choose a corpus and settings, then Start.")
        monitor = self._monitor(buttons)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(form_scroll)
        self.splitter.addWidget(monitor)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([460, 900])
        layout = QVBoxLayout(self)
        layout.addWidget(self.splitter)
        self.settings.restore("train/splitter", self.splitter.restoreState)
        self.settings.restore("train/monitor_splitter", self.monitor_splitter.restoreState)

        self._expected_timer.start()
        QShortcut(QKeySequence("Ctrl+Return"), self, self._on_start)
        QShortcut(QKeySequence("Ctrl+P"), self, self._on_toggle_pause, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        QShortcut(
            QKeySequence(Qt.Key.Key_Escape),
            self,
            lambda: self._on_stop(keep=False),
            context=Qt.ShortcutContext.WidgetWithChildrenShortcut,
        )
        self._listen(training)
        self._update_buttons()

    def _listen(self, training: TrainingController) -> None:
        """The training controller's events, shown here."""
        training.status.connect(self._on_status)
        training.prepared.connect(self._on_prepared)
        training.progress.connect(self._on_progress)
        training.validation.connect(self._on_validation)
        training.finished.connect(self._on_finished)
        training.failed.connect(self._on_failed)
        training.running_changed.connect(self._on_running_changed)
        training.step_measured.connect(self._on_step_measured)

    def _monitor(self, buttons: QHBoxLayout) -> QWidget:
        """The right-hand side: the buttons, the expected duration, progress, the curves and the samples."""
        self.curves = TrainingCurves()
        self.samples = QTableWidget(0, 3)
        self.samples.setHorizontalHeaderLabels(["Source", "Reference", "Model's translation"])
        self.samples.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.samples.verticalHeader().setVisible(False)
        self.samples.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.samples.setToolTip("Sample translations of the validation pairs after the latest epoch (✓ = exact)")
        self.samples_label = status_label("Sample translations appear at each validation.")

        monitor = QWidget()
        monitor_layout = QVBoxLayout(monitor)
        monitor_layout.addLayout(buttons)
        monitor_layout.addWidget(self.expected_label)
        monitor_layout.addWidget(self.progress_bar)
        monitor_layout.addWidget(self.progress_label)
        self.monitor_splitter = QSplitter(Qt.Orientation.Vertical)
        self.monitor_splitter.addWidget(self.curves)
        samples_box = QWidget()
        samples_layout = QVBoxLayout(samples_box)
        samples_layout.setContentsMargins(0, 0, 0, 0)
        samples_layout.addWidget(self.samples_label)
        samples_layout.addWidget(self.samples)
        self.monitor_splitter.addWidget(samples_box)
        self.monitor_splitter.setSizes([500, 200])
        monitor_layout.addWidget(self.monitor_splitter, 1)

        return monitor

    def _button(self, text, tip, slot) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        return button

    # --- state ----------------------------------------------------------------------------------
    def is_training(self) -> bool:
        return self.training.running

    def is_paused(self) -> bool:
        return self.training.paused

    def _update_buttons(self) -> None:
        running = self.is_training()
        self.start_button.setEnabled(not running)
        self.pause_button.setEnabled(running and not self.is_paused())
        self.resume_button.setEnabled(running and self.is_paused())
        self.keep_button.setEnabled(running)
        self.cancel_button.setEnabled(running)
        self.form.setEnabled(not running)

    # --- expected duration ----------------------------------------------------------------------
    def _current_probe_key(self) -> tuple | None:
        """What a step's time depends on: the model's shape, the vocabulary and the batch; None if unknown."""
        form, figures = self.form, self.form.corpus_figures
        if not figures:
            return None
        try:
            model_options, training = form._model_and_training()
        except UserError:
            return None
        pieces = max(2, round(figures["mean_words"] * 1.3) + 1)
        pairs = (
            training.batch_size if not training.batch_tokens else max(1, min(training.batch_size, training.batch_tokens // pieces))
        )
        shape = tuple(sorted((k, v) for k, v in model_options.items() if k != "dropout"))
        return shape, form.vocab_size.value(), pairs, pieces, form.model_group.current_family()

    def _on_expected_requested(self) -> None:
        try:
            training = self.form.training_options()
        except UserError as error:
            self.expected_label.setText(str(error))
            return
        key = self._current_probe_key()
        seconds = self._step_seconds.get(key) if key is not None else None
        pairs = (self.form.corpus_figures or {}).get("pairs", 0)
        self.expected_label.setText(expected_duration(training, pairs, seconds))
        if key is None or key in self._step_seconds or self.is_training():
            return
        shape, vocab, batch_pairs, pieces, family = key
        self.training.measure_step(key, dict(shape), vocab, batch_pairs, pieces, family)

    def _on_step_measured(self, key: tuple, seconds: float | None) -> None:
        """A step timed (None: it could not be; the line keeps what it can say without it)."""
        if seconds is None:
            return
        self._step_seconds[key] = seconds
        self._on_expected_requested()

    # --- controls -------------------------------------------------------------------------------
    def _on_start(self) -> None:
        if self.is_training():
            return
        try:
            request = self.form.request()
        except UserError as error:
            self.failed.emit(str(error))
            return
        if not self.confirm_start():
            return
        self.form.save_settings()
        self.curves.clear_curves()
        self.samples.setRowCount(0)
        self.samples.setHorizontalHeaderLabels(["Source", "Reference", "Model's translation"])  # a classifier's differ
        self.validations.clear()
        self.last_progress = None
        show_busy(self.progress_bar)  # until the first step: the corpus and tokenizer come first
        self.progress_bar.setFormat("preparing…")
        self.training.start(request)

    def _on_corpus_switched(self) -> None:
        """Another corpus: the last run's curves and samples were about the one before, so they go."""
        if self.is_training():
            return
        self.curves.clear_curves()
        self.samples.setRowCount(0)
        self.validations.clear()

    def _on_pause(self) -> None:
        if self.is_training():
            self.training.pause()
            self.progress_label.setText(self.progress_label.text() + " — paused")
            self._update_buttons()

    def _on_resume(self) -> None:
        if self.is_training():
            self.training.resume()
            self._update_buttons()

    def _on_toggle_pause(self) -> None:
        (self._on_resume if self.is_paused() else self._on_pause)()

    def _on_stop(self, keep: bool) -> None:
        if self.is_training():
            self.training.stop(keep)
            self.progress_label.setText("Stopping after the current step…")

    def _on_running_changed(self, _running: bool) -> None:
        self._update_buttons()

    # --- worker signals -------------------------------------------------------------------------
    def _on_status(self, text: str) -> None:
        self.progress_label.setText(text)

    def _on_prepared(self, info: Prepared) -> None:
        skipped = f", {info.skipped_lines} malformed lines skipped" if info.skipped_lines else ""
        self.samples_label.setText(
            f"{info.train:,} training / {info.valid:,} validation / {info.test:,} test pairs{skipped}. Model: {info.model}."
        )

    def _on_progress(self, progress: Progress) -> None:
        """Every step: the curves' point at once, the progress line and bar when PROGRESS_INTERVAL_MS has passed."""
        self.last_progress = progress
        self.curves.add_progress(progress)
        if time.monotonic() - self._progress_shown_at >= PROGRESS_INTERVAL_MS / 1000:
            self._show_progress()
        elif not self._progress_timer.isActive():
            self._progress_timer.start()  # the last step's figures, once the interval is over

    def _show_progress(self) -> None:
        progress = self.last_progress
        if progress is None:
            return
        self._progress_shown_at = time.monotonic()
        show_counted(self.progress_bar, int(1000 * progress.fraction), 1000)
        self.progress_bar.setFormat(f"%p% — ETA {format_duration(progress.eta_seconds)}")
        paused = " — paused" if self.is_paused() else ""
        self.progress_label.setText(
            f"Epoch {progress.epoch} · step {progress.step:,} · loss {progress.train_loss:.3f} · "
            f"token accuracy {progress.token_accuracy:.3f} · lr {progress.learning_rate:.2e} · "
            f"{progress.tokens_per_second:,.0f} tokens/s{_cores(progress)} · "
            f"{format_duration(progress.elapsed_seconds)} elapsed, "
            f"ETA {format_duration(progress.eta_seconds)}{paused}"
        )

    def _on_validation(self, validation: Validation) -> None:
        if validation.scores.is_labelling and not self.validations:  # a classifier: its samples are labels
            self.samples.setHorizontalHeaderLabels(["Text", "Gold labels", "The model's labels"])
            self.samples.setToolTip("Sample predictions on validation sentences (✓ = every label right)")
        self.validations.append(validation)
        self.curves.add_validation(validation)
        scores = validation.scores
        self.samples_label.setText(
            f"Validation at step {validation.step:,} (epoch {validation.epoch}): {scores.summary()}"
            + (" — the best so far: these weights are kept" if validation.best else "")
        )
        samples = scores.samples
        self.samples.setRowCount(len(samples))
        for row, (source, reference, hypothesis) in enumerate(samples):
            mark = "✓ " if same_translation(hypothesis, reference) else "✗ "
            for column, text in enumerate((source, reference, mark + hypothesis)):
                self.samples.setItem(row, column, QTableWidgetItem(text))

    def _on_finished(self, outcome: TrainingOutcome) -> None:
        self._progress_timer.stop()  # the outcome's line, not a step's shown late over it
        show_counted(self.progress_bar, max(self.progress_bar.value(), 0), 1000)
        steps = f"{self.last_progress.step:,} steps" if self.last_progress else "no steps"
        bundle, cancelled = outcome.bundle, outcome.stopped is StopReason.CANCELLED
        if bundle is None:
            self.progress_label.setText(f"Training {outcome.why} after {steps}; nothing was kept.")
            return
        show_counted(self.progress_bar, 1000 if not cancelled else self.progress_bar.value(), 1000)
        self.progress_bar.setFormat("%p%")
        how = "stopped" if cancelled else outcome.why
        kept = str(bundle.history.get("kept") or "")  # which weights, as the saved history says (model/training/run.py)
        self.progress_label.setText(
            f"Training {how} after {steps}{f'. Kept {kept}' if kept else ''}. The model is now active in Explore; "
            "File ▸ Save model as… (Ctrl+Shift+S) keeps it."
        )
        self.trained.emit(bundle)

    def _on_failed(self, text: str) -> None:
        self._progress_timer.stop()
        show_counted(self.progress_bar, max(self.progress_bar.value(), 0), 1000)
        self.progress_bar.setFormat("%p%")
        self.progress_label.setText(f"Training failed: {text}")
        self.failed.emit(text)

    def save_settings(self) -> None:
        self.form.save_settings()
        self.settings.setValue("train/splitter", self.splitter.saveState())
        self.settings.setValue("train/monitor_splitter", self.monitor_splitter.saveState())
