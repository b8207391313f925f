"""The norm-based contribution measure (Kobayashi, Kuribayashi, Yokoi and Inui, "Attention is Not Only a
Weight", EMNLP 2020): how much each key token actually moves a query's output, per head.

A head's output for query i is Σ_j α_ij f(x_j), with f(x) = x W_V W_O (the value projection, then the head's
slice of the output projection; our attention has no bias terms, so none is added). The attention weight α_ij
says how much of token j's *transformed vector* is taken, not how large that vector is: a heavily attended
token whose f(x_j) is small moves nothing. The measure is ‖α_ij f(x_j)‖ = α_ij ‖f(x_j)‖ — per layer and head,
for every kind. With identity value and output projections it is α_ij ‖x_j‖.

The vectors are read from the model's own teacher-forced inspection pass (hooks on every attention's ``v`` point
record the values it attended over), so the measure uses exactly the weights the views show.
"""

from __future__ import annotations

import torch

from model.attribution.transparent_pass import attention_point, hook_points, hooked
from model.family import family_of
from model.kinds import AttentionKind
from model.nn.transformer import Transformer


def _value_norms(module, values: torch.Tensor) -> torch.Tensor:
    """‖f(x_j)‖ for every head and key: [B, H, K], from an attention's values [B, H, K, d_k] (its ``v`` point)."""
    out = module.out_projection.weight.view(-1, module.n_heads, module.d_k)  # [d_model, H, d_k]
    transformed = torch.einsum("bhkd,mhd->bhkm", values, out)  # [B, H, K, d_model]: f(x_j) for each head
    return transformed.norm(dim=-1)  # [B, H, K]


@torch.inference_mode()
def norm_contributions(
    model: Transformer, source_ids: torch.Tensor, target_input_ids: torch.Tensor
) -> dict[AttentionKind, list[torch.Tensor]]:
    """Per kind, per layer: ‖α_ij f(x_j)‖ [B, H, queries, keys] of one teacher-forced pass of the app's
    Transformer over source_ids [B, S] and target_input_ids [B, T]."""
    norms: dict[tuple[AttentionKind, int], torch.Tensor] = {}
    hooks = {}
    config = model.config
    for kind in family_of(model).capabilities.kinds:
        n_layers = config.n_encoder_layers if kind is AttentionKind.ENCODER else config.n_decoder_layers
        for layer in range(n_layers):
            module = model.attention_module(kind, layer)

            def record(values, key=(kind, layer), module=module):
                norms[key] = _value_norms(module, values)

            hooks[attention_point(kind, layer, "v")] = record
    with hooked(hook_points(model), hooks):
        _, weights = model.inspect(source_ids, target_input_ids)
    tables = {
        AttentionKind.ENCODER: weights.encoder_self,
        AttentionKind.DECODER: weights.decoder_self,
        AttentionKind.CROSS: weights.cross,
    }
    return {
        kind: [layer_weights * norms[(kind, layer)][:, :, None, :] for layer, layer_weights in enumerate(tables[kind])]
        for kind in family_of(model).capabilities.kinds
    }
