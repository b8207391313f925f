"""The attribution methods a report card grades, each a small registered class (as Inseq registers its methods).

A method reads one pair and gives its *maps*: for each graded step, a score per source piece (``source`` [T, S],
higher = more important) and, when it has one, per decoder input (``prefix`` [T, T], column 0 being <s>, NaN past the
step). A new method plugs in by subclassing ``AttributionMethod`` and decorating it with ``register_method``.

Every registered measure (model/inspection/measure_catalogue.py) is a method with nothing more to write: ``METHODS``
holds one ``MeasureMethod`` per measure registered now, then the methods registered here (the baselines). They are
read as the app draws them, through their shares: a measure
per head (attention, norm-based, Shift-Att) or per layer (value zeroing) as the mean over its layers and heads, a
rolled-out one (ALTI, ALTI+, attention × gradient) at its last layer (it reads through them all), a saliency (gradient
× input, integrated gradients) as its one map — integrated gradients with at most ``ig_points`` gradient points per
prediction (each prediction's convergence counted). A measure that defines no cross-attention reading (ALTI) has no
source map: its source columns are "—" with the reason, and its prefix map is still graded.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np

from model.attribution.measures import MEASURES, Measure, compute_measure, unsupported
from model.family import Bundle, capabilities_of
from model.grading.cases import GradedPair
from model.grading.scoring import PairScorer
from model.grading.text_cases import TextCase
from model.kinds import AttentionKind
from model.network import Network

CARD_IG_POINTS = 129  # integrated gradients in a card: the adaptive rule's first 129 points per prediction, no more


@dataclass(frozen=True)
class MethodSettings:
    """How the methods that sample or integrate are run."""

    ig_points: int = CARD_IG_POINTS  # integrated gradients: gradient points per prediction at most
    lime_samples: int = 64  # LIME: perturbed sources per pair (the same ones for every step)
    shap_samples: int = 64  # KernelSHAP: coalitions per pair (the same ones for every step)
    seed: int = 0  # LIME's and KernelSHAP's samples, the random order


@dataclass
class Reading:
    """What a method read of one pair under one model (the model graded, or a randomised copy for the sanity checks)."""

    model: Any
    case: GradedPair
    scorer: PairScorer
    settings: MethodSettings
    index: int = 0  # the pair's number in the card (seeds the random order)


@dataclass
class MethodMaps:
    source: np.ndarray | None = None  # [T, S]
    prefix: np.ndarray | None = None  # [T, T] over the decoder inputs
    converged: list[bool] = field(default_factory=list)  # integrated gradients: per step


class AttributionMethod:
    """One attribution method: its name (the command line's and the CSV's), its label and a line on what it is."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    what: ClassVar[str] = ""
    baseline: ClassVar[bool] = False  # a perturbation baseline (or the random order), not one of the app's measures
    reads_model: ClassVar[bool] = True  # False for the random order: randomising the model cannot change it
    reference: ClassVar[bool] = False  # leave-one-out: the reference the τ columns compare with

    def source_unsupported(self, bundle: Bundle) -> str:
        """Why it has no map over the source pieces of ``bundle``'s predictions ('' when it has one)."""
        return ""

    def prefix_unsupported(self, bundle: Bundle) -> str:
        """Why it has no map over the target prefix ('' when it has one)."""
        return ""

    def maps(self, reading: Reading) -> MethodMaps:
        raise NotImplementedError


def reduced(shares: np.ndarray, rolled_out: bool) -> np.ndarray:
    """A measure's shares [layers, heads, queries, keys] as one map [queries, keys]: the last layer of a rollout, else
    the mean over layers and heads."""
    return shares[-1].mean(0) if rolled_out else shares.mean((0, 1))


def source_kind(model: Network) -> AttentionKind:
    """The attention whose map reads the source: cross-attention, a decoder-only model's self-attention (its prompt is
    the start of what its decoder reads), or an encoder-only model's self-attention (its text)."""
    architecture = capabilities_of(model).architecture
    if not architecture.has_decoder:
        return AttentionKind.ENCODER
    return AttentionKind.CROSS if architecture.has_encoder else AttentionKind.DECODER


