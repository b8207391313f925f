"""When heads changed over training: the step each cross-attention head became alignment-like, and the largest changes
between consecutive snapshots ("phase changes"), found automatically and ranked.

**Alignment onset.** A head becomes alignment-like at the first snapshot from which its AER stays below
``ONSET_THRESHOLD`` (0.3) at every later snapshot, so a head that dips once and unlearns is not counted. Why 0.3: an
untrained head's argmax links are near random, AER 0.8-0.9 on the built-in corpora (1 - 1/length for a uniform
head; measured 0.82-0.89 on the copy corpus at step 0), while the trained default model's alignment heads (layer 3)
measure 0.13-0.31 and its other heads 0.76-0.89 (model/inspection/heads.py, ALIGNMENT_ENTROPY's notes); 0.3 lies
at the top of the trained alignment heads' range and far below every head that does not align, so a head under it
links 70% or more of the words right. The threshold is a parameter.

**Phase changes.** For each measure (a cross head's AER; each head's normalised entropy; the total-variation distance
of each head's attention matrix from the previous snapshot's, ``matrix_change``) and each pair of consecutive
snapshots, every head's change is divided by the pair's distance in log step, ln(1 + step after) - ln(1 + step
before), so that a change over a long stretch of training is not favoured over a sudden one when snapshots are
log-spaced (or not). All three measures lie in [0, 1], so their scores compare. A pair's event names the heads whose
score is at least half of its largest; events are ranked by their largest score, the largest first. That score is
shown as the event's *rate* (``describe``: "rate 1.39: … attention moved by 0.502 … over 0.36 log step"), so that a
list ranked by it reads sorted: a large change over a long stretch can rank below a smaller, sudden one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from model.kinds import AttentionKind

ONSET_THRESHOLD = 0.3  # AER below which a cross head counts as alignment-like (see the module's notes)
HEAD_SHARE = 0.5  # an event names the heads whose score is at least this share of its largest
MEASURES = {"aer": "AER", "entropy": "normalised entropy", "attention": "attention change"}


@dataclass
class AlignmentOnset:
    """A cross-attention head that became alignment-like, and when."""

    layer: int  # from 0
    head: int  # from 0
    index: int  # the snapshot (from 0) from which its AER stays under the threshold
    step: int
    name: str  # "step 1,200 of 9,000"
    aer: float  # its AER at that snapshot

    def describe(self) -> str:
        return f"cross-attention layer {self.layer + 1} head {self.head + 1}: alignment-like from {self.name} (AER {self.aer:.3f})"


@dataclass
class PhaseChange:
    """One of the largest changes between two consecutive snapshots."""

    rank: int  # 1 = the largest
    measure: str  # "aer", "entropy" or "attention" (MEASURES)
    kind: AttentionKind
    before: int  # snapshot indices (from 0)
    after: int
    step_before: int
    step_after: int
    heads: list[tuple[int, int]]  # (layer, head) from 0, the largest change first
    value_before: float  # the measure of the first head at each snapshot (NaN before for "attention")
    value_after: float
    score: float  # |change| per unit of ln(1 + step): the rate the events are ranked by
    distance: float = float("nan")  # ln(1 + step after) - ln(1 + step before) (log_step_distances)

    def describe(self) -> str:
        heads = ", ".join(f"layer {layer + 1} head {head + 1}" for layer, head in self.heads)
        if self.measure == "attention":
            what = f"attention moved by {self.value_after:.3f} (total variation)"
        else:
            what = f"{MEASURES[self.measure]} {self.value_before:.3f} → {self.value_after:.3f}"
        over = f" over {self.distance:.2f} log step" if math.isfinite(self.distance) else ""
        return (
            f"{self.rank}. rate {self.score:.2f}: steps {self.step_before:,} → {self.step_after:,} (snapshots {self.before} → "
            f"{self.after}), {self.kind.label}, {heads}: {what}{over}"
        )


def alignment_onsets(
    aer: np.ndarray, indices: Sequence[int], steps: Sequence[int], names: Sequence[str], threshold: float = ONSET_THRESHOLD
) -> list[AlignmentOnset]:
    """Every cross head whose AER [snapshots, layers, heads] ends under ``threshold``, with the first snapshot from
    which it stays there; by step, then layer and head."""
    below = np.asarray(aer) < threshold  # [N, layers, heads]
    stays = np.flip(np.logical_and.accumulate(np.flip(below, 0), axis=0), 0)  # [N, L, H]: below from here to the end
    onsets = []
    for layer in range(aer.shape[1]):
        for head in range(aer.shape[2]):
            if not stays[-1, layer, head]:
                continue
            first = int(np.argmax(stays[:, layer, head]))
            onsets.append(
                AlignmentOnset(layer, head, indices[first], int(steps[first]), names[first], float(aer[first, layer, head]))
            )
    return sorted(onsets, key=lambda onset: (onset.step, onset.layer, onset.head))


def matrix_change(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """[layers, heads]: the mean over query rows of the total-variation distance (half the L1 distance, 0-1) between
    two snapshots' matrices [layers, heads, Q, K]; NaN when their shapes differ (traces not forced alike)."""
    if before.shape != after.shape:
        return np.full(after.shape[:2], np.nan)
    if not before.shape[2] or not before.shape[3]:
        return np.zeros(after.shape[:2])
    distance = 0.5 * np.abs(after.astype(np.float64) - before).sum(-1)  # [layers, heads, Q]
    return distance.mean(-1)


