"""Rank statistics of the report card, in NumPy: Kendall's τ-b (agreement with leave-one-out) and Spearman's ρ (the
similarity of a map before and after randomisation), with ties sharing their average rank, as SciPy computes them
(a test checks that they agree)."""

from __future__ import annotations

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1 of a 1-d array, ties sharing the average of the ranks they span."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0  # the mean of ranks start + 1 .. end
            start = end
    return ranks


def is_constant(values: np.ndarray) -> bool:
    """Whether every value is the same (a ranking of nothing)."""
    values = np.asarray(values)
    return len(values) == 0 or bool(np.all(values == values.flat[0]))


def spearman(first: np.ndarray, second: np.ndarray) -> float:
    """Spearman's ρ of two arrays of the same shape (flattened). Two identical arrays are 1 even when constant (a map
    that does not change at all is as similar as can be); NaN when one alone is constant (no ranking to compare)."""
    a, b = np.ravel(first).astype(np.float64), np.ravel(second).astype(np.float64)
    if a.shape != b.shape:
        raise ValueError(f"Spearman's ρ of arrays of {a.shape} and {b.shape} values")
    if np.array_equal(a, b):
        return 1.0
    if is_constant(a) or is_constant(b):
        return float("nan")
    ranks_a, ranks_b = average_ranks(a) - (len(a) + 1) / 2, average_ranks(b) - (len(b) + 1) / 2
    return float((ranks_a * ranks_b).sum() / np.sqrt((ranks_a**2).sum() * (ranks_b**2).sum()))


def kendall_tau_b(first: np.ndarray, second: np.ndarray) -> float:
    """Kendall's τ-b of two 1-d arrays: (concordant − discordant pairs) / √((pairs − ties in first)(pairs − ties in
    second)); NaN with fewer than two values or when either is constant."""
    a, b = np.asarray(first, np.float64), np.asarray(second, np.float64)
    if len(a) < 2 or is_constant(a) or is_constant(b):
        return float("nan")
    upper = np.triu_indices(len(a), k=1)
    sign_a = np.sign(a[:, None] - a[None, :])[upper]  # [pairs]
    sign_b = np.sign(b[:, None] - b[None, :])[upper]
    untied_a, untied_b = np.count_nonzero(sign_a), np.count_nonzero(sign_b)
    return float((sign_a * sign_b).sum() / np.sqrt(untied_a * untied_b))
