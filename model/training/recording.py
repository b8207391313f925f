"""Recording a model's timeline while it trains: its weights at log-spaced steps and at every validation.

Training is time-budgeted, so its length is not known in advance. The recorder copies the weights at a geometric
series of steps (0, 1, 2, 3, 4, 5, 7, 9, 12, 15, …: each about ``GROWTH`` times the last, dense early where the
weights change most) and at each validation, and whenever it holds more than the snapshots asked for it drops the one
whose removal leaves the smallest gap in log(1 + step) (a validated one counts ``VALIDATION_WEIGHT`` times as much): what
stays is spread evenly on a log scale over the steps so far, never more than ``snapshots`` + 1 copies in memory.

A copy is the weights training has reached (their running average when it averages, which is what a validation
scores and what the model would end with) as one flat half-precision CPU vector: one conversion of a contiguous
buffer, about a millisecond for the default model, done a few dozen times in a run. The last snapshot is the final
model itself (``from_model``: the timeline file refers to the model file's weights rather than storing them again).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from model.io.snapshots import Recording, Snapshot
from model.io.timeline import STORAGES
from model.training.trainer import Progress, TrainingOptionsError, Validation

DEFAULT_SNAPSHOTS = 12  # the default recipe's timeline: 11 stored in float16 (34 MB) and the model's own final weights
GROWTH = 1.25  # each recorded step is about this many times the previous one
VALIDATION_WEIGHT = 2.0  # a snapshot with validation scores is worth this many plain ones when thinning


@dataclass
class TimelineOptions:
    """Whether and how training records its timeline (``train --timeline N``/``--no-timeline``, the Train tab)."""

    snapshots: int = DEFAULT_SNAPSHOTS  # at most this many, the final model's included; 0: no timeline
    storage: str = "float16"  # "float16", or "int8" (int8 rows with float16 scales: half the size, for shipping)

    @property
    def enabled(self) -> bool:
        return self.snapshots > 0

    def validate(self) -> None:
        """A TrainingOptionsError naming the setting for a count or storage that cannot be recorded."""
        if isinstance(self.snapshots, bool) or not isinstance(self.snapshots, int) or self.snapshots < 0 or self.snapshots == 1:
            raise TrainingOptionsError(f"timeline snapshots must be 0 (no timeline) or at least 2, got {self.snapshots}")
        if self.storage not in STORAGES:
            raise TrainingOptionsError(f"timeline storage must be one of {', '.join(STORAGES)}, got {self.storage!r}")


def thin(steps: Sequence[int], validated: Sequence[bool], keep: int) -> list[int]:
    """The indices of at most ``keep`` (2 or more) of the snapshots at ``steps`` (increasing), the first and the last
    always among them: the one whose removal leaves the smallest gap in log(1 + step) goes first (the earliest of
    equals), a validated one's gap counting ``VALIDATION_WEIGHT`` times. A heap of the removal costs, each
    neighbour's cost renewed as one goes: O(n log n)."""
    position = [math.log1p(step) for step in steps]
    before, after = list(range(-1, len(steps) - 1)), list(range(1, len(steps) + 1))  # the kept neighbours

    def cost(index: int) -> float:
        gap = position[after[index]] - position[before[index]]
        return gap * (VALIDATION_WEIGHT if validated[index] else 1.0)

    current = {index: cost(index) for index in range(1, len(steps) - 1)}  # the costs of the inner ones kept
    heap = [(value, index) for index, value in current.items()]
    heapq.heapify(heap)
    while len(current) + 2 > max(keep, 2):
        value, index = heapq.heappop(heap)
        if current.get(index) != value:
            continue  # removed already, or its cost renewed since this entry was pushed
        del current[index]
        left, right = before[index], after[index]
        after[left], before[right] = right, left
        for neighbour in (left, right):
            if neighbour in current:
                current[neighbour] = cost(neighbour)
                heapq.heappush(heap, (current[neighbour], neighbour))
    return [index for index in range(len(steps)) if index in current or index in (0, len(steps) - 1)]


