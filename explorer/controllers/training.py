"""Training from the window, without Qt: the core's one training path (model.training.run.train) in a job of the
runner's "training" channel, its callbacks delivered as events on the window's thread; and the Train form's
background work: reading a corpus file for its preview, and timing a step for the expected duration.

Reports carry the core's typed objects (plain values and numpy copies), never live tensors the window could touch
while the job still uses them. Training checks its ``TrainingControl`` before every step; Pause, Resume and
Stop (keep or discard) set it, and closing the window cancels the job's token, which sets it too.
"""

from __future__ import annotations

from typing import Any

from psygnal import Signal

from explorer.controllers.runner import Job, Runner
from explorer.runtime import collector_paused, for_training, thaw
from model.data.corpora import CorpusSpec, load_corpus
from model.kinds import StopReason
from model.training.presets import measure_step_seconds
from model.training.run import TrainingCallbacks, TrainingOutcome, TrainingRequest, train
from model.training.trainer import TrainingControl

TRAINING, CORPUS, STEP_PROBE = "training", "corpus-preview", "step-probe"  # the runner's channels


class TrainingController:
    """Events: ``status(text)`` (what it is doing now: "Training the tokenizer…"), ``prepared(Prepared)``,
    ``progress(Progress)`` after every step, ``validation(Validation)``, ``finished(TrainingOutcome)`` (its bundle
    None when nothing is kept), ``failed(text)``, ``running_changed(bool)``; for the form, ``corpus_read(spec, splits)``,
    ``corpus_failed(text)`` and ``step_measured(key, seconds)``."""

    status = Signal(str)
    prepared = Signal(object)
    progress = Signal(object)
    validation = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    running_changed = Signal(bool)
    corpus_read = Signal(object, object)
    corpus_failed = Signal(str)
    step_measured = Signal(tuple, object)

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.control: TrainingControl | None = None  # the run's, while one runs
        self.keep_on_cancel = True

    # --- training -------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.runner.is_running(TRAINING)

    @property
    def paused(self) -> bool:
        return self.running and self.control is not None and self.control.paused

    def start(self, request: TrainingRequest) -> bool:
        """Train ``request`` in a job; False when a run is under way already."""
        if self.running:
            return False
        control = self.control = TrainingControl()
        self.keep_on_cancel = True
        self.runner.submit(
            TRAINING,
            lambda job: self._train(job, request, control),
            on_done=self._on_done,
            on_error=self.failed.emit,
            on_end=lambda: self.running_changed.emit(False),
            policy=for_training,  # every core for this thread's team (the others run torch on one)
        )
        self.running_changed.emit(True)
        return True

    def pause(self) -> None:
        if self.running and self.control is not None:
            self.control.pause()

    def resume(self) -> None:
        if self.running and self.control is not None:
            self.control.resume()

    def stop(self, keep: bool) -> None:
        """Stop within one step: ``keep`` what was learned (it becomes the model), or discard it."""
        if self.running and self.control is not None:
            self.keep_on_cancel = keep
            self.control.cancel()

    def _train(self, job: Job, request: TrainingRequest, control: TrainingControl) -> TrainingOutcome:
        """In the job's thread: the core's training, its callbacks delivered as this controller's events."""
        job.token.on_cancel(control.cancel)  # the window closing stops training within one step
        callbacks = TrainingCallbacks(
            on_stage=lambda text: job.deliver(self.status.emit, text),
            on_prepared=lambda prepared: job.deliver(self.prepared.emit, prepared),
            on_progress=lambda progress: job.deliver(self.progress.emit, progress),
            on_validation=lambda validation: job.deliver(self.validation.emit, validation),
            preparing=collector_paused,
        )
        return train(request, callbacks, control)

    def _on_done(self, outcome: TrainingOutcome) -> None:
        thaw()  # the run's corpus and batches, frozen while it trained, may be collected now
        if outcome.stopped is StopReason.CANCELLED and not self.keep_on_cancel:
            outcome.bundle = None
        self.finished.emit(outcome)

    # --- the form's background work -------------------------------------------------------------
    def read_corpus(self, spec: CorpusSpec) -> None:
        """Read a corpus file for its preview; a newer reading supersedes this one (its result is dropped)."""
        self.runner.submit(
            CORPUS,
            lambda job: load_corpus(spec),
            on_done=lambda splits: self.corpus_read.emit(spec, splits),
            on_error=self.corpus_failed.emit,
            joinable=False,  # a file read that never ends never holds the window's closing
        )

    def drop_corpus_reading(self) -> None:
        """A built-in corpus was chosen: a file still being read is no longer wanted."""
        self.runner.cancel(CORPUS, drop=True)

    def measure_step(self, key: tuple, model_options: dict[str, Any], vocab: int, pairs: int, pieces: int, family: str) -> bool:
        """Time a training step of this shape in a job (``step_measured(key, seconds)``); False when one is timed now."""
        if self.runner.is_running(STEP_PROBE):
            return False
        self.runner.submit(
            STEP_PROBE,
            lambda job: measure_step_seconds(model_options, vocab, pairs, pieces, family=family),
            on_done=lambda seconds: self.step_measured.emit(key, seconds),
            on_error=lambda _text: self.step_measured.emit(key, None),  # the line keeps what it can say without it
        )
        return True
