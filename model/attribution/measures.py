"""Every reading of a decoded sentence the views can show instead of raw attention weights, behind one call.

``compute_measure`` runs one registered measure (model/inspection/measure_catalogue.py; the app's own in
model/attribution/builtin_measures.py, registered by importing this module) over a sentence and its decoded tokens
(teacher-forced, the model's own weights, heads knocked out included) and returns a ``MeasureResult``: the raw values
per kind [layers, heads, queries, keys] (``.npz`` exports keep them) and the *shares* the views draw — non-negative,
each row a distribution or part of one, so every view, word grouping, AER reading and colour scale made for
attention works on them unchanged. ``measured_trace`` puts the shares in a Trace's place of the weights.

A kind a measure does not define is None in the measured trace, and ``unsupported`` says why (the window's menu
disables the choice with that as its tooltip).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

import model.attribution.builtin_measures  # noqa: F401 - registers the app's measures: whoever computes one has them
from model.attribution.integration import gap_percent, integration_text
from model.decoding.trace import Trace
from model.family import QueriesKeys, capabilities_of
from model.inspection.measure_catalogue import (
    CONTRIBUTIONS,
    MEASURES,
    NAMES,
    Measure,
    MeasureInputs,
    MeasureResult,
    measure_names,
    register_measure,
    unregister_measure,
)
from model.kinds import AttentionKind
from model.network import Network

__all__ = [
    "CONTRIBUTIONS",
    "MEASURES",
    "NAMES",
    "Measure",
    "MeasureError",
    "MeasureInputs",
    "MeasureResult",
    "compute_measure",
    "integration_note",
    "measure_caption",
    "measure_names",
    "measured_trace",
    "merge_rows",
    "register_measure",
    "trace_measure",
    "unregister_measure",
    "unsupported",
]  # the registry (model/inspection/measure_catalogue.py), filled with the app's measures, and the code that runs them


class MeasureError(ValueError):
    """A measure asked of a model or kind that does not define it."""


def unsupported(model: Network, name: str, kind: AttentionKind | None = None) -> str:
    """Why ``model`` cannot show measure ``name`` (for ``kind``), or '' when it can."""
    measure = MEASURES[name]
    can = capabilities_of(model)
    if measure.needs_capability and not can.contribution_measures:
        if can.queries_keys is QueriesKeys.NONE:  # an RNN's attention: a score of a state against annotations
            return f"{measure.label} reads each head's value vectors; this model's attention has no heads or value vectors"
        return f"{measure.label} is computed for the models whose measured pass is known, not for this model"
    text = not can.architecture.has_decoder and measure.text_kinds is not None  # an encoder-only model's own kinds
    kinds = measure.text_kinds if text and measure.text_kinds is not None else measure.kinds
    if measure.requires is not None and measure.requires not in can.kinds and not text:
        return f"{measure.label} needs {measure.requires.label}, which this model has not: {measure.requires_why}"
    if not set(kinds) & set(can.kinds):
        return f"{measure.label} has none of this model's kinds of attention: {measure.why_not}"
    if kind is not None and kind not in kinds:
        return f"{measure.label} has no {kind.label}: {measure.why_not}"
    return ""


def compute_measure(
    model: Network,
    source_ids: list[int],  # the source pieces, </s> last
    chosen_ids: list[int],  # the decoded tokens: step t produced chosen_ids[t]
    name: str,
    steps: list[int] | None = None,  # saliency: only these predictions (the others' rows stay 0)
    max_points: int | None = None,  # integrated gradients: each prediction's cap on gradient points (None: the app's)
    progress: Callable[[int, int], None] | None = None,  # (done, total) as a long measure goes: MeasureInputs.progress
    between_batches: Callable[[], None] | None = None,  # before each batch of gradient passes: MeasureInputs's
) -> MeasureResult:
    """Measure ``name`` of the decoded sentence (see the module's docstring)."""
    if name not in MEASURES:
        raise MeasureError(f"the measure is one of {', '.join(NAMES)}, not {name!r}")
    reason = unsupported(model, name)
    if reason:
        raise MeasureError(reason)
    return MEASURES[name]().compute(
        model, MeasureInputs(list(source_ids), list(chosen_ids), steps, max_points, progress, between_batches)
    )


def merge_rows(first: MeasureResult, second: MeasureResult, steps: list[int]) -> MeasureResult:
    """``first`` with the rows of ``steps`` taken from ``second`` (a saliency computed a few steps at a time, or
    for a longer decoding with the same prefix: a row reads no key after its own step)."""
    for table, other in ((first.values, second.values), (first.shares, second.shares)):
        for kind, array in table.items():
            n_keys = min(array.shape[-1], other[kind].shape[-1])
            array[..., steps, :n_keys] = other[kind][..., steps, :n_keys]
    for mine, theirs in (
        (first.source_share, second.source_share),
        (first.completeness_gap, second.completeness_gap),
        (first.integration_points, second.integration_points),
        (first.integration_converged, second.integration_converged),
    ):
        if len(mine):
            mine[steps] = theirs[steps]
    return first


def measure_caption(trace: Trace) -> str:
    """A figure caption's line saying what the colours are, with the source share of the last prediction."""
    measure = MEASURES[trace.measure]
    line = f"Colours: {measure.label} — {measure.what}; each row as shares"
    shares = trace.source_share[~np.isnan(trace.source_share)] if len(trace.source_share) else trace.source_share
    if len(shares):
        line += f"; last prediction: {shares[-1]:.0%} from the source, {1 - shares[-1]:.0%} from the target prefix"
    return line


def integration_note(trace: Trace) -> str:
    """For a trace of integrated gradients: the last prediction's completeness gap, points and convergence, and a
    warning naming every prediction whose integration did not converge ('' for any other trace)."""
    gaps = trace.completeness_gap
    computed = ~np.isnan(gaps) if len(gaps) else np.zeros(0, bool)
    if not computed.any():
        return ""
    last = int(np.flatnonzero(computed)[-1])
    points, converged = int(trace.integration_points[last]), bool(trace.integration_converged[last])
    note = f"step {last + 1}: {integration_text(float(gaps[last]), points, converged)}"
    failed = np.flatnonzero(computed & ~trace.integration_converged)
    if len(failed) and not (len(failed) == 1 and failed[0] == last):
        worst = float(gaps[failed].max())
        listed = ", ".join(str(step + 1) for step in failed)
        note += f"; NOT CONVERGED at step{'s' if len(failed) > 1 else ''} {listed} (gap up to {gap_percent(worst)}): approximate"
    return note


def measured_trace(trace: Trace, result: MeasureResult) -> Trace:
    """``trace`` with the measure's shares in place of the attention weights (a kind the measure does not
    define becomes None) and its source share per prediction."""
    if MEASURES[result.measure].weights:
        return trace

    def shares(kind: AttentionKind) -> np.ndarray | None:
        return result.shares.get(kind) if trace.has(kind) else None

    n = trace.n_steps
    return replace(
        trace,
        encoder_self=shares(AttentionKind.ENCODER),
        decoder_self=shares(AttentionKind.DECODER),
        cross=shares(AttentionKind.CROSS),
        measure=result.measure,
        source_share=result.source_share[:n],
        completeness_gap=result.completeness_gap[:n],
        integration_points=result.integration_points[:n],
        integration_converged=result.integration_converged[:n],
    )


def trace_measure(
    model: Network,
    source_ids: list[int],
    trace: Trace,
    name: str,
    steps: list[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MeasureResult:
    """``compute_measure`` of the sentence a trace decoded, for its own tokens (the hypothesis it follows)."""
    return compute_measure(model, source_ids, [int(i) for i in trace.chosen_ids], name, steps, progress=progress)
