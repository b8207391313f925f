"""The next-token candidates as the window and the figures show them: which rows to list (until
they hold 99% of the probability, the rest in one "other" row) and how a probability prints.
No plotting here, so the window can use it without loading matplotlib."""

from __future__ import annotations

import numpy as np

COVERAGE = 0.99  # candidates are listed until they hold this much of the probability; the rest is "other"


def candidate_rows(probabilities, coverage: float = COVERAGE) -> int:
    """How many of the best-first candidate probabilities to list: until they reach ``coverage``
    (all of them if they never do)."""
    cumulative = np.cumsum(np.asarray(probabilities, dtype=np.float64))  # [k], best first
    reached = np.nonzero(cumulative >= coverage - 1e-9)[0]
    return int(reached[0]) + 1 if reached.size else len(cumulative)


def format_probability(value: float) -> str:
    """0.912, 0.031, 3.1e-04: three decimals while they say something, then two significant digits."""
    value = float(value)
    if value == 0.0:
        return "0"
    return f"{value:.3f}" if value >= 0.01 else f"{value:.1e}"
