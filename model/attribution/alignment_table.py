"""Which reading aligns best: the AER of every measure and head against gold word alignments.

Each gold pair is run teacher-forced on its reference (source and target pieces with their </s>), every
measure computed over it (model/attribution/measures.py), and each measure's cross-attention reading — per
head and its layer's mean for a measure per head, per layer for a layer-wide one, the one map of a saliency —
becomes word alignments as raw attention does (model/inspection/alignment.py: keys summed over a word's
pieces, queries averaged, each target word linked to the source word it reads most). Counts are summed over
the pairs (corpus-level AER, Och & Ney 2003). The raw attention and Shift-Att columns are the two readings of
``cross_attention_aer`` itself, so the table's attention heads, its best head, and what ``evaluate`` and ``compare``
report on the same pairs are one computation (the pairs: ``aer_pairs``, 200 held-out pairs drawn with seed 0 by
default; the table keeps their corpus and seed, and its CSV and summary say them).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.attribution.integration import gap_percent
from model.attribution.measures import MEASURES, compute_measure, measure_names, unsupported
from model.data.batching import encode_pairs
from model.data.corpora import Pair
from model.decoding.trace import group_matrix
from model.family import Bundle
from model.files import atomic_output
from model.inspection.alignment import (
    READINGS,
    AlignmentCounts,
    AlignmentReport,
    aer_where,
    alignment_links,
    best_layer_mean,
    cross_attention_aer,
    gold_word_groups,
)
from model.kinds import AttentionKind


@dataclass
class MeasureAlignment:
    """One measure's AER: per layer and head [layers, heads], and per layer [layers]: of a per-head measure, the AER of the
    layer's mean over its heads (averaged, then read: not the mean of the heads' AERs); of a layer-wide one, its map's."""

    measure: str
    head_aer: np.ndarray
    layer_aer: np.ndarray
    note: str = ""  # how it was computed, when that is not the app's usual way (integrated gradients' cap)

    def places(self) -> list[tuple[str, float]]:
        """(where, AER) of every reading: each head of a per-head measure, then each layer's mean or map."""
        measure = MEASURES[self.measure]
        rows = []
        if measure.per_head:
            for layer in range(self.head_aer.shape[0]):
                rows += [(f"L{layer + 1} H{head + 1}", float(a)) for head, a in enumerate(self.head_aer[layer])]
        for layer, aer in enumerate(self.layer_aer):
            if measure.single:
                rows.append(("one map", float(aer)))
            else:
                where = "mean of heads" if measure.per_head else ("through" if measure.rollout else "all heads")
                rows.append((f"L{layer + 1} {where}", float(aer)))
        return rows

    def best(self) -> tuple[str, float]:
        """(where, AER) of the reading that aligns best."""
        return min(self.places(), key=lambda row: row[1])


@dataclass
class AlignmentTable:
    measures: list[MeasureAlignment] = field(default_factory=list)
    n_pairs: int = 0
    corpus: str = ""  # the corpus whose test pairs were scored ("" for a caller's own pairs)
    seed: int | None = None  # the seed that drew them
    report: AlignmentReport | None = None  # raw cross-attention's AER on the same pairs: the best head

    def where(self) -> str:
        """'200 toy-fr test pairs, seed 0': what the table was measured on."""
        return aer_where(self.corpus, self.n_pairs, self.seed)

    def best_head(self) -> str:
        """'layer 3, head 1: AER 0.126 on 200 toy-fr test pairs, seed 0', the app's best head ('' when none was read)."""
        if self.report is None or not self.report.n_pairs:
            return ""
        aer, layer, head, _ = self.report.best
        return f"layer {layer + 1}, head {head + 1}: AER {aer:.3f} on {self.where()}"

    def write_csv(self, path: str | Path) -> None:
        """measure, reading, AER, pairs, seed: every row of the table (written atomically)."""
        with atomic_output(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["measure", "reading", "aer", "pairs", "seed"])
            seed = "" if self.seed is None else self.seed
            for result in self.measures:
                for where, aer in result.places():
                    writer.writerow([result.measure, where, f"{aer:.4f}", self.n_pairs, seed])

    def summary(self) -> list[str]:
        """One line per measure: its best reading and, for a measure per head, its best layer's mean over heads (what
        ``evaluate --json`` gives raw attention as ``aer_layer_average``: model/inspection/alignment.py)."""
        lines = []
        for result in self.measures:
            where, aer = result.best()
            label = MEASURES[result.measure].label
            note = f" ({result.note})" if result.note else ""
            mean = ""
            if MEASURES[result.measure].per_head and len(result.layer_aer):
                layer_aer, layer = best_layer_mean(result.layer_aer)
                mean = f"; best layer's mean over heads {layer_aer:.3f} (L{layer + 1})"
            lines.append(f"{label:<24} best {aer:.3f} ({where}){mean}{note}")
        return lines


