"""The norm-based contribution measure (Kobayashi, Kuribayashi, Yokoi and Inui, "Attention is Not Only a
Weight", EMNLP 2020): how much each key token actually moves a query's output, per head.

A head's output for query i is Σ_j α_ij f(x_j), with f(x) = x W_V W_O (the value projection, then the head's
slice of the output projection; a bias of the output projection is no token's, and is left out). The attention
weight α_ij says how much of token j's *transformed vector* is taken, not how large that vector is: a heavily
attended token whose f(x_j) is small moves nothing. The measure is ‖α_ij f(x_j)‖ = α_ij ‖f(x_j)‖ — per layer and
head, for every kind. With identity value and output projections it is α_ij ‖x_j‖.

The vectors and weights are the network's own teacher-forced pass's (its measured pass's record:
model/attribution/transparent_pass.py), so the measure uses exactly the weights the views show.
"""

from __future__ import annotations

import torch

from model.attribution.transparent_pass import token_pass
from model.family import capabilities_of
from model.kinds import AttentionKind
from model.network import Network


@torch.inference_mode()
def norm_contributions(
    model: Network, source_ids: torch.Tensor, target_input_ids: torch.Tensor
) -> dict[AttentionKind, list[torch.Tensor]]:
    """Per kind, per layer: ‖α_ij f(x_j)‖ [B, H, queries, keys] of one teacher-forced pass over source_ids [B, S] and
    target_input_ids [B, T]."""
    record = token_pass(model, source_ids, target_input_ids)
    return {
        kind: [r.weights * r.transformed.norm(dim=-1)[:, :, None, :] for r in record.attentions(kind)]  # [B, H, Q, K]
        for kind in capabilities_of(model).kinds
    }
