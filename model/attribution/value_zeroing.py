"""Value zeroing (Mohebbi, Zuidema, Chrupała and Alishahi, "Quantifying Context Mixing in Transformers",
EACL 2023): how much a token's value vector matters to each position's output.

For layer l and key token j, the model's own layer is run again from its inputs with j's value vector set to zero
in every head (the network's measured pass scales the values: model/attribution/transparent_pass.py); position i's
score is the cosine distance between its layer output with and without it, 1 − cos(x̃_i, x̃_i^¬j). A token no query
attends to (a future position under the decoder's mask) changes nothing, and scores 0. Per layer (all heads at once),
for every kind: encoder self-attention, the decoder's masked self-attention (the decoder layer's output),
cross-attention (a source token's value zeroed in that layer's cross-attention). Each layer is one batch: the
unchanged run and one run per zeroed token.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from model.attribution.transparent_pass import MeasuredPass, PassRecord
from model.kinds import AttentionKind


def _distances(outputs: torch.Tensor) -> torch.Tensor:
    """outputs [1 + K, Q, d_model] (the unchanged run first, then one per zeroed key) -> [Q, K] cosine distances."""
    reference, zeroed = outputs[:1], outputs[1:]  # [1, Q, d], [K, Q, d]
    similarity = F.cosine_similarity(zeroed.double(), reference.double(), dim=-1)  # [K, Q]
    return torch.clamp(1.0 - similarity, min=0.0).T.float()  # [Q, K]


def _scales(n_keys: int, like: torch.Tensor) -> torch.Tensor:
    """[1 + K, K]: a row of ones (nothing zeroed), then each key zeroed in turn."""
    ones = torch.ones(1, n_keys, dtype=like.dtype, device=like.device)
    return torch.cat([ones, 1.0 - torch.eye(n_keys, dtype=like.dtype, device=like.device)])


def _zeroed_layer(measured: MeasuredPass, record: PassRecord, kind: AttentionKind, layer: int) -> torch.Tensor:
    """Distances [L, K] of layer ``layer`` with each key of ``kind``'s attention zeroed in turn."""
    keys = record.attentions(kind)[layer].weights  # [1, H, Q, K]
    return _distances(measured.zeroed_layer(record, kind, layer, _scales(keys.shape[-1], keys)))


@torch.inference_mode()
def value_zeroing(
    measured: MeasuredPass, record: PassRecord, progress: Callable[[int, int], None] | None = None
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Per layer, from one sentence's pass record (batch 1): (encoder [S, S], decoder [T, T], cross [T, S]).
    ``progress(done, total)`` after each layer of each kind (a 1.5 B model's take seconds each on 2 cores)."""
    stacks = {kind: record.attentions(kind) for kind in (AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS)}
    total = sum(len(stack) for stack in stacks.values())
    found: dict[AttentionKind, list[torch.Tensor]] = {kind: [] for kind in stacks}
    for kind, stack in stacks.items():
        for layer in range(len(stack)):
            found[kind].append(_zeroed_layer(measured, record, kind, layer))
            if progress is not None:
                progress(sum(len(done) for done in found.values()), total)
    return found[AttentionKind.ENCODER], found[AttentionKind.DECODER], found[AttentionKind.CROSS]