def log_step_distances(steps: Sequence[int]) -> np.ndarray:
    """[N - 1]: ln(1 + step after) - ln(1 + step before) of each consecutive pair; a pair at the same step (or out
    of order) counts as the smallest positive distance of the others (1 if none)."""
    logs = np.log1p(np.maximum(np.asarray(steps, dtype=np.float64), 0))
    distances = np.diff(logs)  # [N - 1]
    positive = distances[distances > 0]
    floor = float(positive.min()) if positive.size else 1.0
    return np.where(distances > 0, distances, floor)


def _events(
    measure: str, kind: AttentionKind, values: np.ndarray, indices: Sequence[int], steps: Sequence[int]
) -> list[PhaseChange]:
    """One event per consecutive pair of a [N, layers, heads] measure (for "attention", the change itself)."""
    distances = log_step_distances(steps)
    events = []
    for pair in range(len(indices) - 1):
        before, after = values[pair], values[pair + 1]  # [layers, heads]
        change = after if measure == "attention" else after - before
        scores = np.abs(change) / distances[pair]  # [layers, heads]
        if not np.isfinite(scores).any() or np.nanmax(scores) <= 0:
            continue
        top = float(np.nanmax(scores))
        order = np.argsort(-np.nan_to_num(scores, nan=-1.0), axis=None, kind="stable")
        heads = [divmod(int(i), scores.shape[1]) for i in order if scores.flat[i] >= HEAD_SHARE * top]
        layer, head = heads[0]
        events.append(
            PhaseChange(
                0,
                measure,
                kind,
                indices[pair],
                indices[pair + 1],
                int(steps[pair]),
                int(steps[pair + 1]),
                heads,
                float("nan") if measure == "attention" else float(before[layer, head]),
                float(after[layer, head]),
                top,
                float(distances[pair]),
            )
        )
    return events


def phase_changes(
    measures: dict[tuple[str, AttentionKind], np.ndarray], indices: Sequence[int], steps: Sequence[int], top: int = 10
) -> list[PhaseChange]:
    """The ``top`` largest events over every (measure, kind) -> [N, layers, heads] array, ranked from 1."""
    events = [
        event
        for (measure, kind), values in measures.items()
        if values is not None and len(values) > 1
        for event in _events(measure, kind, values, indices, steps)
    ]
    events.sort(key=lambda event: (-event.score, event.step_after, event.measure, event.kind.value))
    for rank, event in enumerate(events[:top], start=1):
        event.rank = rank
    return events[:top]


def finite_or_nan(value: float | None) -> float:
    """A number for an array: NaN for None or anything not finite."""
    return float(value) if value is not None and math.isfinite(value) else float("nan")
