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
from dataclasses import asdict, dataclass, field

import torch

from .batching import collate, encode_pairs, length_batches
from .evaluation import Scores, score
from .loss import smoothed_cross_entropy
from .optimizer import FlatAdam
from .packing import PackedRows
from .transformer import Transformer


@dataclass
class TrainingOptions:
    epochs: int = 10  # passes over the training split (the time budget may end training sooner)
    max_minutes: float | None = None  # time budget; training stops at the first step boundary past it
    batch_size: int = 64  # sentence pairs per batch (batches hold pairs of similar length)
    warmup_steps: int = 400  # linear warm-up, then decay with 1/sqrt(step)
    lr_factor: float = 1.0  # scales the paper's d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
    label_smoothing: float = 0.1
    clip_norm: float = 1.0  # gradient-norm clipping (0 disables)
    seed: int = 0
    max_steps: int | None = None  # stop after this many optimizer steps (quick experiments, tests)
    valid_decode_limit: int = 200  # validation pairs decoded for exact match and BLEU each epoch
    n_samples: int = 3  # sample translations reported each epoch

    def to_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> None:
        """Raise ValueError, naming the field, for settings that cannot train (NaN, infinite, out of range)."""
        for name in ("lr_factor", "label_smoothing", "clip_norm", "max_minutes"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value}")
        for name in ("epochs", "batch_size", "lr_factor", "max_steps", "max_minutes"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.clip_norm < 0:
            raise ValueError(f"clip_norm must be 0 (off) or positive, got {self.clip_norm}")

    @classmethod
    def from_dict(cls, data: dict) -> "TrainingOptions":
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


@dataclass
class Validation:
    epoch: int
    step: int
    scores: Scores


@dataclass
class TrainingResult:
    stopped: str  # "finished", "cancelled", "time budget", "max steps" or "diverged"
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


def learning_rate(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * max(warmup_steps, 1) ** -1.5)


def weights_are_finite(model: torch.nn.Module) -> bool:
    """Whether every parameter and buffer of the model is finite (no NaN, no infinity)."""
    return all(bool(torch.isfinite(tensor).all()) for tensor in model.state_dict().values()
               if tensor.is_floating_point())


def make_optimizer(model: Transformer) -> FlatAdam:
    """The paper's Adam (betas 0.9 and 0.98, eps 1e-9) over the model's parameters as one flat buffer."""
    return FlatAdam(model, lr=0.0, betas=(0.9, 0.98), eps=1e-9)


def training_step(model, optimizer, source, target, label_smoothing: float, clip_norm: float,
                  autocast_dtype=None) -> tuple[float, int, int]:
    """One optimizer step on a padded batch; returns (loss, correct pieces, real pieces).

    A non-finite loss (NaN or infinite) takes no step: the weights stay as they were and the caller
    sees the loss, so it can stop."""
    if not model.training:  # train() walks every module: a millisecond a step when done needlessly
        model.train()
    optimizer.zero_grad()
    gold = target[:, 1:]  # [B, T]
    real = gold != model.config.pad_id  # [B, T]
    with torch.autocast(source.device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
        hidden = model(source, target[:, :-1], rows=PackedRows(real))  # [N, d_model]: real positions only
        logits = model.logits(hidden)  # [N, V]
    loss, correct = smoothed_cross_entropy(logits, gold[real], label_smoothing)
    value = loss.item()
    if not math.isfinite(value):  # a NaN or infinite loss would turn every weight into NaN: no step
        return value, correct, int(real.sum())
    loss.backward()
    optimizer.step(clip_norm)
    return value, correct, int(real.sum())


class Trainer:
    def __init__(self, model: Transformer, source_tokenizer, target_tokenizer, splits, options: TrainingOptions,
                 device: torch.device, on_progress=None, on_validation=None, control: TrainingControl | None = None,
                 history: dict | None = None):
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
        self.train_examples = encode_pairs(splits.train, source_tokenizer, target_tokenizer, model.config)
        self.optimizer = make_optimizer(self.model)
        self.autocast_dtype = torch.bfloat16 if device.type == "cuda" else None

    def validate(self, epoch: int, step: int) -> Validation:
        pairs = self.splits.valid or self.splits.train[:200]
        scores = score(self.model, self.source_tokenizer, self.target_tokenizer, pairs, self.device,
                       decode_limit=self.options.valid_decode_limit, n_samples=self.options.n_samples)
        validation = Validation(epoch, step, scores)
        self.history["validations"].append({"epoch": epoch, "step": step, **scores.to_dict(),
                                            "samples": [list(s) for s in scores.samples]})
        self.on_validation(validation)
        return validation

    def run(self) -> TrainingResult:
        options, config = self.options, self.model.config
        torch.manual_seed(options.seed)
        rng = random.Random(options.seed)
        batches_per_epoch = math.ceil(len(self.train_examples) / options.batch_size)
        planned_steps = options.epochs * batches_per_epoch
        if options.max_steps:
            planned_steps = min(planned_steps, options.max_steps)
        budget = options.max_minutes * 60 if options.max_minutes else None
        started = time.monotonic()
        paused_for = 0.0
        step, smoothed_loss, smoothed_accuracy, tokens_seen = 0, None, None, 0
        stopped, epochs_completed, detail = "finished", 0, ""
        for epoch in range(1, options.epochs + 1):
            for batch_indices in length_batches(self.train_examples, options.batch_size, rng):
                paused_for += self.control.wait_while_paused()
                elapsed = time.monotonic() - started - paused_for
                if self.control.cancelled:
                    stopped = "cancelled"
                elif budget is not None and elapsed >= budget:
                    stopped = "time budget"
                elif options.max_steps and step >= options.max_steps:
                    stopped = "max steps"
                if stopped != "finished":
                    break
                step += 1
                rate = learning_rate(step, config.d_model, options.warmup_steps, options.lr_factor)
                self.optimizer.lr = rate
                source, target = collate([self.train_examples[i] for i in batch_indices], config.pad_id, self.device)
                loss, correct, count = training_step(self.model, self.optimizer, source, target,
                                                     options.label_smoothing, options.clip_norm, self.autocast_dtype)
                if not math.isfinite(loss):  # no step was taken: the weights are those of the last good step
                    step -= 1
                    stopped, detail = "diverged", f"the training loss became {loss} at step {step + 1}"
                    break
                tokens_seen += count + int((source != config.pad_id).sum())
                accuracy = correct / max(count, 1)
                smoothed_loss = loss if smoothed_loss is None else 0.95 * smoothed_loss + 0.05 * loss
                smoothed_accuracy = accuracy if smoothed_accuracy is None else 0.95 * smoothed_accuracy + 0.05 * accuracy
                elapsed = time.monotonic() - started - paused_for
                fraction = step / planned_steps
                if budget is not None:
                    fraction = max(fraction, min(elapsed / budget, 1.0))
                eta = elapsed / fraction - elapsed if fraction > 0 else float("inf")
                self.history["steps"].append([step, round(loss, 5), round(accuracy, 5), rate])
                self.on_progress(Progress(step, epoch, smoothed_loss, smoothed_accuracy, rate,
                                          tokens_seen / max(elapsed, 1e-9), eta, min(fraction, 1.0), elapsed))
            if stopped == "finished":
                epochs_completed = epoch
            if stopped in ("cancelled", "diverged"):
                break
            self.validate(epoch, step)
            if stopped != "finished":
                break
        self.model.eval()
        finite = stopped != "diverged" or weights_are_finite(self.model)  # one pass, only after a divergence
        return TrainingResult(stopped, step, epochs_completed, self.history, detail, finite)
