"""Grading: every method's maps of every pair, the evidence the metrics read, the sanity checks, and the card.

``grade`` runs each pair through every method (model/grading/methods.py, baselines.py), sends every curve of every
method of the pair to the scorer at once (batched, remembered), compares each map with leave-one-out's and with the
gold alignment, then randomises the model stage by stage (and reads the shuffled-target model, when given) on the
first ``sanity_pairs`` pairs. ``progress(stage, done, total)`` hears each pair and each sanity stage; ``check()`` is
called between batches and may raise to stop (the window's cancel).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

import numpy as np

from model.data.corpora import CorpusSpec, Pair
from model.family import Bundle
from model.grading import faithfulness
from model.grading.baselines import LeaveOneOut, cannot_hide
from model.grading.card import PERTURBATION, MethodRow, ReportCard
from model.grading.cases import GradedPair, check_gradable, graded_pairs, knows_positions
from model.grading.ground_truth import alignment_evidence
from model.grading.methods import METHODS, AttributionMethod, MethodMaps, MethodSettings, Reading, method_names
from model.grading.metrics import METRICS, Cell, PairEvidence
from model.grading.sanity import SanityResult, cascade, cascade_stages, map_similarity
from model.grading.scoring import scorer_for
from model.grading.text_cases import TextCase, decisions_phrase, text_cases

Progress = Callable[[str, int, int], None]
PAIRS, SANITY = "sentences", "sanity"  # the stages progress names


@dataclass(frozen=True)
class CardSettings:
    methods: tuple[str, ...] = ()  # () = every registered method
    method_settings: MethodSettings = field(default_factory=MethodSettings)
    sanity_pairs: int = 10  # pairs the sanity checks read (0: none)
    shuffled: Any = None  # a bundle trained on shuffled targets: the data randomisation check (None: not run)
    shuffled_note: str = ""  # what it is ("600 steps on shuffled toy-fr targets")


@dataclass
class _Collected:
    """What the pairs gave, per method."""

    evidence: dict[str, list[PairEvidence]] = field(default_factory=dict)
    deletion: dict[str, list[np.ndarray]] = field(default_factory=dict)  # curves on the grid, per step
    insertion: dict[str, list[np.ndarray]] = field(default_factory=dict)
    converged: dict[str, list[bool]] = field(default_factory=dict)
    sanity_maps: list[dict[str, MethodMaps]] = field(default_factory=list)


def grade(
    bundle: Bundle,
    pairs: list[Pair],
    settings: CardSettings = CardSettings(),
    corpus: CorpusSpec | None = None,
    model_name: str = "",
    progress: Progress | None = None,
    check: Callable[[], None] | None = None,
) -> ReportCard:
    """The report card of ``bundle`` on ``pairs`` (drawn from ``corpus``: see the module's docstring)."""
    check_gradable(bundle)
    architecture = bundle.family.capabilities.architecture
    if not architecture.has_decoder:
        cases = text_cases(bundle, pairs)
        origin = corpus.describe() if corpus is not None else "the given texts"
        described = f"{origin} (each text's {decisions_phrase(cast(TextCase, cases[0]))})"
        return grade_cases(bundle, cases, settings, corpus, model_name, progress, check, described)
    described = ""
    if corpus is not None and not architecture.has_encoder:
        described = f"{corpus.describe()} (each sentence's second half, continued from its first)"
    return grade_cases(bundle, graded_pairs(bundle, pairs), settings, corpus, model_name, progress, check, described)


def grade_cases(
    bundle: Bundle,
    cases: list[GradedPair],
    settings: CardSettings = CardSettings(),
    corpus: CorpusSpec | None = None,
    model_name: str = "",
    progress: Progress | None = None,
    check: Callable[[], None] | None = None,
    described: str = "",
) -> ReportCard:
    """The report card of ``bundle`` on ``cases`` as the model reads them (``described``: what they are, by default
    ``corpus``'s description)."""
    check_gradable(bundle)
    report = progress or (lambda stage, done, total: None)
    check = check or (lambda: None)
    methods = [METHODS[name]() for name in (settings.methods or method_names())]
    collected, timings = _Collected(), dict[str, float]()
    model = bundle.model.eval()
    for index, case in enumerate(cases):
        report(PAIRS, index, len(cases))
        maps = _grade_pair(
            bundle,
            Reading(model, case, scorer_for(model, case, check), settings.method_settings, index),
            methods,
            collected,
            timings,
        )
        if index < settings.sanity_pairs:
            collected.sanity_maps.append(maps)
    report(PAIRS, len(cases), len(cases))
    started = time.perf_counter()
    stages, sanity = _sanity(bundle, methods, cases[: settings.sanity_pairs], collected.sanity_maps, settings, report, check)
    timings["sanity"] = time.perf_counter() - started
    card = ReportCard(
        model_name or bundle.describe(),
        described or (corpus.describe() if corpus is not None else "the given pairs"),
        len(cases),
        sum(case.n_steps for case in cases),
        [_row(bundle, m, collected, sanity, corpus, cases, settings.method_settings.ig_points) for m in methods],
        list(METRICS),
        stages,
        settings.shuffled_note if settings.shuffled is not None else "",
        timings,
        removal=f"none ({cannot_hide(bundle)})" if cannot_hide(bundle) else _perturbation(bundle),
        **_card_words(bundle, cases[0] if cases else None),
    )
    card.mark_best()
    return card


def _perturbation(bundle: Bundle) -> str:
    """How the card hides a piece: by the pad id, or a decoder-only or encoder-only model's attention mask."""
    architecture = bundle.family.capabilities.architecture
    if not architecture.has_decoder:
        return "pieces hidden in place (masked from every position, their ids the mask or pad token's; positions kept)"
    if architecture.has_encoder:
        return PERTURBATION
    return "pieces hidden in place by the attention mask (their ids kept, positions kept)"


def _card_words(bundle: Bundle, case: GradedPair | None) -> CardWords:
    """What the card's pieces, predictions and score are called for ``bundle``'s family."""
    architecture = bundle.family.capabilities.architecture
    if not architecture.has_decoder and case is not None:  # an encoder-only model's text: its head's decisions
        case = cast(TextCase, case)
        where = "each piece" if case.per_piece else "the sentence"
        score = f"p(the model's own {case.predicted}) for {where}, read by its head on the text"
        return {"pieces": "text", "predicted": case.predicted, "score": score}
    return {"pieces": "source" if architecture.has_encoder else "prompt"}


class CardWords(TypedDict, total=False):
    """The card's words for a family (``ReportCard``'s fields of the same names)."""

    pieces: str
    predicted: str
    score: str


def _prefix_reason(method: AttributionMethod, bundle: Bundle) -> str:
    """Why ``method`` has no map over ``bundle``'s target prefix ('' when it has one)."""
    if not bundle.family.capabilities.architecture.has_decoder:
        return "an encoder-only model reads no target prefix"
    return method.prefix_unsupported(bundle)


def _maps(method: AttributionMethod, bundle: Bundle, reading: Reading) -> MethodMaps:
    """The method's maps, less those it does not define for this model."""
    if method.source_unsupported(bundle) and _prefix_reason(method, bundle):
        return MethodMaps()
    maps = method.maps(reading)
    if method.source_unsupported(bundle):
        maps.source = None
    if _prefix_reason(method, bundle):
        maps.prefix = None
    return maps


def _grade_pair(bundle: Bundle, reading: Reading, methods: list[AttributionMethod], collected: _Collected, timings: dict) -> dict:
    """One pair through every method: its maps (timed per method), curves, τ and alignment evidence collected."""
    found: dict[str, MethodMaps] = {}
    for method in methods:
        started = time.perf_counter()
        found[method.name] = _maps(method, bundle, reading)
        timings[method.name] = timings.get(method.name, 0.0) + time.perf_counter() - started
    started = time.perf_counter()
    reference = found.get(LeaveOneOut.name) or _maps(LeaveOneOut(), bundle, reading)
    hiding = not cannot_hide(bundle)
    curves = faithfulness.curves(reading.scorer, {n: m.source for n, m in found.items() if m.source is not None}) if hiding else {}
    for name, maps in found.items():
        evidence = _evidence(reading.case, maps, reference, curves.get(name))
        collected.evidence.setdefault(name, []).append(evidence)
        if name in curves:
            for deletion, insertion in zip(*curves[name]):
                if np.all(np.isfinite(deletion)):
                    collected.deletion.setdefault(name, []).append(faithfulness.on_grid(deletion))
                    collected.insertion.setdefault(name, []).append(faithfulness.on_grid(insertion))
        collected.converged.setdefault(name, []).extend(maps.converged)
    timings["faithfulness"] = timings.get("faithfulness", 0.0) + time.perf_counter() - started
    return found


def _evidence(case: GradedPair, maps: MethodMaps, reference: MethodMaps, curves) -> PairEvidence:
    source = maps.source
    broken = ~np.all(np.isfinite(source), axis=1) if source is not None else np.zeros(case.n_steps, bool)
    evidence = PairEvidence(broken)
    if curves is not None:
        evidence.deletion, evidence.insertion = curves
    if source is not None and reference.source is not None:
        evidence.loo_tau = faithfulness.tau_rows(source, reference.source)
        if broken.any():
            evidence.alignment_failed = case.groups is not None
        else:
            evidence.alignment = alignment_evidence(case, source)
    if maps.prefix is not None and reference.prefix is not None:
        evidence.prefix_tau = faithfulness.tau_rows(maps.prefix, reference.prefix, first=1)
    return evidence


def _reason(metric_needs: str, method: AttributionMethod, bundle: Bundle, corpus: CorpusSpec | None, cases) -> str:
    """Why a column does not apply to a method ('' when it does)."""
    if metric_needs == "prefix":
        return _prefix_reason(method, bundle)
    reason = method.source_unsupported(bundle)
    if reason:
        return reason
    if metric_needs == "hiding":
        return cannot_hide(bundle)
    if metric_needs in ("gold", "positions") and not bundle.family.capabilities.architecture.has_decoder:
        return "an encoder-only model translates nothing: no word alignment or source position to compare with"
    if metric_needs == "gold" and not any(case.groups is not None for case in cases):
        return "the pairs have no gold word alignment"
    if metric_needs == "positions" and (corpus is None or not knows_positions(corpus)):
        return "the correct source position is known on copy, reverse and sort only"
    return ""


def _row(
    bundle: Bundle, method: AttributionMethod, collected: _Collected, sanity: dict, corpus, cases, ig_points: int
) -> MethodRow:
    row = MethodRow(method.name, method.label, method.what, method.baseline, method.reads_model)
    evidence = collected.evidence.get(method.name, [])
    for name, metric_class in METRICS.items():
        metric = metric_class()
        reason = _reason(metric.needs, method, bundle, corpus, cases)
        if reason:
            row.cells[name] = Cell(reason=reason)
        elif method.reference and name.startswith("tau_"):
            row.cells[name] = Cell(reference=True, reason="leave-one-out is the reference of this column")
        else:
            row.cells[name] = metric.cell(evidence)
    if method.name in collected.deletion:
        row.deletion_curve = np.mean(collected.deletion[method.name], axis=0)
        row.insertion_curve = np.mean(collected.insertion[method.name], axis=0)
    row.fractions = _fractions(evidence)
    row.sanity, row.sanity_reason = sanity.get(method.name, (None, ""))
    converged = collected.converged.get(method.name, [])
    if converged:
        row.note = f"integration converged at {sum(converged)} of {len(converged)} predictions within {ig_points} points"
    return row


def _fractions(evidence: list[PairEvidence]) -> dict[str, list[float | None]]:
    """Comprehensiveness and sufficiency at each fraction: the mean over the steps whose map is finite."""
    comprehensive, sufficient = [], []
    for pair in evidence:
        if pair.deletion is None or pair.insertion is None:
            continue
        good = ~pair.broken
        comprehensive.append(faithfulness.comprehensiveness(pair.deletion)[good])
        sufficient.append(faithfulness.sufficiency(pair.deletion, pair.insertion)[good])
    if not comprehensive:
        return {}

    def means(tables: list[np.ndarray]) -> list[float | None]:
        stacked = np.concatenate(tables)
        return [float(v) for v in stacked.mean(0)] if len(stacked) else [None] * len(faithfulness.FRACTIONS)

    return {"comprehensiveness": means(comprehensive), "sufficiency": means(sufficient)}


def _sanity(bundle, methods, cases, trained: list[dict], settings: CardSettings, report: Progress, check):
    """(the cascade's stage names, {method: (SanityResult or None, why none)})."""
    results: dict[str, tuple[SanityResult | None, str]] = {}
    checked = []
    for method in methods:
        if not method.reads_model:
            results[method.name] = (None, "the random order does not read the model")
        elif not cases or all(maps[method.name].source is None and maps[method.name].prefix is None for maps in trained):
            results[method.name] = (None, "not measured" if not cases else "no map to compare")
        else:
            results[method.name] = (SanityResult(), "")
            checked.append(method)
    if not checked:
        return [], results
    stages = cascade_stages(bundle.model, cases[0])
    total = len(stages) + (settings.shuffled is not None)
    for number, (_, randomised) in enumerate(cascade(bundle.model, stages, settings.method_settings.seed)):
        report(SANITY, number, total)
        for name, (mean, failure) in _similarities(bundle, randomised, checked, cases, trained, settings, check).items():
            result = results[name][0]
            assert result is not None
            result.cascade.append(mean)
            if failure and failure not in result.failures:
                result.failures.append(failure)
    if settings.shuffled is not None:
        report(SANITY, len(stages), total)
        shuffled = settings.shuffled.model.eval()
        for name, (mean, failure) in _similarities(bundle, shuffled, checked, cases, trained, settings, check).items():
            result = results[name][0]
            assert result is not None
            result.data = mean
            if failure and failure not in result.failures:
                result.failures.append(failure)
    report(SANITY, total, total)
    return [stage.name for stage in stages], results


def _similarities(
    bundle, model, methods, cases, trained: list[dict], settings: CardSettings, check
) -> dict[str, tuple[float, str]]:
    """Each method's mean similarity over the pairs to its trained maps under ``model``, and a failure's cause."""
    found: dict[str, list[float]] = {method.name: [] for method in methods}
    for index, (case, maps) in enumerate(zip(cases, trained)):
        reading = Reading(model, case, scorer_for(model, case, check), settings.method_settings, index)
        for method in methods:
            before = maps[method.name]
            after = _maps(method, bundle, reading)
            pick = (lambda m: m.source) if before.source is not None else (lambda m: m.prefix)
            found[method.name].append(map_similarity(pick(before), pick(after)))
    result = {}
    for name, values in found.items():
        finite = [value for value in values if np.isfinite(value)]
        failure = "" if len(finite) == len(values) else f"{len(values) - len(finite)} map(s) constant or not finite"
        result[name] = (float(np.mean(finite)) if finite else float("nan"), failure)
    return result
