"""The paper's training recipe, without Qt: Adam(0.9, 0.98, 1e-9), warm-up then 1/sqrt(step) learning
rate, label smoothing, length-bucketed batches and gradient clipping.

A Trainer reports through callbacks (``on_progress`` every step, ``on_validation`` every epoch) and
obeys a TrainingControl that can pause, resume and cancel it between steps; a time budget ends it
cleanly at a step boundary. The GUI runs it in a worker thread; the command line runs it directly.

A step whose loss is not finite (NaN or infinite) is not taken: training stops there ("diverged") and
the model keeps the weights of the last step taken, so a diverging run never ends with NaN weights.
"""

from __future__ import annotations

import math
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from model.data.batching import collate, length_batches
from model.data.labelling import NO_LABEL
from model.errors import UserError
from model.family import family_of
from model.kinds import StopReason
from model.runtime import CoreFollower
from model.training.evaluation import Interrupted, Scores, score
from model.training.step import encode_examples, make_optimizer, training_step, weights_are_finite

LR_DECAYS = ("rsqrt", "linear")
VALID_TEACHER_FORCED = 2000  # validation pairs scored teacher-forced (loss, token accuracy) at most


class TrainingOptionsError(UserError):
    """A training setting that cannot train (NaN, infinite, out of range); the message names it."""


