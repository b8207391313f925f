"""A model's training history as weights: the snapshots a timeline holds, and the timeline itself.

A ``Snapshot`` is the record of one moment of training (its step, the seconds trained so far, the smoothed
training loss, the validation scores when it was validated there). A ``Recording`` is what training keeps in
memory: those records with the weights of each as one flat half-precision vector, written beside the model file
when it is saved (model/io/timeline.py). A ``Timeline`` is what is read back (or a folder of Hugging Face
Trainer checkpoints, model/io/checkpoint_folders.py): the records, and ``bundle_at(i)``, the model as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from model.errors import UserError

MAX_SNAPSHOTS = 100_000  # in one timeline file: far beyond any recording


class TimelineError(UserError):
    """A timeline that cannot be read or written (damaged, of another model, of a newer version); one line says why."""


@dataclass
class Snapshot:
    """One moment of training. ``final``: the model file's own weights (the last snapshot of every timeline)."""

    index: int
    step: int  # optimizer steps taken (0: the weights before training)
    elapsed_seconds: float | None  # training time so far, pauses left out (None: not recorded, as in HF checkpoints)
    train_loss: float | None  # the smoothed training loss (None before the first step)
    validation: dict | None = None  # the validation scores at this step (loss, bleu, exact_match, token_accuracy, ...)
    final: bool = False
    kept_step: int | None = None  # final only: the step whose weights training kept (the best validation), when earlier
    from_model: bool = False  # its weights are the model file's (the final ones, or the kept validation's): not stored twice

    @property
    def label(self) -> str:
        """``step 1,200``; ``step 8,000 (final)``; ``step 8,000 (final: the weights of step 6,000)``."""
        text = f"step {self.step:,}"
        if self.final and self.kept_step is not None and self.kept_step != self.step:
            return f"{text} (final: the weights of step {self.kept_step:,})"
        return f"{text} (final)" if self.final else text

    def to_dict(self) -> dict:
        """The record as the timeline file stores it (JSON: a non-finite number becomes null)."""
        return {
            "step": self.step,
            "elapsed_seconds": finite_or_none(self.elapsed_seconds),
            "train_loss": finite_or_none(self.train_loss),
            "validation": clean_numbers(self.validation),
            "final": self.final,
            "kept_step": self.kept_step,
            "weights": "model" if self.from_model else "snapshot",
        }


def finite_or_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def clean_numbers(value: Any) -> Any:
    """``value`` with every non-finite float as None (JSON has no NaN), through dicts and lists."""
    if isinstance(value, float):
        return finite_or_none(value)
    if isinstance(value, dict):
        return {str(key): clean_numbers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_numbers(item) for item in value]
    return value


def _number(value: object, integer: bool = False) -> bool:
    kinds = (int,) if integer else (int, float)
    return isinstance(value, kinds) and not isinstance(value, bool)


def _scores(value: object) -> bool:
    """A validation record: names to numbers, None, or one level of names to numbers (a classifier's per-class F1)."""
    if not isinstance(value, dict):
        return False
    flat = [item for item in value.values() if not isinstance(item, dict)]
    nested = [number for item in value.values() if isinstance(item, dict) for number in item.values()]
    return all(item is None or _number(item) or isinstance(item, bool) for item in flat) and all(map(_number, nested))


def _valid_record(record: dict, last: bool, previous_step: int | None) -> bool:
    """Every field of one record of a timeline file of the right type; only the last is final (the model's weights)."""
    return (
        _number(record.get("step"), integer=True)
        and record["step"] >= 0
        and all(record.get(key) is None or _number(record.get(key)) for key in ("elapsed_seconds", "train_loss"))
        and (record.get("validation") is None or _scores(record.get("validation")))
        and isinstance(record.get("final"), bool)
        and (record.get("kept_step") is None or _number(record.get("kept_step"), integer=True))
        and record.get("weights") in ("snapshot", "model")
        and record["final"] == last
        and (not last or record.get("weights") == "model")
        and (previous_step is None or record["step"] >= previous_step)
    )


def snapshots_from_records(records: object, name: str) -> list[Snapshot]:
    """The snapshots of a timeline file's records, each field checked; the last (and only the last) is the final model."""
    if not isinstance(records, list) or not 1 <= len(records) <= MAX_SNAPSHOTS:
        raise TimelineError(f"{name}: damaged timeline file (its snapshots must be a list of 1 to {MAX_SNAPSHOTS:,} records)")
    snapshots: list[Snapshot] = []
    for index, record in enumerate(records):
        previous = snapshots[-1].step if snapshots else None
        if not isinstance(record, dict) or not _valid_record(record, index == len(records) - 1, previous):
            raise TimelineError(f"{name}: damaged timeline file (snapshot {index}'s record is malformed)")
        snapshots.append(
            Snapshot(
                index,
                record["step"],
                record.get("elapsed_seconds"),
                record.get("train_loss"),
                record.get("validation"),
                record["final"],
                record.get("kept_step"),
                record["weights"] == "model",
            )
        )
    return snapshots


@dataclass
class Recording:
    """What training recorded, in memory until the model is saved: the snapshots and, for each, its weights as one
    flat half-precision CPU vector [P] over ``names`` (the trainable parameters, in the model's order), or None when
    they are the model file's own. ``storage``: how the file keeps them ("float16", or "int8" with per-row scales)."""

    snapshots: list[Snapshot]
    weights: list[torch.Tensor | None]
    names: list[str]
    storage: str = "float16"

    def named_weights(self, index: int, shapes: dict[str, torch.Size]) -> dict[str, torch.Tensor] | None:
        """Snapshot ``index``'s weights by parameter name ([*shape] views into its flat vector), None for the model's own."""
        flat = self.weights[index]
        if flat is None:
            return None
        named, offset = {}, 0
        for name in self.names:
            count = math.prod(shapes[name])
            named[name] = flat[offset : offset + count].view(shapes[name])  # [*shape]
            offset += count
        return named


@dataclass
class Timeline:
    """A model's snapshots, oldest first; ``bundle_at(i)`` is the model as it was at snapshot ``i`` (the app's own
    ``ModelBundle``, or a ``PretrainedBundle`` for a folder of Hugging Face checkpoints)."""

    path: Path  # the timeline file, or the folder of checkpoints
    snapshots: list[Snapshot]
    restore: Callable[[int], Any]  # index -> a bundle with that snapshot's weights
    storage: str = "float16"  # "float16", "int8", or "checkpoints" (a Hugging Face Trainer's folders)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.snapshots)

    def bundle_at(self, index: int) -> Any:
        """The model at snapshot ``index`` (negative counts from the end), its weights in float32: a new bundle each
        time, with the timeline's tokenizers. An IndexError for an index out of range."""
        if not -len(self.snapshots) <= index < len(self.snapshots):
            raise IndexError(f"snapshot {index} of a timeline of {len(self.snapshots)}")
        return self.restore(index % len(self.snapshots))

    def describe(self) -> str:
        first, last = self.snapshots[0], self.snapshots[-1]
        return f"{len(self.snapshots)} snapshots from step {first.step:,} to step {last.step:,}"
