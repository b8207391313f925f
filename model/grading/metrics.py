"""The report card's columns, each a small registered class: what it reads of a method's evidence on each pair, and
how those readings become one cell.

A cell is a value (the mean over the graded steps, or a corpus-level rate), "—" with the reason when the column does
not apply (a measure a family does not define, a corpus without gold alignments), or "ref." for the reference itself.
A reading that cannot be made — a map with NaN or ∞, a constant map that ranks nothing — is a *failure*: counted and
named in the cell with its cause, never averaged in (the cell's value is then the mean of the other readings, and it
is never marked best).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from model.grading import faithfulness
from model.grading.ground_truth import AlignmentEvidence, accuracy_of, aer_of

NOT_FINITE = "its map is not finite (NaN or ∞)"
CONSTANT = "its map is constant: it ranks nothing"


def shown_number(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals ('0.412'; never '-0.000'), or, where those would read 0 though it is not (a
    random model's probabilities of 1e-6), with ``digits`` significant digits ('7.41e-06')."""
    if value != 0 and abs(value) < 0.5 * 10**-digits:
        return f"{value:.{digits - 1}e}"
    return f"{value + 0.0:.{digits}f}".replace(f"-{0:.{digits}f}", f"{0:.{digits}f}")


@dataclass
class Failure:
    cause: str


@dataclass
class PairEvidence:
    """What one method's maps of one pair gave (None: not measured)."""

    broken: np.ndarray  # [T] the source map's row is not finite
    deletion: np.ndarray | None = None  # [T, S + 1]
    insertion: np.ndarray | None = None  # [T, S + 1]
    loo_tau: tuple[np.ndarray, np.ndarray] | None = None  # (τ [T], excluded [T])
    prefix_tau: tuple[np.ndarray, np.ndarray] | None = None
    alignment: AlignmentEvidence | None = None
    alignment_failed: bool = False


@dataclass
class Cell:
    value: float | None = None  # None: "—", or every reading failed
    reason: str = ""  # why "—"
    failures: Counter = field(default_factory=Counter)  # cause -> readings that failed
    readings: int = 0  # readings made (failed ones included)
    reference: bool = False  # the reference itself (leave-one-out in a τ column)
    best: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def text(self, digits: int = 3) -> str:
        """What the card shows: '0.412', '0.412 ✗', '✗', 'ref.' or '—' (with ★ on the best)."""
        if self.reference:
            return "ref."
        if self.value is None:
            return "✗" if self.failed else "—"
        mark = " ★" if self.best else (" ✗" if self.failed else "")
        return f"{shown_number(self.value, digits)}{mark}"

    def shown_value(self, digits: int = 3) -> float:
        """The value as the card shows it (what ties are judged on)."""
        return float(shown_number(self.value or 0.0, digits))

    def note(self) -> str:
        """The reason for a "—", or each failure's cause and count."""
        if self.failed:
            return "; ".join(f"failed at {count} of {self.readings}: {cause}" for cause, count in self.failures.items())
        return self.reason


class Metric:
    """One column: ``values`` reads one pair's evidence (a float, a Failure, or nothing to read), ``cell`` sums up."""

    name: ClassVar[str] = ""
    header: ClassVar[str] = ""  # the card's column header
    what: ClassVar[str] = ""
    higher_is_better: ClassVar[bool] = True
    needs: ClassVar[str] = "source"  # "source", "prefix", "hiding" (a source map and pieces hidden), "gold", "positions"

    def values(self, evidence: PairEvidence) -> list[float | Failure]:
        raise NotImplementedError

    def cell(self, evidence: list[PairEvidence]) -> Cell:
        found = [value for pair in evidence for value in self.values(pair)]
        numbers = [value for value in found if not isinstance(value, Failure)]
        failures = Counter(value.cause for value in found if isinstance(value, Failure))
        return Cell(float(np.mean(numbers)) if numbers else None, failures=failures, readings=len(found))


METRICS: dict[str, type[Metric]] = {}


def register_metric(cls: type[Metric]) -> type[Metric]:
    """Make ``cls`` a column of every report card, by its name (after the columns registered before it)."""
    METRICS[cls.name] = cls
    return cls


def _per_step(evidence: PairEvidence, table: np.ndarray | None) -> list[float | Failure]:
    if table is None:
        return []
    return [Failure(NOT_FINITE) if broken else float(value) for broken, value in zip(evidence.broken, table)]


