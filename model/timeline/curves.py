"""Curves over training, per head: what each head of each snapshot does, as plain arrays for views, figures and CSV.

Per snapshot and head (of every kind the model has):

- ``entropy`` and ``normalised_entropy`` and ``role`` (model/inspection/heads.py) of the snapshot's trace of the
  sentence (forced along one target, model/timeline/traces.py), as the window's heads table shows them;
- ``matrix_change``: how far the head's matrix moved from the previous snapshot's (total variation, 0-1);
- ``aer`` of every cross-attention head (the "predicting" reading) against the gold alignments of the model's built-in
  corpus (model/inspection/alignment.py), on ``aer_pairs`` held-out test pairs, 50 by default for speed (the app's
  other AERs use 200): every surface prints where it was measured. The copy corpus's gold alignment is the diagonal,
  so on a copy model this is the AER against the known copy alignment. None without gold alignments;
- ``importance`` (model/attribution/importance.py) on ``importance_pairs`` fresh pairs, when asked (it takes a
  backward pass per sentence and snapshot);

plus each snapshot's training loss and validation scores from the records, the alignment onsets and the ranked phase
changes (model/timeline/changes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from model.attribution.importance import head_importance, measured_pairs
from model.data.corpora import Pair
from model.family import Bundle
from model.inspection.alignment import aer_corpus, aer_where, measured_aer
from model.inspection.heads import all_head_statistics
from model.kinds import AttentionKind
from model.timeline.changes import (
    ONSET_THRESHOLD,
    AlignmentOnset,
    PhaseChange,
    alignment_onsets,
    finite_or_nan,
    matrix_change,
    phase_changes,
)
from model.timeline.source import SnapshotSource, TimelineError
from model.timeline.traces import SnapshotTrace

CURVE_AER_PAIRS = 50  # held-out pairs per snapshot: a tenth of a second each on a tiny model; the app's default is 200


@dataclass
class CurveOptions:
    aer_pairs: int = CURVE_AER_PAIRS  # 0: no AER
    aer_seed: int = 0
    importance_pairs: int = 0  # 0: no importance (the slowest curve)
    importance_seed: int = 12345
    onset_threshold: float = ONSET_THRESHOLD
    top_changes: int = 10


@dataclass
class HeadCurves:
    """Every curve of a timeline's chosen snapshots (N of them); heads' arrays are [N, layers, heads]."""

    text: str
    indices: list[int]  # the snapshots (from 0)
    steps: np.ndarray  # [N]
    names: list[str]  # "step 1,200 of 9,000"
    elapsed_seconds: np.ndarray  # [N]
    train_loss: np.ndarray  # [N], NaN where none was measured
    validation: dict[str, np.ndarray]  # score name -> [N], NaN where the snapshot has no validation
    entropy: dict[AttentionKind, np.ndarray]  # nats
    normalised_entropy: dict[AttentionKind, np.ndarray]  # 0-1
    roles: dict[AttentionKind, np.ndarray]  # str
    matrix_change: dict[AttentionKind, np.ndarray]  # NaN at the first snapshot
    aer: np.ndarray | None = None  # cross-attention heads; None without gold alignments
    aer_where: str = ""  # "50 copy test pairs, seed 0"
    importance: dict[AttentionKind, np.ndarray] | None = None  # per-layer normalised
    importance_where: str = ""
    onsets: list[AlignmentOnset] = field(default_factory=list)
    phase_changes: list[PhaseChange] = field(default_factory=list)
    onset_threshold: float = ONSET_THRESHOLD

    @property
    def kinds(self) -> tuple[AttentionKind, ...]:
        return tuple(self.entropy)

    def best_aer(self) -> np.ndarray:
        """[N]: the lowest AER of any cross head at each snapshot (the app's "best head" per snapshot)."""
        if self.aer is None:
            raise TimelineError("this model has no AER curve (no cross-attention, or no gold alignments)")
        return self.aer.reshape(len(self.aer), -1).min(-1)

    def best_head(self) -> tuple[int, int]:
        """(layer, head) from 0 of the best cross head at the last snapshot."""
        if self.aer is None:
            raise TimelineError("this model has no AER curve (no cross-attention, or no gold alignments)")
        layer, head = np.unravel_index(int(np.argmin(self.aer[-1])), self.aer.shape[1:])
        return int(layer), int(head)


def _statistics(traces: Sequence[SnapshotTrace]) -> tuple[dict, dict, dict, dict]:
    """entropy, normalised entropy, roles and matrix change of every kind: {kind: [N, layers, heads]}."""
    entropy: dict[AttentionKind, list] = {}
    normalised: dict[AttentionKind, list] = {}
    roles: dict[AttentionKind, list] = {}
    change: dict[AttentionKind, list] = {}
    for position, item in enumerate(traces):
        for kind, table in all_head_statistics(item.trace).items():
            entropy.setdefault(kind, []).append([[s.entropy for s in layer] for layer in table])
            normalised.setdefault(kind, []).append([[s.normalised_entropy for s in layer] for layer in table])
            roles.setdefault(kind, []).append([[s.role for s in layer] for layer in table])
            matrix = item.trace.matrix(kind)  # [layers, heads, Q, K]
            previous = traces[position - 1].trace.matrix(kind) if position else None
            change.setdefault(kind, []).append(
                np.full(matrix.shape[:2], np.nan) if previous is None else matrix_change(previous, matrix)
            )
    as_arrays = {kind: np.array(values, dtype=np.float64) for kind, values in entropy.items()}  # [N, layers, heads]
    return (
        as_arrays,
        {kind: np.array(values, dtype=np.float64) for kind, values in normalised.items()},
        {kind: np.array(values, dtype=str) for kind, values in roles.items()},
        {kind: np.array(values, dtype=np.float64) for kind, values in change.items()},
    )


NOT_SCORES = ("n", "step", "epoch")  # numbers a validation record holds that are not scores (pairs scored, when)


def _validation(source: SnapshotSource, indices: Sequence[int]) -> dict[str, np.ndarray]:
    """Every numeric validation score any chosen record holds: name -> [N], NaN where a record has none."""
    records = [source.snapshots[index] for index in indices]
    names: list[str] = []
    for record in records:
        for name, value in (record.validation or {}).items():
            score = isinstance(value, (int, float)) and not isinstance(value, bool) and name not in NOT_SCORES
            if score and name not in names:
                names.append(name)
    return {
        name: np.array([finite_or_nan((record.validation or {}).get(name)) for record in records], dtype=np.float64)
        for name in names
    }


def _importance_pairs(bundle: Bundle, options: CurveOptions) -> list[Pair]:
    """The pairs importance is measured on (the same at every snapshot); none when it is off or cannot be."""
    if not options.importance_pairs or not bundle.family.capabilities.head_importance or bundle.corpus is None:
        return []
    return measured_pairs(bundle.corpus, options.importance_pairs, options.importance_seed)


def _per_bundle(
    source: SnapshotSource, indices: Sequence[int], options: CurveOptions, progress: Callable[[int, int], None] | None
) -> tuple[np.ndarray | None, str, dict[AttentionKind, np.ndarray] | None, str]:
    """AER [N, layers, heads] and importance {kind: [N, layers, heads]} of each snapshot's model, with where each was
    measured; None for what the model cannot give."""
    aer: list[np.ndarray] = []
    importance: dict[AttentionKind, list[np.ndarray]] = {}
    where = importance_where = ""
    pairs: list[Pair] | None = None
    for done, index in enumerate(indices, start=1):
        bundle = source.bundle_at(index)
        if options.aer_pairs and aer_corpus(bundle) is not None:
            report = measured_aer(bundle, options.aer_pairs, options.aer_seed)
            if report is not None and report.n_pairs:
                aer.append(report.head_aer[0])  # [layers, heads], the predicting reading
                where = aer_where(report.corpus, report.n_pairs, report.seed)
        pairs = _importance_pairs(bundle, options) if pairs is None else pairs
        if pairs:
            measured = head_importance(bundle, pairs)
            for kind, table in measured.normalised.items():
                importance.setdefault(kind, []).append(table)  # [layers, heads]
            importance_where = f"{measured.n_sentences} fresh pairs, seed {options.importance_seed}"
        if progress is not None:
            progress(done, len(indices))
    aer_array = np.array(aer, dtype=np.float64) if len(aer) == len(indices) and aer else None
    tables = {kind: np.array(values, dtype=np.float64) for kind, values in importance.items()} if importance else None
    return aer_array, where if aer_array is not None else "", tables, importance_where


def head_curves(
    source: SnapshotSource,
    traces: Sequence[SnapshotTrace],
    options: CurveOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeadCurves:
    """The curves of the snapshots ``traces`` were decoded with (model/timeline/traces.py), in their order;
    ``progress(done, total)`` after each snapshot's models are measured."""
    if not traces:
        raise TimelineError("no snapshots to draw curves of")
    options = options or CurveOptions()
    if options.aer_pairs < 0 or options.importance_pairs < 0:
        raise TimelineError("the pairs AER and importance are measured on must be 0 (none) or more")
    indices = [item.index for item in traces]
    records = [source.snapshots[index] for index in indices]
    steps = np.array([item.step for item in traces], dtype=np.int64)  # [N]
    names = [item.name for item in traces]
    entropy, normalised, roles, change = _statistics(traces)
    aer, where, importance, importance_where = _per_bundle(source, indices, options, progress)
    measures: dict[tuple[str, AttentionKind], np.ndarray] = {("entropy", kind): values for kind, values in normalised.items()}
    measures.update({("attention", kind): values for kind, values in change.items()})
    if aer is not None:
        measures[("aer", AttentionKind.CROSS)] = aer
    return HeadCurves(
        text=traces[0].trace.source_text,
        indices=indices,
        steps=steps,
        names=names,
        elapsed_seconds=np.array([finite_or_nan(r.elapsed_seconds) for r in records], dtype=np.float64),
        train_loss=np.array([finite_or_nan(r.train_loss) for r in records], dtype=np.float64),
        validation=_validation(source, indices),
        entropy=entropy,
        normalised_entropy=normalised,
        roles=roles,
        matrix_change=change,
        aer=aer,
        aer_where=where,
        importance=importance,
        importance_where=importance_where,
        onsets=[] if aer is None else alignment_onsets(aer, indices, steps.tolist(), names, options.onset_threshold),
        phase_changes=phase_changes(measures, indices, steps.tolist(), options.top_changes),
        onset_threshold=options.onset_threshold,
    )