# Integrated gradients in the table: each prediction's integration is capped at this many gradient points. Converged
# (up to about 3,000 points a prediction on the default model) it took about 40 s a pair on two busy cores, over two
# hours for 200 pairs; the cap keeps the whole table to minutes and the table says how many predictions converged.
TABLE_IG_POINTS = 256


@dataclass
class IntegrationTally:
    """Integrated gradients' completeness gaps and convergence over the table's predictions."""

    gaps: list[float] = field(default_factory=list)
    converged: int = 0

    def add(self, gaps: np.ndarray, converged: np.ndarray) -> None:
        self.gaps += [float(gap) for gap in gaps if np.isfinite(gap)]
        self.converged += int(converged.sum())

    def note(self) -> str:
        if not self.gaps:
            return ""
        return (
            f"at most {TABLE_IG_POINTS} points a prediction: {self.converged} of {len(self.gaps)} converged, "
            f"median completeness gap {gap_percent(float(np.median(self.gaps)))}"
        )


def alignment_table(
    bundle: Bundle,
    pairs: list[Pair],
    names: Sequence[str] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    corpus: str = "",
    seed: int | None = None,
) -> AlignmentTable:
    """The AER of every measure in ``names`` (default: every registered one) the model defines for cross-attention, over
    the gold ``pairs`` (drawn from ``corpus``'s test split with ``seed``: ``aer_pairs``; the table keeps both to say
    them). A measure that is a reading of raw cross-attention (its ``aer_reading``) takes its AER from
    ``cross_attention_aer``; every other is computed pair by pair."""
    model, config = bundle.model, bundle.config
    names = tuple(n for n in (measure_names() if names is None else names) if not unsupported(model, n, AttentionKind.CROSS))
    pairs = [p for p in pairs if p.alignment]
    report = cross_attention_aer(bundle, pairs)  # raw attention, both readings: batched, a fraction of the time
    examples = encode_pairs(pairs, bundle.source_tokenizer, bundle.target_tokenizer, config)
    counts: dict[str, tuple[AlignmentCounts, AlignmentCounts]] = {}
    integration = {name: IntegrationTally() for name in names}
    used = 0
    for index, (pair, (source_ids, target_ids)) in enumerate(zip(pairs, examples)):
        if cancelled is not None and cancelled():
            break
        pieces, target_pieces = source_ids[:-1], target_ids[1:-1]  # words only: no </s>, no <s>
        groups = gold_word_groups(bundle, pair, pieces, target_pieces)
        if groups is None:
            continue
        used += 1
        for name in names:
            if not MEASURES[name].aer_reading:
                _count_measure(counts, model, name, pair, source_ids, target_ids, groups, integration[name])
        if on_progress is not None:
            on_progress(index + 1, len(pairs))
    table = AlignmentTable(n_pairs=used, corpus=corpus, seed=seed, report=report)
    for name in names:
        raw_reading = MEASURES[name].aer_reading
        if raw_reading and report.n_pairs:
            reading = READINGS.index(raw_reading)
            table.measures.append(MeasureAlignment(name, report.head_aer[reading], report.layer_aer[reading]))
        elif name in counts:
            head_counts, layer_counts = counts[name]
            table.measures.append(MeasureAlignment(name, head_counts.aer(), layer_counts.aer(), integration[name].note()))
    return table


def _count_measure(
    counts: dict, model, name: str, pair: Pair, source_ids, target_ids, groups, integration: IntegrationTally
) -> None:
    """Add one pair's links under measure ``name`` to its (head, layer) counts."""
    pieces, target_pieces = source_ids[:-1], target_ids[1:-1]
    source_groups, target_groups = groups
    gold = set(pair.alignment)
    result = compute_measure(model, list(source_ids), list(target_ids[1:]), name, max_points=TABLE_IG_POINTS)
    integration.add(result.completeness_gap, result.integration_converged)
    shares = result.shares[AttentionKind.CROSS]
    words = group_matrix(shares[:, :, : len(target_pieces), : len(pieces)], target_groups, source_groups)  # [L, H, Tw, Sw]
    if name not in counts:
        counts[name] = (AlignmentCounts(words.shape[:2]), AlignmentCounts(words.shape[:1]))
    head_counts, layer_counts = counts[name]
    for layer in range(words.shape[0]):
        for head in range(words.shape[1]):
            head_counts.add((layer, head), alignment_links(words[layer, head]), gold)
        layer_counts.add(layer, alignment_links(words[layer].mean(0)), gold)
