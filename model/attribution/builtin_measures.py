"""The app's measures, one registered class each (model/inspection/measure_catalogue.py says what a class holds).

Each reads one teacher-forced pass over the decoded sentence (the model's own weights, heads knocked out included).
A measure defined per head has the model's heads; one defined per layer (ALTI, value zeroing, the gradient rollouts)
has one "head"; a rollout's layer l reads through layers 1..l; a saliency has one map in all. Shares are what the
views draw: non-negative, each row a distribution or part of one.

Imported by model/attribution/measures.py, which is what fills the registry with them.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from model.attribution.alti import alti_plus, decoder_rollout, encoder_rollout
from model.attribution.gradients import Saliency, attention_gradient, saliency, text_attention_gradient
from model.attribution.norms import norm_contributions
from model.attribution.transparent_pass import measured_pass_of, token_pass
from model.attribution.value_zeroing import value_zeroing
from model.decoding.greedy import decoder_inputs
from model.family import capabilities_of
from model.inspection.measure_catalogue import CROSS, DECODER, ENCODER, Measure, MeasureInputs, MeasureResult, register_measure
from model.kinds import AttentionKind
from model.network import Network, TextReadingNetwork

# an encoder-decoder's saliency explains its decoded tokens; an encoder-only model's, its head's decisions (``text_kinds``)
TEXT_PART_ROWS = {"grad-input": 16, "ig": 2}  # an encoder-only model's saliency: predictions per part (one batch)
SALIENCY_WHY_NOT = "it explains each decoded token over the source and the target prefix, not the encoder's own rows"


def row_shares(values: np.ndarray) -> np.ndarray:
    """Each row as shares of its total (rows of zeros stay zero)."""
    total = values.sum(-1, keepdims=True)
    return np.where(total > 0, values / np.where(total > 0, total, 1.0), 0.0).astype(np.float32)


def _stack(tables: list[torch.Tensor]) -> np.ndarray:
    """Per-layer [Q, K] or [B=1, Q, K] tables -> [layers, 1, Q, K]."""
    return np.stack([t.reshape(t.shape[-2:]).detach().float().cpu().numpy() for t in tables])[:, None]


def _stacked(model: Network, tables: dict[AttentionKind, list[torch.Tensor]]) -> dict[AttentionKind, np.ndarray]:
    """Per kind the model has (a decoder-only model's decoder alone), its per-layer tables stacked (``_stack``)."""
    return {kind: _stack(tables[kind]) for kind in capabilities_of(model).kinds if kind in tables}


def _per_row(name: str, values: dict) -> MeasureResult:
    """A result whose shares are each row of the values as shares of the row's total."""
    return MeasureResult(name, values, {kind: row_shares(v) for kind, v in values.items()})


def _tensors(model: Network, inputs: MeasureInputs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(source [1, S], decoder inputs [1, T], chosen [T]): the decoder reads the start token, then every decoded token
    but the last; a decoder-only model reads its prompt first and has no source (S = 0: ``decoder_inputs``); an
    encoder-only model has no decoder (T = 0)."""
    device = next(model.parameters()).device
    architecture = capabilities_of(model).architecture
    source_ids = inputs.source_ids if architecture.has_encoder else []
    source = torch.tensor([source_ids], dtype=torch.long, device=device)  # [1, S]
    read = decoder_inputs(model, inputs.source_ids, inputs.chosen_ids) if architecture.has_decoder else []
    chosen = torch.tensor(list(inputs.chosen_ids), dtype=torch.long, device=device)  # [T]
    return source, torch.tensor([read], dtype=torch.long, device=device), chosen  # [1, T]


@torch.inference_mode()
def _attention_readings(model: Network, inputs: MeasureInputs, name: str, shifted: bool) -> MeasureResult:
    """The raw weights, or Shift-Att: the cross-attention row of the step whose decoder input is the word."""
    source, read, chosen = _tensors(model, inputs)
    _, weights = model.inspect(source, torch.cat([read, chosen[None, -1:]], dim=1))  # [1, T + 1]: the last is read too
    n = chosen.shape[0]
    if shifted:
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


def _saliency_result(model: Network, inputs: MeasureInputs, name: str, integrated: bool) -> MeasureResult:
    """Gradient × input or integrated gradients of the chosen steps' log-probabilities: signed values, and
    shares of |attribution| over source and target prefix together (so a row's two parts sum to 1)."""
    source, decoder_inputs, chosen = _tensors(model, inputs)
    n = chosen.shape[0]
    steps = list(range(n)) if inputs.steps is None else inputs.steps
    source_values = np.zeros((n, source.shape[1]), np.float32)
    target_values = np.zeros((n, n), np.float32)
    rows = n if integrated else 0  # integrated gradients: its completeness gaps, points and convergence per prediction
    gaps, points, converged = np.full(rows, np.nan, np.float32), np.zeros(rows, np.int64), np.zeros(rows, bool)
    if steps:
        tokens = [int(chosen[s]) for s in steps]
        found = saliency(model, source, decoder_inputs, steps, tokens, None, name, inputs.max_points, inputs.between_batches)
        source_values[steps], target_values[steps] = found.source, found.target
        if rows:
            gaps[steps], points[steps], converged[steps] = found.completeness_gap, found.points, found.converged
    magnitude = np.abs(source_values).sum(-1, keepdims=True) + np.abs(target_values).sum(-1, keepdims=True)  # [T, 1]
    scale = np.where(magnitude > 0, 1.0 / np.where(magnitude > 0, magnitude, 1.0), 0.0)
    values = {DECODER: target_values[None, None], CROSS: source_values[None, None]}
    shares = {DECODER: (np.abs(target_values) * scale)[None, None], CROSS: (np.abs(source_values) * scale)[None, None]}
    source_share = np.full(n, np.nan, np.float32)
    if source.shape[1]:  # a decoder-only model has no source: its share is not a number
        source_share[steps] = shares[CROSS][0, 0, steps].sum(-1)
    kinds = capabilities_of(model).kinds
    values, shares = _kept(values, kinds), _kept(shares, kinds)
    return MeasureResult(name, values, shares, source_share, gaps, points, converged)


def _text_predictions(model: Network, source: torch.Tensor, steps: list[int] | None) -> tuple[list[int], list[int], bool]:
    """An encoder-only model's predictions explained: (their positions, the head's decisions there, whether it has one
    per piece); a sentence head's one decision (at position 0, which its pass does not read)."""
    with torch.inference_mode():
        scores = measured_pass_of(model).run(source, source[:, :0], {}, None, False).logits  # [1, S, C] or [1, C]
    assert scores is not None  # a head (check_gradable_model)
    if scores.dim() == 2:
        return [0], [int(scores[0].argmax())], False
    positions = list(range(source.shape[1])) if steps is None else list(steps)
    return positions, [int(scores[0, p].argmax()) for p in positions], True


def _text_rows(rows: np.ndarray, positions: list[int], per_piece: bool, length: int) -> np.ndarray:
    """[..., n, S] rows of the predictions at ``positions`` -> an encoder map [..., S, S]: a per-piece head's row q the
    prediction at q (rows not computed stay 0), a sentence head's every row its one prediction's."""
    table = np.zeros((*rows.shape[:-2], length, length), np.float32)
    if per_piece:
        table[..., positions, :] = rows
    else:
        table[...] = rows[..., :1, :]
    return table


def _saliency_in_parts(
    model: Network, source: torch.Tensor, positions: list[int], decisions: list[int], name: str, inputs: MeasureInputs
) -> Saliency:
    """``saliency`` of the predictions at ``positions``, a few at a time, ``inputs.progress`` told after each part (it
    may raise to stop: the window's newer request)."""
    size = TEXT_PART_ROWS[name]
    parts = []
    for start in range(0, len(positions), size):
        chunk = slice(start, start + size)
        parts.append(
            saliency(
                model,
                source,
                source[:, :0],
                positions[chunk],
                decisions[chunk],
                None,
                name,
                inputs.max_points,
                inputs.between_batches,
            )
        )
        if inputs.progress is not None:
            inputs.progress(min(start + size, len(positions)), len(positions))
    if not parts:  # no prediction asked
        return Saliency(np.zeros((0, source.shape[1]), np.float32), np.zeros((0, 0), np.float32))
    fields = [(part.source, part.target, part.completeness_gap, part.points, part.converged) for part in parts]
    return Saliency(*(np.concatenate(arrays) for arrays in zip(*fields)))


def _text_saliency(model: Network, inputs: MeasureInputs, name: str, integrated: bool) -> MeasureResult:
    """Gradient × input or integrated gradients of an encoder-only head's decisions (log-probabilities) over the
    text's embeddings, as encoder self-attention's rows (``_text_rows``); shares of |attribution| per row."""
    source, _, _ = _tensors(model, inputs)
    length = source.shape[1]
    positions, decisions, per_piece = _text_predictions(model, source, inputs.steps)
    found = _saliency_in_parts(model, source, positions, decisions, name, inputs)
    values = _text_rows(found.source[None, None], positions, per_piece, length)  # [1, 1, S, S]
    magnitude = np.abs(values).sum(-1, keepdims=True)
    shares = np.abs(values) / np.where(magnitude > 0, magnitude, 1.0)
    rows = length if integrated else 0
    gaps, points, converged = np.full(rows, np.nan, np.float32), np.zeros(rows, np.int64), np.zeros(rows, bool)
    if rows:
        for index, position in enumerate(positions if per_piece else range(length)):
            which = index if per_piece else 0
            gaps[position], points[position] = found.completeness_gap[which], found.points[which]
            converged[position] = found.converged[which]
    source_share = np.full(length, np.nan, np.float32)  # no target prefix to share with
    return MeasureResult(name, {ENCODER: values}, {ENCODER: shares.astype(np.float32)}, source_share, gaps, points, converged)


def _kept(tables: dict[AttentionKind, np.ndarray], kinds: tuple[AttentionKind, ...]) -> dict[AttentionKind, np.ndarray]:
    return {kind: table for kind, table in tables.items() if kind in kinds}


@register_measure
class Attention(Measure):
    name, label, what = "attention", "Attention weights", "softmax(QKᵀ/√d_k): the raw weights"
    per_head, needs_capability, weights, aer_reading = True, False, True, "predicting"

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        return _attention_readings(model, inputs, self.name, shifted=False)


@register_measure
class NormBased(Measure):
    name, label, what = "norm", "Norm-based ‖α f(x)‖", "‖α_ij · x_j W_V W_O‖ per head (Kobayashi et al. 2020)"
    per_head = True

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        source, decoder_inputs, _ = _tensors(model, inputs)
        tables = norm_contributions(model, source, decoder_inputs)
        return _per_row(self.name, {kind: torch.stack(t)[:, 0].float().cpu().numpy() for kind, t in tables.items()})


@register_measure
class Alti(Measure):
    name, label = "alti", "ALTI"
    what = "token contributions through attention, residual and layer norm, rolled out (Ferrando et al. 2022)"
    kinds, rollout = (ENCODER, DECODER), True
    why_not = "ALTI rolls out self-attention; ALTI+ adds what cross-attention brings from the source"

    @torch.inference_mode()
    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        source, decoder_inputs, _ = _tensors(model, inputs)
        record = token_pass(model, source, decoder_inputs)
        values = _stacked(model, {ENCODER: encoder_rollout(record), DECODER: decoder_rollout(record)})
        return MeasureResult(self.name, values, dict(values))


@register_measure
class AltiPlus(Measure):
    name, label = "alti+", "ALTI+"
    what = "ALTI through the decoder: each prediction split into source and target-prefix shares (Ferrando et al. 2022)"
    rollout, requires = True, CROSS
    requires_why = "ALTI+ splits each prediction into source and target-prefix shares; ALTI is this model's rollout"

    @torch.inference_mode()
    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        source, decoder_inputs, _ = _tensors(model, inputs)
        record = token_pass(model, source, decoder_inputs)
        sources, targets = alti_plus(record)
        values = {ENCODER: _stack(encoder_rollout(record)), DECODER: _stack(targets), CROSS: _stack(sources)}
        return MeasureResult(self.name, values, dict(values), source_share=values[CROSS][-1, 0].sum(-1))


@register_measure
class ValueZeroing(Measure):
    name, label = "value-zeroing", "Value zeroing"
    what = "cosine distance of the layer's output when one value vector is zeroed (Mohebbi et al. 2023)"

    @torch.inference_mode()
    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        source, decoder_inputs, _ = _tensors(model, inputs)
        record = token_pass(model, source, decoder_inputs)
        encoder, decoder, cross = value_zeroing(measured_pass_of(model), record, inputs.progress)
        return _per_row(self.name, _stacked(model, {ENCODER: encoder, DECODER: decoder, CROSS: cross}))


@register_measure
class AttentionGradient(Measure):
    name, label = "attn-grad", "Attention × gradient"
    what = "(∇A ⊙ A)⁺ averaged over heads with the encoder-decoder rules (Chefer et al. 2021)"
    rollout, gradient, requires, text_kinds = True, True, DECODER, (ENCODER,)
    requires_why = "attention × gradient differentiates each decoded token's logit through the decoder's attention"

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        source, decoder_inputs, chosen = _tensors(model, inputs)
        if not capabilities_of(model).architecture.has_decoder:
            positions, decisions, per_piece = _text_predictions(model, source, inputs.steps)
            layers = text_attention_gradient(model, source, positions, decisions)  # per layer [n, S, S]
            rows = np.stack([layer[np.arange(len(positions)), positions].float().cpu().numpy() for layer in layers])  # [L, n, S]
            if not per_piece:  # the sentence head's rows: the positions it reads, their mean
                read = cast(TextReadingNetwork, model).sentence_rows(source.shape[1])
                rows = np.stack([layer[0, read].mean(0, keepdim=True).float().cpu().numpy() for layer in layers])  # [L, 1, S]
            return _per_row(self.name, {ENCODER: _text_rows(rows[:, None], positions, per_piece, source.shape[1])})
        encoder, decoder, cross = attention_gradient(model, source, decoder_inputs, chosen)
        return _per_row(self.name, _stacked(model, {ENCODER: encoder, DECODER: decoder, CROSS: cross}))


@register_measure
class GradientInput(Measure):
    name, label, what = "grad-input", "Gradient × input", "∇ log p(token) · embedding, over source and target-prefix tokens"
    kinds, gradient, single, why_not, text_kinds = (DECODER, CROSS), True, True, SALIENCY_WHY_NOT, (ENCODER,)

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        if not capabilities_of(model).architecture.has_decoder:
            return _text_saliency(model, inputs, self.name, integrated=False)
        return _saliency_result(model, inputs, self.name, integrated=False)


@register_measure
class IntegratedGradients(Measure):
    name, label = "ig", "Integrated gradients"
    what = "gradients integrated from zero embeddings (Sundararajan et al. 2017), over source and target prefix"
    kinds, gradient, single, why_not, text_kinds = (DECODER, CROSS), True, True, SALIENCY_WHY_NOT, (ENCODER,)

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        if not capabilities_of(model).architecture.has_decoder:
            return _text_saliency(model, inputs, self.name, integrated=True)
        return _saliency_result(model, inputs, self.name, integrated=True)


@register_measure
class ShiftAtt(Measure):
    name, label = "shift-att", "Shift-Att"
    what = "cross-attention read at the step where the word is the decoder's input (Chen et al. 2020)"
    kinds, per_head, aer_reading, requires = (CROSS,), True, "input", CROSS
    why_not = requires_why = "Shift-Att is a reading of cross-attention"

    def compute(self, model: Network, inputs: MeasureInputs) -> MeasureResult:
        return _attention_readings(model, inputs, self.name, shifted=True)
