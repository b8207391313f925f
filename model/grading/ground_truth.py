"""Plausibility against a known answer: a map's alignment error rate and, where the gold alignment is the task itself
(copy: the identity, reverse: the mirror, sort: the permutation), how often it points at the right source position.

A map's rows become word alignments exactly as attention's do (model/inspection/alignment.py: keys summed over a
word's pieces, queries averaged, each target word linked to the source word it reads most), so a measure's AER here
and in the app's AER table are one definition. The correct source position: the argmax of the target word's row is
a source word the gold alignment links it to (first position on a tie).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.decoding.trace import group_matrix
from model.grading.cases import GradedPair
from model.inspection.alignment import AlignmentCounts, alignment_links


@dataclass
class AlignmentEvidence:
    """One pair's link counts and position hits under one map (summed over pairs for the card)."""

    sure_hits: int
    possible_hits: int
    predicted: int
    gold: int
    position_hits: int
    positions: int


def alignment_evidence(case: GradedPair, source_map: np.ndarray) -> AlignmentEvidence | None:
    """The counts of one pair's map [T, S], or None when the pair has no gold alignment its pieces can be read by."""
    if case.groups is None or not case.pair.alignment:
        return None
    source_groups, target_groups = case.groups
    words = group_matrix(source_map[None, None], target_groups, source_groups)[0, 0]  # [target words, source words]
    gold = set(case.pair.alignment)
    counts = AlignmentCounts()
    links = alignment_links(words)
    counts.add((), links, gold)
    linked: dict[int, set[int]] = {}
    for source, target in gold:
        linked.setdefault(target, set()).add(source)
    hits = sum(int(np.argmax(words[target])) in sources for target, sources in linked.items() if target < len(words))
    return AlignmentEvidence(
        int(counts.sure_hits), int(counts.possible_hits), int(counts.predicted), int(counts.gold), hits, len(linked)
    )


def aer_of(evidence: list[AlignmentEvidence]) -> float:
    """The corpus-level AER of summed counts (Och and Ney 2003; sure = possible links here)."""
    predicted, gold = sum(e.predicted for e in evidence), sum(e.gold for e in evidence)
    if predicted + gold == 0:
        return 0.0
    return 1.0 - (sum(e.sure_hits for e in evidence) + sum(e.possible_hits for e in evidence)) / (predicted + gold)


def accuracy_of(evidence: list[AlignmentEvidence]) -> float:
    """The share of target words whose argmax is a gold source word."""
    total = sum(e.positions for e in evidence)
    return sum(e.position_hits for e in evidence) / total if total else float("nan")
