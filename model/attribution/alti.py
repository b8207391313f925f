"""ALTI and ALTI+: how much each input token contributes to each representation, through attention, the
residual connection and the layer norm, rolled out across layers.

ALTI (Ferrando, Gállego and Costa-jussà, "Measuring the Mixing of Contextual Information in the Transformer",
EMNLP 2022). An attention sublayer's output for position i is a sum of one vector per input token j,
T_i(x_j) = Σ_h α_hij f_h(x_j) + [i = j] x_i (the residual belongs to the position itself). A post-norm layer
norm is linear once its scale is fixed, so it splits over the same sum: LN'(T) = γ ⊙ (T − mean(T)) / σ(y_i),
with σ taken from the whole sum y_i (β and the output projection's bias, shared by no token, are left out of the
parts; the bias is in the sum whose σ scales them). Token j's contribution is how much
closer the output comes to the sum for having its vector, in L1: c_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁),
normalised so each row sums to 1. The feed-forward sublayer mixes nothing between positions. Rolling out,
R^l = C^l R^{l−1}: layer l's row says what share of the position's representation came from each input
token. Every value is non-negative and every row sums to 1.

ALTI+ (Ferrando, Gállego, Alastruey, Escolano and Costa-jussà, "Towards Opening the Black Box of Neural Machine
Translation: Source and Target Contributions", EMNLP 2022) follows the decoder: each decoder position is a
mix of source tokens and target-prefix tokens. Self-attention mixes the decoder's rows; cross-attention adds
the encoder's outputs, each already a mix of source tokens (the encoder's ALTI rollout), beside the residual
that carries the row so far. The last layer's row of step t splits the prediction into a source share and a
target-prefix share that sum to 1.
"""

from __future__ import annotations

import torch

from model.attribution.transparent_pass import AttentionRecord, PassRecord
from model.pretrained.offload import tensor_of


def contributions(record: AttentionRecord, self_attention: bool) -> torch.Tensor:
    """One attention sublayer's ALTI contributions [B, Q, K] (self-attention; the residual is the query's own
    key) or [B, Q, 1 + K] (cross-attention: the residual first, then the memory's keys). Rows sum to 1."""
    weights, transformed, residual = record.weights, record.transformed, record.residual
    parts = torch.einsum("bhqk,bhkm->bqkm", weights, transformed)  # [B, Q, K, d_model] α-weighted, heads summed
    if self_attention:
        n = parts.shape[1]
        eye = torch.eye(n, dtype=parts.dtype, device=parts.device)  # [Q, Q]
        parts = parts + eye[None, :, :, None] * residual[:, :, None, :]  # the residual is position i's own
    else:
        parts = torch.cat([residual[:, :, None, :], parts], dim=2)  # [B, Q, 1 + K, d_model]
    if record.norm is not None:  # post-norm: the layer norm split over the sum, with the sum's own scale
        summed = parts.sum(2) if record.bias is None else parts.sum(2) + record.bias  # [B, Q, d_model]: what is normed
        scale = torch.sqrt(summed.var(-1, unbiased=False, keepdim=True) + record.norm.eps)  # [B, Q, 1]
        weight = tensor_of(record.norm, "weight")  # [d_model] (an offloaded layer's read from its weights)
        gamma = weight if weight is not None else 1.0
        parts = gamma * (parts - parts.mean(-1, keepdim=True)) / scale[:, :, None, :]  # [B, Q, K', d_model]
    resultant = parts.sum(2)  # [B, Q, d_model]
    distance = (resultant[:, :, None, :] - parts).abs().sum(-1)  # [B, Q, K'] ‖y_i − T_i(x_j)‖₁
    closeness = torch.clamp(resultant.abs().sum(-1, keepdim=True) - distance, min=0.0)  # [B, Q, K']
    total = closeness.sum(-1, keepdim=True)  # [B, Q, 1]
    uniform = torch.full_like(closeness, 1.0 / closeness.shape[-1])  # a row with no contribution at all
    return torch.where(total > 0, closeness / torch.where(total > 0, total, torch.ones_like(total)), uniform)


def _rollout(attentions: list[AttentionRecord]) -> list[torch.Tensor]:
    """ALTI through a stack of self-attention sublayers, after each layer: [B, N, N] per layer."""
    rollouts: list[torch.Tensor] = []
    for attention in attentions:
        layer = contributions(attention, True)  # [B, N, N]
        rollouts.append(layer if not rollouts else layer @ rollouts[-1])
    return rollouts


def encoder_rollout(record: PassRecord) -> list[torch.Tensor]:
    """The encoder's ALTI after each layer: [B, S, S] per layer (rows: positions, columns: source tokens)."""
    return _rollout(record.encoder)


def decoder_rollout(record: PassRecord) -> list[torch.Tensor]:
    """ALTI of the decoder's masked self-attention alone, after each layer: [B, T, T] per layer."""
    return _rollout(record.decoder)


def alti_plus(record: PassRecord) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """ALTI+ after each decoder layer: (source part [B, T, S], target-prefix part [B, T, T]) per layer; each
    row of the two parts together sums to 1."""
    encoder = encoder_rollout(record)[-1]  # [B, S, S] what each encoder output is made of
    batch, n_source = encoder.shape[:2]
    n_target = record.decoder[0].weights.shape[-1]
    # Rows over [source tokens | target-prefix tokens]; a decoder input starts as itself.
    rows = torch.cat(
        [
            encoder.new_zeros(batch, n_target, n_source),
            torch.eye(n_target, dtype=encoder.dtype, device=encoder.device).expand(batch, -1, -1),
        ],
        dim=-1,
    )  # [B, T, S + T]
    memory_rows = torch.cat([encoder, encoder.new_zeros(batch, n_source, n_target)], dim=-1)  # [B, S, S + T]
    sources, targets = [], []
    for self_attention, cross_attention in zip(record.decoder, record.cross):
        rows = contributions(self_attention, True) @ rows  # [B, T, S + T]
        mixed = contributions(cross_attention, False)  # [B, T, 1 + S]: the residual, then the memory
        rows = mixed[:, :, :1] * rows + mixed[:, :, 1:] @ memory_rows  # [B, T, S + T]
        sources.append(rows[:, :, :n_source])
        targets.append(rows[:, :, n_source:])
    return sources, targets
