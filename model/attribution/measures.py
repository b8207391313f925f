"""Every reading of a decoded sentence the views can show instead of raw attention weights, behind one call.

``compute_measure`` runs one measure over a sentence and its decoded tokens (teacher-forced, the model's own
weights, heads knocked out included) and returns a ``MeasureResult``: the raw values per kind
[layers, heads, queries, keys] (``.npz`` exports keep them) and the *shares* the views draw — non-negative,
each row a distribution or part of one, so every view, word grouping, AER reading and colour scale made for
attention works on them unchanged. ``measured_trace`` puts the shares in a Trace's place of the weights.

A measure defined per head has the model's heads; one defined per layer (ALTI, value zeroing, the gradient
rollouts) has one "head"; a rollout's layer l reads through layers 1..l; saliency has one map in all. A kind a
measure does not define is None in the measured trace, and ``unsupported`` says why (the window's menu
disables the choice with that as its tooltip).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
import torch

from model.attribution.alti import alti_plus, decoder_rollout, encoder_rollout
from model.attribution.gradients import attention_gradient, saliency
from model.attribution.integration import gap_percent, integration_text
from model.attribution.norms import norm_contributions
from model.attribution.passes import token_pass
from model.attribution.value_zeroing import value_zeroing
from model.family import Network, family_of
from model.inspection.measure_catalogue import ALL_KINDS, CONTRIBUTIONS, CROSS, DECODER, ENCODER, MEASURES, NAMES, Measure
from model.kinds import AttentionKind
from model.nn.transformer import Transformer

__all__ = [
    "CONTRIBUTIONS",
    "MEASURES",
    "NAMES",
    "Measure",
    "MeasureError",
    "MeasureResult",
    "compute_measure",
    "integration_note",
    "measure_caption",
    "measured_trace",
    "merge_rows",
    "trace_measure",
    "unsupported",
]  # the catalogue (model/inspection/measure_catalogue.py) with the code that computes it


class MeasureError(ValueError):
    """A measure asked of a model or kind that does not define it."""


def unsupported(model: Network, name: str, kind: AttentionKind | None = None) -> str:
    """Why ``model`` cannot show measure ``name`` (for ``kind``), or '' when it can."""
    measure = MEASURES[name]
    if name == "attention":
        return ""
    if not family_of(model).capabilities.contribution_measures:
        return f"{measure.label} is computed for the app's encoder-decoder Transformer, not for this model"
    if kind is not None and kind not in measure.kinds:
        return f"{measure.label} has no {kind.label}: {measure.why_not}"
    return ""


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


def _row_shares(values: np.ndarray) -> np.ndarray:
    """Each row as shares of its total (rows of zeros stay zero)."""
    total = values.sum(-1, keepdims=True)
    return np.where(total > 0, values / np.where(total > 0, total, 1.0), 0.0).astype(np.float32)


def _stack(tables: list[torch.Tensor]) -> np.ndarray:
    """Per-layer [Q, K] or [B=1, Q, K] tables -> [layers, 1, Q, K]."""
    return np.stack([t.reshape(t.shape[-2:]).detach().float().cpu().numpy() for t in tables])[:, None]


def compute_measure(
    model: Network,
    source_ids: list[int],  # the source pieces, </s> last
    chosen_ids: list[int],  # the decoded tokens: step t produced chosen_ids[t]
    name: str,
    steps: list[int] | None = None,  # saliency: only these predictions (the others' rows stay 0)
    max_points: int | None = None,  # integrated gradients: each prediction's cap on gradient points (None: the app's)
) -> MeasureResult:
    """Measure ``name`` of the decoded sentence (see the module's docstring)."""
    if name not in MEASURES:
        raise MeasureError(f"the measure is one of {', '.join(NAMES)}, not {name!r}")
    reason = unsupported(model, name)
    if reason:
        raise MeasureError(reason)
    # contribution_measures (raw attention: any family's own weights, an RNN's cross-attention alone)
    return _compute(cast(Transformer, model), source_ids, chosen_ids, name, steps, max_points)


def _compute(
    model: Transformer, source_ids: list[int], chosen_ids: list[int], name: str, steps: list[int] | None, max_points: int | None
) -> MeasureResult:
    device = next(model.parameters()).device
    bos = model.config.bos_id
    source = torch.tensor([source_ids], device=device)  # [1, S]
    inputs = torch.tensor([[bos] + list(chosen_ids[:-1])], device=device)  # [1, T]
    chosen = torch.tensor(list(chosen_ids), device=device)  # [T]
    if name in ("attention", "shift-att"):
        return _attention_readings(model, source, chosen, name)
    if name == "norm":
        tables = norm_contributions(model, source, inputs)
        values = {kind: torch.stack(t)[:, 0].float().cpu().numpy() for kind, t in tables.items()}
        return MeasureResult(name, values, {kind: _row_shares(v) for kind, v in values.items()})
    if name in ("grad-input", "ig"):
        return _saliency_result(model, source, inputs, chosen, name, steps, max_points)
    if name == "attn-grad":
        encoder, decoder, cross = attention_gradient(model, source, inputs, chosen)
        values = {ENCODER: _stack(encoder), DECODER: _stack(decoder), CROSS: _stack(cross)}
        return MeasureResult(name, values, {kind: _row_shares(v) for kind, v in values.items()})
    with torch.inference_mode():
        record = token_pass(model, source, inputs)
        if name == "value-zeroing":
            encoder, decoder, cross = value_zeroing(model, record)
            values = {ENCODER: _stack(encoder), DECODER: _stack(decoder), CROSS: _stack(cross)}
            return MeasureResult(name, values, {kind: _row_shares(v) for kind, v in values.items()})
        values = {ENCODER: _stack(encoder_rollout(record))}
        if name == "alti":
            values[DECODER] = _stack(decoder_rollout(record))
            return MeasureResult(name, values, dict(values))
        sources, targets = alti_plus(record)
        values[DECODER], values[CROSS] = _stack(targets), _stack(sources)
        return MeasureResult(name, values, dict(values), source_share=values[CROSS][-1, 0].sum(-1))


@torch.inference_mode()
def _attention_readings(model: Transformer, source: torch.Tensor, chosen: torch.Tensor, name: str) -> MeasureResult:
    """The raw weights, or Shift-Att: the cross-attention row of the step whose decoder input is the word."""
    bos = torch.tensor([[model.config.bos_id]], device=source.device)
    inputs = torch.cat([bos, chosen[None]], dim=1)  # [1, T + 1]: the last token is an input too
    _, weights = model.inspect(source, inputs)
    n = chosen.shape[0]
    if name == "shift-att":
        values = {CROSS: torch.stack(weights.cross)[:, 0, :, 1:].float().cpu().numpy()}  # [L, H, T, S]
    else:
        found = {
            ENCODER: lambda: torch.stack(weights.encoder_self)[:, 0],
            DECODER: lambda: torch.stack(weights.decoder_self)[:, 0, :, :n, :n],
            CROSS: lambda: torch.stack(weights.cross)[:, 0, :, :n],
        }
        kinds = {ENCODER: weights.encoder_self, DECODER: weights.decoder_self, CROSS: weights.cross}
        values = {kind: found[kind]().float().cpu().numpy() for kind, tables in kinds.items() if tables}  # a family's kinds
    return MeasureResult(name, values, dict(values))


def _saliency_result(
    model: Transformer, source, inputs, chosen, name: str, steps: list[int] | None, max_points: int | None = None
) -> MeasureResult:
    """Gradient × input or integrated gradients of the chosen steps' log-probabilities: signed values, and
    shares of |attribution| over source and target prefix together (so a row's two parts sum to 1)."""
    n = chosen.shape[0]
    steps = list(range(n)) if steps is None else steps
    source_values = np.zeros((n, source.shape[1]), np.float32)
    target_values = np.zeros((n, n), np.float32)
    rows = n if name == "ig" else 0
    gaps, points, converged = np.full(rows, np.nan, np.float32), np.zeros(rows, np.int64), np.zeros(rows, bool)
    if steps:
        found = saliency(model, source, inputs, steps, [int(chosen[s]) for s in steps], method=name, max_points=max_points)
        source_values[steps], target_values[steps] = found.source, found.target
        if rows:
            gaps[steps], points[steps], converged[steps] = found.completeness_gap, found.points, found.converged
    magnitude = np.abs(source_values).sum(-1, keepdims=True) + np.abs(target_values).sum(-1, keepdims=True)  # [T, 1]
    scale = np.where(magnitude > 0, 1.0 / np.where(magnitude > 0, magnitude, 1.0), 0.0)
    values = {DECODER: target_values[None, None], CROSS: source_values[None, None]}
    shares = {DECODER: (np.abs(target_values) * scale)[None, None], CROSS: (np.abs(source_values) * scale)[None, None]}
    source_share = np.full(n, np.nan, np.float32)
    source_share[steps] = shares[CROSS][0, 0, steps].sum(-1)
    return MeasureResult(name, values, shares, source_share, gaps, points, converged)


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


def measure_caption(trace) -> str:
    """A figure caption's line saying what the colours are, with the source share of the last prediction."""
    measure = MEASURES[trace.measure]
    line = f"Colours: {measure.label} — {measure.what}; each row as shares"
    shares = trace.source_share[~np.isnan(trace.source_share)] if len(trace.source_share) else trace.source_share
    if len(shares):
        line += f"; last prediction: {shares[-1]:.0%} from the source, {1 - shares[-1]:.0%} from the target prefix"
    return line


def integration_note(trace) -> str:
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


def measured_trace(trace, result: MeasureResult):
    """``trace`` with the measure's shares in place of the attention weights (a kind the measure does not
    define becomes None) and its source share per prediction."""
    if result.measure == "attention":
        return trace
    arrays = {kind.field: result.shares.get(kind) if trace.has(kind) else None for kind in ALL_KINDS}
    n = trace.n_steps
    return replace(
        trace,
        **arrays,
        measure=result.measure,
        source_share=result.source_share[:n],
        completeness_gap=result.completeness_gap[:n],
        integration_points=result.integration_points[:n],
        integration_converged=result.integration_converged[:n],
    )


def trace_measure(model: Network, source_ids: list[int], trace, name: str, steps: list[int] | None = None) -> MeasureResult:
    """``compute_measure`` of the sentence a trace decoded, for its own tokens (the hypothesis it follows)."""
    return compute_measure(model, source_ids, [int(i) for i in trace.chosen_ids], name, steps)