def trainable_names(model: Any) -> list[str]:
    """The trainable parameters' names in the model's order: the order of the trainer's flat buffer."""
    return [name for name, parameter in model.named_parameters() if parameter.requires_grad]


class Recorder:
    """Hears training (``on_progress``, ``on_validation``) and keeps log-spaced snapshots; ``finish`` hands them over."""

    def __init__(self, options: TimelineOptions, names: list[str]):
        options.validate()
        self.options, self.names = options, names
        self.snapshots: list[Snapshot] = []
        self.weights: list[torch.Tensor | None] = []  # [P] float16 on the CPU, one per snapshot
        self.validations: dict[int, dict] = {}  # every validation's scores by step (kept when its snapshot is not)
        self.next_step = 1
        self.last: Progress | None = None
        self._source: Callable[[], torch.Tensor] = lambda: torch.empty(0)

    def start(self, weights: Callable[[], torch.Tensor]) -> None:
        """Record the weights before training (step 0); ``weights()`` is the flat vector [P] training has reached."""
        self._source = weights
        self._record(0, 0.0, None)

    def on_progress(self, progress: Progress) -> None:
        """After every step: a comparison, and a copy only at the series' steps."""
        self.last = progress
        if progress.step >= self.next_step:
            self._record(progress.step, progress.elapsed_seconds, progress.train_loss)

    def on_validation(self, validation: Validation) -> None:
        """The validated weights are recorded (or the snapshot of this step already taken gets the scores)."""
        scores = {**validation.scores.to_dict(), "best": validation.best}
        self.validations[validation.step] = scores
        if not self.snapshots or self.snapshots[-1].step != validation.step:
            last = self.last
            self._record(validation.step, last.elapsed_seconds if last else 0.0, last.train_loss if last else None)
        self.snapshots[-1].validation = scores

    def _record(self, step: int, elapsed: float, train_loss: float | None) -> None:
        flat = self._source().detach()  # [P]
        self.weights.append(flat.to(torch.float16).to("cpu"))  # [P]: converted where it is, then half the bytes moved
        self.snapshots.append(Snapshot(len(self.snapshots), step, elapsed, train_loss))
        self.next_step = max(step + 1, math.ceil(step * GROWTH))
        self._thin(self.options.snapshots)

    def _thin(self, keep: int) -> None:
        kept = thin([s.step for s in self.snapshots], [s.validation is not None for s in self.snapshots], keep)
        if len(kept) < len(self.snapshots):
            self.snapshots = [self.snapshots[i] for i in kept]
            self.weights = [self.weights[i] for i in kept]

    def finish(self, kept_step: int | None = None) -> Recording:
        """The recording, ending with the final model (``from_model``): at the last step taken, carrying that step's
        validation; when training kept an earlier validation's weights (``kept_step``), that snapshot refers to the
        model's weights too and the final one carries its scores."""
        last = self.last
        step = last.step if last is not None else 0
        final = Snapshot(0, step, last.elapsed_seconds if last else 0.0, last.train_loss if last else None, final=True)
        final.from_model = True
        if kept_step is not None and kept_step != step:
            final.kept_step, final.validation = kept_step, self.validations.get(kept_step)
            for index, snapshot in enumerate(self.snapshots):
                if snapshot.step == kept_step:
                    snapshot.from_model, self.weights[index] = True, None
        elif self.snapshots and self.snapshots[-1].step == step:  # the same moment: the final model takes its place
            final.validation = self.snapshots[-1].validation
            self.snapshots.pop()
            self.weights.pop()
        self.snapshots.append(final)
        self.weights.append(None)
        self._thin(self.options.snapshots)
        for index, snapshot in enumerate(self.snapshots):
            snapshot.index = index
        return Recording(list(self.snapshots), list(self.weights), list(self.names), self.options.storage)