class MeasureMethod(AttributionMethod):
    """A registered measure, read through ``compute_measure`` (``measure_method`` makes one per measure)."""

    measure: ClassVar[str] = ""

    def source_unsupported(self, bundle: Bundle) -> str:
        return unsupported(bundle.model, self.measure, source_kind(bundle.model))

    def prefix_unsupported(self, bundle: Bundle) -> str:
        return unsupported(bundle.model, self.measure, AttentionKind.DECODER)

    def maps(self, reading: Reading) -> MethodMaps:
        case, model = reading.case, reading.model
        if not capabilities_of(model).architecture.has_decoder:  # an encoder-only model's text (model/grading/text_cases.py)
            return self._text_maps(cast(TextCase, case), reading)
        has_encoder = capabilities_of(model).architecture.has_encoder
        # what the model decodes: the reference (a decoder-only model's prompt given first, then its continuation)
        chosen = case.target_ids[1:] if has_encoder else case.source_ids[1:] + case.target_ids[1:]
        result = compute_measure(model, case.source_ids, chosen, self.measure, max_points=reading.settings.ig_points)
        rolled_out, n, s = MEASURES[self.measure].rollout, case.n_steps, case.n_source
        first = 0 if has_encoder else s  # a decoder-only model's graded steps: its rows from the prompt's last piece
        reading_source, decoder = result.shares.get(source_kind(model)), result.shares.get(AttentionKind.DECODER)
        source = (
            reduced(reading_source, rolled_out)[first : first + n, :s].astype(np.float64) if reading_source is not None else None
        )
        prefix = None
        if decoder is not None:
            prefix = reduced(decoder, rolled_out)[first : first + n, first : first + n].astype(np.float64)
            prefix[np.triu_indices(n, k=1)] = np.nan  # inputs after the step: not read
        converged = result.integration_converged[first : first + n]
        return MethodMaps(source, prefix, [bool(c) for c in converged])

    def _text_maps(self, case: TextCase, reading: Reading) -> MethodMaps:
        """An encoder-only model's map [T, S]: each prediction's rows of its self-attention map (their mean), over the
        graded pieces."""
        result = compute_measure(reading.model, case.source_ids, [], self.measure, max_points=reading.settings.ig_points)
        whole = reduced(result.shares[AttentionKind.ENCODER], MEASURES[self.measure].rollout)  # [S', S']
        graded = slice(case.lead, case.lead + case.n_source)
        source = np.stack([whole[rows].mean(0)[graded] for rows in case.rows]).astype(np.float64)  # [T, S]
        return MethodMaps(source, None, [bool(c) for c in result.integration_converged[: case.n_steps]])


_MEASURE_METHODS: dict[type[Measure], type[AttributionMethod]] = {}


def measure_method(measure: type[Measure]) -> type[AttributionMethod]:
    """The method that grades ``measure`` (one class per measure class, made once)."""
    if measure not in _MEASURE_METHODS:
        facts = {"measure": measure.name, "name": measure.name, "label": measure.label, "what": measure.what}
        _MEASURE_METHODS[measure] = type(f"{measure.__name__}Method", (MeasureMethod,), facts)
    return _MEASURE_METHODS[measure]


class _Methods(MutableMapping[str, type[AttributionMethod]]):
    """name -> method: one per measure registered now (model/inspection/measure_catalogue.py), then the ones registered
    with ``register_method`` (a baseline, or a test's method; one of the same name as a measure stands for it)."""

    def __init__(self) -> None:
        self._registered: dict[str, type[AttributionMethod]] = {}

    def _all(self) -> dict[str, type[AttributionMethod]]:
        return {name: measure_method(measure) for name, measure in MEASURES.items()} | self._registered

    def __getitem__(self, name: str) -> type[AttributionMethod]:
        return self._all()[name]

    def __setitem__(self, name: str, method: type[AttributionMethod]) -> None:
        self._registered[name] = method

    def __delitem__(self, name: str) -> None:
        del self._registered[name]  # a measure's method goes with the measure (unregister_measure)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


METHODS: MutableMapping[str, type[AttributionMethod]] = _Methods()


def register_method(cls: type[AttributionMethod]) -> type[AttributionMethod]:
    """Make ``cls`` a method report cards can grade, by its name."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name to register it by")
    METHODS[cls.name] = cls
    return cls


def method_names() -> tuple[str, ...]:
    """Every registered method, the app's measures first."""
    names = list(METHODS)
    return tuple(sorted(names, key=lambda name: (METHODS[name].baseline, names.index(name))))
