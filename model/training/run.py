"""The one training path: a ``TrainingRequest`` in, a trained ``ModelBundle`` out.

``train(request, callbacks, control)`` resolves the device, prepares the corpus, tokenizers and model
(``pipeline.prepare``), trains (``Trainer``) and finishes the bundle (its settings and why it stopped in
the history, the weights on the CPU). The command line (``model/cli/train.py``) and the window's
training controller (``explorer/controllers/training.py``) are thin adapters: they build the request, listen through
``TrainingCallbacks`` (typed objects: ``Prepared``, ``Progress``, ``Validation``) and pause or cancel
through the ``TrainingControl``. Unless ``request.timeline`` turns it off, the run records its timeline
(model/training/recording.py): the trained bundle's ``recording``, written beside the model file when it is saved.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from model.data.corpora import CorpusSpec, Splits
from model.device import describe_device, resolve_device
from model.family import family_of
from model.io.checkpoint import ModelBundle
from model.kinds import StopReason
from model.training.pipeline import TokenizerOptions, prepare
from model.training.recording import Recorder, TimelineOptions, trainable_names
from model.training.trainer import Progress, Trainer, TrainingControl, TrainingOptions, TrainingResult, Validation


@dataclass
class TrainingRequest:
    """Everything a run needs: what ``transformer-explorer train`` and the Train tab collect."""

    corpus: CorpusSpec
    tokenizer: TokenizerOptions
    model_options: dict  # the family's config fields other than the vocabulary sizes (and a classifier's classes)
    training: TrainingOptions
    device: str = "auto"  # auto, cpu, cuda or cuda:N
    splits: Splits | None = None  # the corpus already read and split (a file's preset is sized from it)
    family: str = "transformer"  # the model family to train (model/nn/registry.py): transformer, rnn or classifier
    timeline: TimelineOptions = field(default_factory=TimelineOptions)  # snapshots to record (0: none) and their storage


@dataclass
class Prepared:
    """What was built before the first step: split sizes, the model's description, the device."""

    train: int
    valid: int
    test: int
    skipped_lines: int  # malformed lines of a user's file that were skipped
    model: str
    device: str


def _ignore(_value: object) -> None:
    return None


def _heard_by(first: Callable[[Any], None], then: Callable[[Any], None]) -> Callable[[Any], None]:
    """One callback that calls ``first``, then ``then`` (the recorder before the caller's own)."""

    def both(value: Any) -> None:
        first(value)
        then(value)

    return both


@dataclass
class TrainingCallbacks:
    """Who hears what, and when. Every callback runs on the training thread."""

    on_stage: Callable[[str], None] = _ignore  # "Training the tokenizer…": each stage of preparing, as it begins
    on_prepared: Callable[[Prepared], None] = _ignore
    on_progress: Callable[[Progress], None] = _ignore  # after every step
    on_validation: Callable[[Validation], None] = _ignore
    # Around preparing (building a corpus, tokenizers and a model): the window pauses the garbage collector here.
    preparing: Callable[[], AbstractContextManager] = field(default=nullcontext)


@dataclass
class TrainingOutcome:
    stopped: StopReason
    bundle: ModelBundle | None  # trained (on the CPU, ready to save); None when nothing usable was learned
    result: TrainingResult | None = None  # None when cancelled before the first step
    detail: str = ""  # why, when it diverged (the non-finite loss and its step)

    @property
    def why(self) -> str:
        return f"{self.stopped} ({self.detail})" if self.detail else str(self.stopped)

    @property
    def steps(self) -> int:
        return self.result.steps if self.result is not None else 0


def train(
    request: TrainingRequest, callbacks: TrainingCallbacks | None = None, control: TrainingControl | None = None
) -> TrainingOutcome:
    """Prepare and train; the outcome's bundle holds the trained model unless nothing usable was learned
    (no step taken, or NaN weights), which is never handed back. Raises a UserError for a bad request."""
    callbacks = callbacks or TrainingCallbacks()
    control = control or TrainingControl()
    request.training.validate()
    request.timeline.validate()
    device = resolve_device(request.device)
    with callbacks.preparing():
        bundle, splits = prepare(
            request.corpus,
            request.tokenizer,
            request.model_options,
            request.training.seed,
            splits=request.splits,
            report=callbacks.on_stage,
            family=request.family,
        )
        if control.cancelled:
            return TrainingOutcome(StopReason.CANCELLED, None)
        callbacks.on_prepared(
            Prepared(
                len(splits.train),
                len(splits.valid),
                len(splits.test),
                splits.skipped_lines,
                bundle.describe(),
                describe_device(device),
            )
        )
        callbacks.on_stage(f"Encoding {len(splits.train):,} training pairs…")
        recorder = Recorder(request.timeline, trainable_names(bundle.model)) if request.timeline.enabled else None
        trainer = Trainer(
            bundle.model,
            bundle.source_tokenizer,
            bundle.target_tokenizer,
            splits,
            request.training,
            device,
            _heard_by(recorder.on_progress, callbacks.on_progress) if recorder else callbacks.on_progress,
            _heard_by(recorder.on_validation, callbacks.on_validation) if recorder else callbacks.on_validation,
            control,
            bundle.history,
        )
        if recorder is not None:
            recorder.start(trainer.current_weights)
    callbacks.on_stage(f"Training on {describe_device(device)}: the first step…")
    result = trainer.run()
    bundle.training = request.training.to_dict()
    bundle.history["stopped"] = str(result.stopped)
    bundle.history["kept"] = kept_weights(result, request.training, family_of(bundle.model).quality_measure)
    bundle.model.to("cpu").eval()
    if recorder is not None and result.usable:
        bundle.recording = recorder.finish(bundle.history.get("kept_step"))
    return TrainingOutcome(result.stopped, bundle if result.usable else None, result, result.detail)


def kept_weights(result: TrainingResult, options: TrainingOptions, measure: str) -> str:
    """Which weights the model ended with, and why training ended, in words (the history's ``kept``): "the weights of
    step 500 (the best validation BLEU); stopped by the user at step 669"."""
    kept = result.history.get("kept_step")
    if kept is not None:
        what = f"the weights of step {kept} (the best validation {measure})"
    elif result.stopped is StopReason.DIVERGED:
        what = f"the weights of step {result.steps}, the last with a finite loss"
    else:
        what = f"the weights of step {result.steps}, the last" + (
            f" (averaged over about {options.average_steps} steps)" if options.average_steps else ""
        )
    why = "stopped by the user" if result.stopped is StopReason.CANCELLED else f"ended ({result.stopped})"
    return f"{what}; {why} at step {result.steps}"