@dataclass
class TrainingOptions:
    epochs: int = 10  # passes over the training split (the time budget may end training sooner)
    max_minutes: float | None = None  # time budget; training stops at the first step boundary past it
    batch_size: int = 64  # sentence pairs per batch (batches hold pairs of similar length); a cap with batch_tokens
    batch_tokens: int | None = None  # pieces per batch instead (short pairs in large batches, long ones in small)
    warmup_steps: int = 400  # linear warm-up to the paper's peak d_model^-0.5 * warmup^-0.5 (times lr_factor)
    lr_factor: float = 1.0  # scales the learning rate of either schedule
    lr_decay: str = "rsqrt"  # after warm-up: "rsqrt" (the paper: 1/sqrt(step)) or "linear" (to 0 at the plan's end)
    label_smoothing: float = 0.1
    clip_norm: float = 1.0  # gradient-norm clipping (0 disables)
    seed: int = 0
    max_steps: int | None = None  # stop after this many optimizer steps (quick experiments, tests)
    valid_decode_limit: int = 200  # validation pairs decoded for exact match and BLEU at each validation
    valid_every: int | None = None  # steps between validations (None: after every epoch)
    patience: int | None = None  # stop early after this many validations without a better BLEU (None: never)
    keep_best: bool = True  # end with the weights of the validation with the best BLEU, not the last step's
    average_steps: int = 0  # validate and keep an exponential average of the weights over ~this many steps (0: off)
    n_samples: int = 3  # sample translations reported at each validation

    def to_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> None:
        """Raise a TrainingOptionsError, naming the field, for settings that cannot train (NaN, infinite, out of range)."""
        for name in ("lr_factor", "label_smoothing", "clip_norm", "max_minutes"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise TrainingOptionsError(f"{name} must be a finite number, got {value}")
        for name in ("epochs", "batch_size", "lr_factor", "max_steps", "max_minutes", "batch_tokens", "valid_every", "patience"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise TrainingOptionsError(f"{name} must be positive, got {value}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise TrainingOptionsError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.clip_norm < 0:
            raise TrainingOptionsError(f"clip_norm must be 0 (off) or positive, got {self.clip_norm}")
        if self.average_steps < 0:
            raise TrainingOptionsError(f"average_steps must be 0 (off) or positive, got {self.average_steps}")
        if self.lr_decay not in LR_DECAYS:
            raise TrainingOptionsError(f"lr_decay must be one of {', '.join(LR_DECAYS)}, got {self.lr_decay!r}")

    @classmethod
    def from_dict(cls, data: dict) -> TrainingOptions:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Progress:
    step: int
    epoch: int  # 1-based
    train_loss: float  # smoothed (exponential moving average)
    token_accuracy: float  # smoothed, on training batches
    learning_rate: float
    tokens_per_second: float
    eta_seconds: float
    fraction: float  # 0-1 of the planned training done
    elapsed_seconds: float
    cpu_threads: int = 0  # cores the step ran on (0: a GPU); fewer than the machine's when others are busy


@dataclass
class Validation:
    epoch: int
    step: int
    scores: Scores
    best: bool = False  # the best BLEU so far: these weights are the ones kept (with keep_best)


@dataclass
class TrainingResult:
    stopped: StopReason
    steps: int  # optimizer steps taken (a step whose loss was not finite is not taken, nor counted)
    epochs_completed: int
    history: dict = field(default_factory=dict)
    detail: str = ""  # why it stopped, when "diverged": the non-finite loss and its step
    finite_weights: bool = True  # False only if a step taken left NaN or infinite weights (then it diverged)

    @property
    def usable(self) -> bool:
        """Whether the model is worth keeping: at least one step taken and every weight finite."""
        return self.steps > 0 and self.finite_weights


class TrainingControl:
    """Thread-safe pause/resume/cancel, checked by the trainer before every step."""

    def __init__(self) -> None:
        self._running = threading.Event()
        self._running.set()
        self._cancelled = threading.Event()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def cancel(self) -> None:
        self._cancelled.set()
        self._running.set()  # wake a paused trainer so it can stop

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def wait_while_paused(self) -> float:
        """Block while paused; return the seconds spent waiting."""
        if self._running.is_set():
            return 0.0
        started = time.monotonic()
        self._running.wait()
        return time.monotonic() - started


def format_duration(seconds: float) -> str:
    """``7m59s``, ``8m00s``, ``1h05m``: whole seconds first, so a minute never reads 60 seconds."""
    if not math.isfinite(seconds):
        return "unknown"
    total = max(0, int(round(seconds)))
    hours, rest = divmod(total, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def learning_rate(
    step: int, d_model: int, warmup_steps: int, factor: float = 1.0, decay: str = "rsqrt", fraction: float = 0.0
) -> float:
    """The rate of ``step`` (from 1): a linear warm-up to the paper's peak, then 1/sqrt(step) ("rsqrt", the
    paper) or a straight line to 0 at the end of the plan ("linear"; ``fraction`` is the share done)."""
    step, warmup = max(step, 1), max(warmup_steps, 1)
    if decay == "linear":
        return factor * d_model**-0.5 * warmup**-0.5 * min(step / warmup, 1.0) * max(1.0 - fraction, 0.0)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


class Trainer:
    def __init__(
        self,
        model: Any,  # a family's network (model/nn/registry.py)
        source_tokenizer,
        target_tokenizer,
        splits,
        options: TrainingOptions,
        device: torch.device,
        on_progress=None,
        on_validation=None,
        control: TrainingControl | None = None,
        history: dict | None = None,
    ):
        self.model = model.to(device)
        self.source_tokenizer, self.target_tokenizer = source_tokenizer, target_tokenizer
        self.splits = splits
        self.options = options
        self.device = device
        self.on_progress = on_progress or (lambda progress: None)
        self.on_validation = on_validation or (lambda validation: None)
        self.control = control or TrainingControl()
        self.history = history if history is not None else {"steps": [], "validations": []}
        options.validate()
        self.train_examples = encode_examples(model, splits.train, source_tokenizer, target_tokenizer)
        self.target_pad = NO_LABEL if family_of(model).capabilities.labels else None  # labels: 0 = none
        self.optimizer = make_optimizer(self.model)
        self.autocast_dtype = torch.bfloat16 if device.type == "cuda" else None
        self.average = WeightAverage(self.optimizer.flat_parameters, options.average_steps)
        self.best: tuple[tuple, int, torch.Tensor] | None = None  # (quality, step, weights) of the best validation
        self._paused_in_validation = 0.0  # seconds, left out of the time budget like any pause

    def current_weights(self) -> torch.Tensor:
        """The flat weights [P] training has reached: their running average when averaging (what a validation scores and
        training would end with), else the current ones. The timeline's recorder copies them (model/training/recording.py)."""
        return self.average.averaged if self.average.averaged is not None else self.optimizer.flat_parameters

    def validate(self, epoch: int, step: int) -> Validation:
        """Score the (averaged) weights on the validation pairs; remember them when their BLEU is the best yet.
        Raises Interrupted when the user stops training meanwhile."""
        pairs = self.splits.valid or self.splits.train[:200]
        pairs = pairs[: max(VALID_TEACHER_FORCED, self.options.valid_decode_limit)]
        with self.average.applied():
            scores = score(
                self.model,
                self.source_tokenizer,
                self.target_tokenizer,
                pairs,
                self.device,
                decode_limit=self.options.valid_decode_limit,
                n_samples=self.options.n_samples,
                stop=self._stop_requested,
            )
            quality = scores.quality  # BLEU first (macro-F1 for a classifier); ties by the others
            best = self.best is None or quality > self.best[0]
            if best:
                self.best = (quality, step, self.optimizer.flat_parameters.detach().clone())
        validation = Validation(epoch, step, scores, best)
        self.history["validations"].append(
            {"epoch": epoch, "step": step, **scores.to_dict(), "best": best, "samples": [list(s) for s in scores.samples]}
        )
        self.on_validation(validation)
        return validation

    def _stop_requested(self) -> bool:
        """Asked between the batches of a validation: Pause holds it there, Stop and Cancel end it."""
        self._paused_in_validation += self.control.wait_while_paused()
        return self.control.cancelled

    def _finish_weights(self, stopped: StopReason) -> None:
        """The weights the model ends with: the best validated ones (keep_best; a stop by the user too, as the Train tab
        says of the best validation: "these weights are kept"), else the averaged ones."""
        if stopped == StopReason.DIVERGED:
            return  # the last finite step's weights, as documented
        if self.options.keep_best and self.best is not None:
            self.optimizer.flat_parameters.data.copy_(self.best[2])
            self.history["kept_step"] = self.best[1]
        else:
            self.average.apply_for_good()

    def run(self) -> TrainingResult:
        options, config = self.options, self.model.config
        torch.manual_seed(options.seed)
        rng = random.Random(options.seed)
        follower = CoreFollower() if self.device.type == "cpu" else None
        epoch_batches = length_batches(self.train_examples, options.batch_size, rng, options.batch_tokens)
        planned_steps = options.epochs * len(epoch_batches)
        if options.max_steps:
            planned_steps = min(planned_steps, options.max_steps)
        budget = options.max_minutes * 60 if options.max_minutes else None
        started = time.monotonic()
        paused_for = 0.0
        step, smoothed_loss, smoothed_accuracy, tokens_seen = 0, None, None, 0
        stopped, epochs_completed, detail, since_best = StopReason.FINISHED, 0, "", 0
        measure = family_of(self.model).quality_measure
        no_better = f"no better validation {measure} in the last {options.patience} validations"

        def done_fraction(elapsed: float) -> float:
            """The share of the plan done: of the steps, or of the time budget if that is further along."""
            fraction = step / planned_steps
            return max(fraction, min(elapsed / budget, 1.0)) if budget is not None else fraction

        try:
            for epoch in range(1, options.epochs + 1):
                if epoch > 1:
                    epoch_batches = length_batches(self.train_examples, options.batch_size, rng, options.batch_tokens)
                for batch_indices in epoch_batches:
                    paused_for += self.control.wait_while_paused() + self._paused_in_validation
                    self._paused_in_validation = 0.0
                    elapsed = time.monotonic() - started - paused_for
                    if options.max_steps and step >= options.max_steps:  # done: a stop asked for now changes nothing
                        stopped = StopReason.MAX_STEPS
                    elif self.control.cancelled:
                        stopped = StopReason.CANCELLED
                    elif budget is not None and elapsed >= budget:
                        stopped = StopReason.TIME_BUDGET
                    if stopped != StopReason.FINISHED:
                        break
                    threads = follower.update() if follower is not None else 0
                    step += 1
                    fraction = done_fraction(elapsed)
                    rate = learning_rate(step, config.d_model, options.warmup_steps, options.lr_factor, options.lr_decay, fraction)
                    self.optimizer.lr = rate
                    source, target = collate(
                        [self.train_examples[i] for i in batch_indices], config.pad_id, self.device, self.target_pad
                    )
                    loss, correct, count = training_step(
                        self.model, self.optimizer, source, target, options.label_smoothing, options.clip_norm, self.autocast_dtype
                    )
                    if not math.isfinite(loss):  # no step was taken: the weights are those of the last good step
                        step -= 1
                        stopped, detail = StopReason.DIVERGED, f"the training loss became {loss} at step {step + 1}"
                        break
                    self.average.update(step)
                    tokens_seen += count + int((source != config.pad_id).sum())
                    accuracy = correct / max(count, 1)
                    smoothed_loss = loss if smoothed_loss is None else 0.95 * smoothed_loss + 0.05 * loss
                    smoothed_accuracy = accuracy if smoothed_accuracy is None else 0.95 * smoothed_accuracy + 0.05 * accuracy
                    elapsed = time.monotonic() - started - paused_for
                    fraction = done_fraction(elapsed)
                    eta = elapsed / fraction - elapsed if fraction > 0 else float("inf")
                    self.history["steps"].append([step, round(loss, 5), round(accuracy, 5), rate])
                    self.on_progress(
                        Progress(
                            step,
                            epoch,
                            smoothed_loss,
                            smoothed_accuracy,
                            rate,
                            tokens_seen / max(elapsed, 1e-9),
                            eta,
                            min(fraction, 1.0),
                            elapsed,
                            threads,
                        )
                    )
                    if options.valid_every and step % options.valid_every == 0:
                        since_best = 0 if self.validate(epoch, step).best else since_best + 1
                        if options.patience and since_best >= options.patience:
                            stopped, detail = StopReason.EARLY_STOP, no_better
                            break
                if stopped == StopReason.FINISHED:
                    epochs_completed = epoch
                if stopped in (StopReason.CANCELLED, StopReason.DIVERGED, StopReason.EARLY_STOP):
                    break
                last = epoch == options.epochs or stopped != StopReason.FINISHED
                validated = bool(self.history["validations"]) and self.history["validations"][-1]["step"] == step
                if (not options.valid_every or last) and not validated and step > 0:
                    since_best = 0 if self.validate(epoch, step).best else since_best + 1
                    if options.patience and since_best >= options.patience and stopped == StopReason.FINISHED:
                        stopped, detail = StopReason.EARLY_STOP, no_better
                if stopped != StopReason.FINISHED:
                    break
        except Interrupted:  # stopped by the user during a validation
            stopped = StopReason.CANCELLED
        self._finish_weights(stopped)
        self.model.eval()
        finite = stopped != StopReason.DIVERGED or weights_are_finite(self.model)  # one pass, only after a divergence
        return TrainingResult(stopped, step, epochs_completed, self.history, detail, finite)


class WeightAverage:
    """An exponential moving average of the flat weights over about ``horizon`` steps (0: none).

    Late in training the weights wander around a minimum; their average sits nearer its middle and
    translates better (the paper averaged its last checkpoints for the same reason). The average starts
    short (its decay grows with the step) so that it never lags far behind early in training."""

    def __init__(self, weights: torch.Tensor, horizon: int):
        self.weights, self.horizon = weights, horizon
        self.averaged = weights.detach().clone() if horizon else None  # [P]

    def update(self, step: int) -> None:
        if self.averaged is not None:
            decay = min(1.0 - 1.0 / self.horizon, (1.0 + step) / (10.0 + step))
            self.averaged.lerp_(self.weights.detach(), 1.0 - decay)

    @contextmanager
    def applied(self):
        """The averaged weights in place of the current ones, for as long as the block runs."""
        if self.averaged is None:
            yield
            return
        current = self.weights.detach().clone()
        self.weights.data.copy_(self.averaged)
        try:
            yield
        finally:
            self.weights.data.copy_(current)

    def apply_for_good(self) -> None:
        if self.averaged is not None:
            self.weights.data.copy_(self.averaged)
