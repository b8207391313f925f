"""Faithfulness of a map: does hiding what it calls important change the prediction?

For step t with S source pieces ordered by the map's row (most important first; ties in position order), and p the
probability of the step's reference piece (pieces hidden in place, model/grading/scoring.py):

* the **deletion curve** D_k = p with the top k pieces hidden, k = 0..S; its AOPC (Samek et al. 2017) the mean over
  k of D_0 − D_k (higher: the map finds what matters first);
* the **insertion curve** I_k = p with only the top k pieces shown; its AOPC the mean over k of I_k − I_0 (higher);
* **comprehensiveness** at q = 10, 20, 50% (DeYoung et al. 2020, ERASER): D_0 − D_k with k = ⌈q·S⌉ pieces, and
  **sufficiency** D_0 − I_k (lower: those pieces alone keep the prediction); each the mean over the three q;
* **Kendall's τ** of the row with leave-one-out's (over the source pieces, and over the target prefix).

Every (step, k) row of every method of a pair goes to the scorer in one call, which batches and remembers them.
"""

from __future__ import annotations

import math

import numpy as np

from model.grading.scoring import PairScorer
from model.grading.statistics import is_constant, kendall_tau_b

FRACTIONS = (0.1, 0.2, 0.5)  # comprehensiveness and sufficiency (DeYoung et al. 2020)
GRID = np.linspace(0.0, 1.0, 11)  # the curves averaged over steps, against the share of pieces hidden or shown


def ranking(row: np.ndarray) -> np.ndarray:
    """The pieces from the most important to the least (ties in position order)."""
    return np.argsort(-np.asarray(row, np.float64), kind="stable")


def pieces_at(fraction: float, n_pieces: int) -> int:
    """⌈fraction · pieces⌉, at least one and at most all."""
    return min(n_pieces, max(1, math.ceil(fraction * n_pieces - 1e-9)))


def _curve_rows(order: np.ndarray, n_pieces: int) -> tuple[np.ndarray, np.ndarray]:
    """One step's order -> (keep rows of its deletion curve [S + 1, S], of its insertion curve [S + 1, S])."""
    rank = np.empty(n_pieces, np.int64)
    rank[order] = np.arange(n_pieces)
    top = rank[None, :] < np.arange(n_pieces + 1)[:, None]  # [S + 1, S]: row k marks the top k
    return ~top, top


def curves(scorer: PairScorer, maps: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each method's deletion and insertion curves [T, S + 1] (probabilities) from its source map [T, S]; a step whose
    row is not finite has NaN curves."""
    n_steps, n_pieces = scorer.case.n_steps, scorer.case.n_source
    keeps: list[np.ndarray] = []
    steps: list[int] = []
    spans: dict[str, tuple[int, int]] = {}
    for name, source in maps.items():
        start = len(steps)
        for step in range(n_steps):
            row = source[step] if np.all(np.isfinite(source[step])) else np.zeros(n_pieces)
            deletion, insertion = _curve_rows(ranking(row), n_pieces)
            keeps += [deletion, insertion]
            steps += [step] * (2 * (n_pieces + 1))
        spans[name] = (start, len(steps))
    found = np.exp(scorer.hidden(np.concatenate(keeps), np.array(steps))) if keeps else np.zeros(0)
    result = {}
    for name, (start, end) in spans.items():
        table = found[start:end].reshape(n_steps, 2, n_pieces + 1)
        deletion, insertion = table[:, 0].copy(), table[:, 1].copy()
        broken = ~np.all(np.isfinite(maps[name]), axis=1)
        deletion[broken], insertion[broken] = np.nan, np.nan
        result[name] = (deletion, insertion)
    return result


def deletion_aopc(deletion: np.ndarray) -> np.ndarray:
    """[T, S + 1] -> [T]: mean over k of D_0 − D_k."""
    return (deletion[:, :1] - deletion).mean(1)


def insertion_aopc(insertion: np.ndarray) -> np.ndarray:
    """[T, S + 1] -> [T]: mean over k of I_k − I_0."""
    return (insertion - insertion[:, :1]).mean(1)


def comprehensiveness(deletion: np.ndarray, fractions=FRACTIONS) -> np.ndarray:
    """[T, S + 1] -> [T, len(fractions)]: D_0 − D_k at each fraction's k."""
    n_pieces = deletion.shape[1] - 1
    return np.stack([deletion[:, 0] - deletion[:, pieces_at(q, n_pieces)] for q in fractions], 1)


def sufficiency(deletion: np.ndarray, insertion: np.ndarray, fractions=FRACTIONS) -> np.ndarray:
    """[T, S + 1] twice -> [T, len(fractions)]: D_0 − I_k at each fraction's k."""
    n_pieces = deletion.shape[1] - 1
    return np.stack([deletion[:, 0] - insertion[:, pieces_at(q, n_pieces)] for q in fractions], 1)


def on_grid(curve: np.ndarray) -> np.ndarray:
    """A curve over k = 0..S [S + 1] read at the shares of ``GRID`` (linearly between its points)."""
    return np.interp(GRID, np.linspace(0.0, 1.0, len(curve)), curve)


def tau_rows(measured: np.ndarray, reference: np.ndarray, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's τ of each step's row with the reference's, over the row's defined entries from column ``first`` (the
    target prefix: from 1, past <s>): (τ per step [T], whether the step is excluded [T]: fewer than two pieces, or a
    reference that ranks nothing). A NaN τ of a step not excluded is the measured row's fault (constant, or not finite)."""
    n = measured.shape[0]
    taus, excluded = np.full(n, np.nan), np.zeros(n, bool)
    for step in range(n):
        wanted = ~np.isnan(reference[step])
        wanted[:first] = False
        expected, found = reference[step][wanted], measured[step][wanted]
        if len(expected) < 2 or is_constant(expected):
            excluded[step] = True
        elif np.all(np.isfinite(found)):
            taus[step] = kendall_tau_b(found, expected)
    return taus, excluded
