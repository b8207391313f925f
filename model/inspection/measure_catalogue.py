"""The registry of readings a view can colour by: raw attention weights and the contribution measures of
model/attribution/, each one registered class (as Captum and Inseq register their methods).

A measure's class says everything about it: its name (what the command line and files call it), its label and a
line on how it is computed (tooltips, captions), what it needs (the family's contribution-measures capability,
backward passes), the kinds it defines and how its maps are laid out (per head, per layer, rolled out, one map in
all), and ``compute``, how it reads a decoded sentence. ``@register_measure`` makes it known to every reader: the
window's Reading box, ``attribute --measure``, ``heads --measures``, the AER table and the report card's methods.
Adding a measure is one such class in one file; the app's own are in model/attribution/builtin_measures.py,
registered when model/attribution/measures.py (the one call that computes any of them) is imported.

This module is plain data and NumPy, below the code that computes, so that selections, titles and captions read a
measure's facts without importing that code. ``MEASURES``, ``NAMES`` and ``CONTRIBUTIONS`` are live views of the
registry, in registration order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, overload

import numpy as np

from model.kinds import AttentionKind
from model.network import Network

ENCODER, DECODER, CROSS = AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS
ALL_KINDS = (ENCODER, DECODER, CROSS)


@dataclass(frozen=True)
class MeasureInputs:
    """The decoded sentence a measure reads, teacher-forced on its own tokens."""

    source_ids: list[int]  # the source pieces, </s> last
    chosen_ids: list[int]  # the decoded tokens: step t produced chosen_ids[t]
    steps: list[int] | None = None  # saliency: only these predictions (the others' rows stay 0)
    max_points: int | None = None  # integrated gradients: each prediction's cap on gradient points (None: the app's)
    # Called with (parts done, parts in all) as a long measure goes (value zeroing: after each layer); it may raise to
    # stop the computation (a superseded request in the window).
    progress: Callable[[int, int], None] | None = None
    # Called before each batch of a gradient measure's passes (integrated gradients: a row takes seconds on a long
    # sentence); it may raise to stop the computation there.
    between_batches: Callable[[], None] | None = None


@dataclass
class MeasureResult:
    measure: str
    values: dict[AttentionKind, np.ndarray]  # raw values [layers, heads, queries, keys] per kind it defines
    shares: dict[AttentionKind, np.ndarray]  # what views draw: non-negative, rows at most 1
    source_share: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # [T] ALTI+ and saliency
    # Integrated gradients, per prediction [T]: the completeness gap (NaN where not computed), the points used,
    # whether the integration converged (model/attribution/integration.py); empty for every other measure.
    completeness_gap: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    integration_points: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    integration_converged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))


class Measure:
    """One reading of a decoded sentence. A subclass sets the class attributes and ``compute``, and is decorated with
    ``register_measure``."""

    name: ClassVar[str] = ""  # what the command line and files call it
    label: ClassVar[str] = ""  # what a person reads
    what: ClassVar[str] = ""  # one line: how it is computed (tooltips, captions)
    kinds: ClassVar[tuple[AttentionKind, ...]] = ALL_KINDS  # the kinds it defines
    why_not: ClassVar[str] = ""  # why a kind it does not define is missing
    # The kinds it defines on an encoder-only model, when they differ (a saliency: the head's predictions over the
    # text, as encoder self-attention's rows); None: ``kinds``
    text_kinds: ClassVar[tuple[AttentionKind, ...] | None] = None
    # A kind of attention it cannot be computed without (ALTI+ and Shift-Att read cross-attention), and why
    requires: ClassVar[AttentionKind | None] = None
    requires_why: ClassVar[str] = ""
    per_head: ClassVar[bool] = False  # False: one map per layer (or one in all)
    rollout: ClassVar[bool] = False  # layer l reads through layers 1..l
    single: ClassVar[bool] = False  # one map in all, not per layer
    gradient: ClassVar[bool] = False  # needs backward passes (slower: computed in a worker)
    needs_capability: ClassVar[bool] = True  # needs the family's contribution_measures capability
    weights: ClassVar[bool] = False  # the raw attention weights themselves: a measured trace is the trace as it is
    # The reading of raw cross-attention it is ("predicting" or "input": model/inspection/alignment.py's READINGS), so
    # that the AER table takes its AER from that computation; "" for a measure the table reads through ``compute``.
    aer_reading: ClassVar[str] = ""

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        """The measure of ``inputs`` under ``model`` (a model whose family it supports: ``unsupported`` checked)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it is computed")


_REGISTRY: dict[str, type[Measure]] = {}
MEASURES: Mapping[str, type[Measure]] = MappingProxyType(_REGISTRY)  # name -> class, live, in registration order


def register_measure(cls: type[Measure]) -> type[Measure]:
    """Make ``cls`` a measure every reader offers, by its name (a class decorator)."""
    if not (cls.name and cls.label and cls.what):
        raise ValueError(f"{cls.__name__} needs a name, a label and a line on what it is to be registered")
    known = _REGISTRY.get(cls.name)
    if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"a measure named {cls.name!r} is registered already ({known.__qualname__})")
    _REGISTRY[cls.name] = cls
    return cls


def unregister_measure(name: str) -> None:
    """Forget measure ``name`` (nothing when it is not registered)."""
    _REGISTRY.pop(name, None)


def measure_names(contributions: bool = False) -> tuple[str, ...]:
    """The registered measures' names in registration order; ``contributions``: only those beyond the raw weights."""
    return tuple(name for name, cls in _REGISTRY.items() if not (contributions and cls.weights))


class RegisteredNames(Sequence[str]):
    """A live, read-only sequence of the registered measures' names (``measure_names``): a measure registered later is
    in it."""

    def __init__(self, contributions: bool = False) -> None:
        self._contributions = contributions

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return measure_names(self._contributions)[index]

    def __len__(self) -> int:
        return len(measure_names(self._contributions))

    def __repr__(self) -> str:
        return repr(measure_names(self._contributions))


NAMES = RegisteredNames()  # every measure, the raw weights first
CONTRIBUTIONS = RegisteredNames(contributions=True)  # every measure beyond raw attention