@register_metric
class AlignmentErrorRate(Metric):
    name, header, higher_is_better, needs = "aer", "AER", False, "gold"
    what = "alignment error rate of the map's word alignments against the gold ones (lower is better)"

    def values(self, evidence: PairEvidence) -> list:
        if evidence.alignment_failed:
            return [Failure(NOT_FINITE)]
        return [evidence.alignment] if evidence.alignment is not None else []

    def cell(self, evidence: list[PairEvidence]) -> Cell:
        found = [value for pair in evidence for value in self.values(pair)]
        counts = [value for value in found if isinstance(value, AlignmentEvidence)]
        failures = Counter(value.cause for value in found if isinstance(value, Failure))
        return Cell(self.rate(counts) if counts else None, failures=failures, readings=len(found))

    def rate(self, counts: list[AlignmentEvidence]) -> float:
        return aer_of(counts)


@register_metric
class PositionAccuracy(AlignmentErrorRate):
    name, header, higher_is_better, needs = "accuracy", "Position acc.", True, "positions"
    what = "share of target words whose map's argmax is the gold source position (copy, reverse, sort)"

    def rate(self, counts: list[AlignmentEvidence]) -> float:
        return accuracy_of(counts)


class CurveMetric(Metric):
    """A column read from each step's deletion and insertion curves [T, S + 1] (``per_step``)."""

    needs = "hiding"

    def per_step(self, deletion: np.ndarray, insertion: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def values(self, evidence: PairEvidence) -> list:
        if evidence.deletion is None or evidence.insertion is None:
            return []
        return _per_step(evidence, self.per_step(evidence.deletion, evidence.insertion))


@register_metric
class DeletionAopc(CurveMetric):
    name, header = "deletion_aopc", "Deletion AOPC"
    what = "mean drop of p(reference) as pieces are hidden in the map's order (higher is better)"

    def per_step(self, deletion: np.ndarray, insertion: np.ndarray) -> np.ndarray:
        return faithfulness.deletion_aopc(deletion)


@register_metric
class InsertionAopc(CurveMetric):
    name, header = "insertion_aopc", "Insertion AOPC"
    what = "mean rise of p(reference) as pieces are shown in the map's order, from none (higher is better)"

    def per_step(self, deletion: np.ndarray, insertion: np.ndarray) -> np.ndarray:
        return faithfulness.insertion_aopc(insertion)


@register_metric
class Comprehensiveness(CurveMetric):
    name, header = "comprehensiveness", "Compr."
    what = "drop of p(reference) with the top 10, 20, 50% of pieces hidden, averaged (higher is better)"

    def per_step(self, deletion: np.ndarray, insertion: np.ndarray) -> np.ndarray:
        return faithfulness.comprehensiveness(deletion).mean(1)


@register_metric
class Sufficiency(CurveMetric):
    name, header, higher_is_better = "sufficiency", "Suff.", False
    what = "drop of p(reference) with only the top 10, 20, 50% of pieces shown, averaged (lower is better)"

    def per_step(self, deletion: np.ndarray, insertion: np.ndarray) -> np.ndarray:
        return faithfulness.sufficiency(deletion, insertion).mean(1)


def _tau_values(found: tuple[np.ndarray, np.ndarray] | None, broken: np.ndarray) -> list[float | Failure]:
    if found is None:
        return []
    taus, excluded = found
    values: list[float | Failure] = []
    for step, (tau, skip) in enumerate(zip(taus, excluded)):
        if skip:
            continue
        if np.isnan(tau):
            values.append(Failure(NOT_FINITE if step < len(broken) and broken[step] else CONSTANT))
        else:
            values.append(float(tau))
    return values


@register_metric
class KendallLeaveOneOut(Metric):
    name, header = "tau_loo", "τ LOO"
    what = "Kendall's τ-b of each step's source map with leave-one-out's (higher is better)"

    def values(self, evidence: PairEvidence) -> list:
        return _tau_values(evidence.loo_tau, evidence.broken)


@register_metric
class KendallPrefix(Metric):
    name, header, needs = "tau_prefix", "τ prefix", "prefix"
    what = "Kendall's τ-b of each step's target-prefix map with leave-one-out's (higher is better)"

    def values(self, evidence: PairEvidence) -> list:
        return _tau_values(evidence.prefix_tau, np.zeros(0, bool))
