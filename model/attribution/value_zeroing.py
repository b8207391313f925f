"""Value zeroing (Mohebbi, Zuidema, Chrupała and Alishahi, "Quantifying Context Mixing in Transformers",
EACL 2023): how much a token's value vector matters to each position's output.

For layer l and key token j, the layer is run again from its own inputs with j's value vector set to zero in
every head; position i's score is the cosine distance between its layer output with and without it,
1 − cos(x̃_i, x̃_i^¬j). A token no query attends to (a future position under the decoder's mask) changes
nothing, and scores 0. Per layer (all heads at once), for every kind: encoder self-attention, the decoder's
masked self-attention (the decoder layer's output), cross-attention (a source token's value zeroed in that
layer's cross-attention). Each layer is one batch: the unchanged run and one run per zeroed token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from model.attribution.passes import PassRecord, decoder_layer, encoder_layer
from model.nn.transformer import Transformer


def _distances(outputs: torch.Tensor) -> torch.Tensor:
    """outputs [1 + K, Q, d_model] (the unchanged run first, then one per zeroed key) -> [Q, K] cosine distances."""
    reference, zeroed = outputs[:1], outputs[1:]  # [1, Q, d], [K, Q, d]
    similarity = F.cosine_similarity(zeroed.double(), reference.double(), dim=-1)  # [K, Q]
    return torch.clamp(1.0 - similarity, min=0.0).T.float()  # [Q, K]


def _scales(n_keys: int, like: torch.Tensor) -> torch.Tensor:
    """[1 + K, K]: a row of ones (nothing zeroed), then each key zeroed in turn."""
    ones = torch.ones(1, n_keys, dtype=like.dtype, device=like.device)
    return torch.cat([ones, 1.0 - torch.eye(n_keys, dtype=like.dtype, device=like.device)])


@torch.inference_mode()
def value_zeroing(model: Transformer, record: PassRecord) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Per layer, from one sentence's transparent pass (batch 1): (encoder [S, S], decoder [T, T], cross [T, S])."""
    encoder, decoder, cross = [], [], []
    for layer, x in zip(model.encoder_layers, record.encoder_inputs):
        n = x.shape[1]
        outputs, _ = encoder_layer(layer, x.expand(n + 1, -1, -1), value_scale=_scales(n, x))  # [1 + S, S, d]
        encoder.append(_distances(outputs))
    memory = record.memory
    assert memory is not None
    n_source = memory.shape[1]
    for layer, y in zip(model.decoder_layers, record.decoder_inputs):
        n_target = y.shape[1]
        outputs, _, _ = decoder_layer(
            layer, y.expand(n_target + 1, -1, -1), memory.expand(n_target + 1, -1, -1), self_scale=_scales(n_target, y)
        )  # [1 + T, T, d]
        decoder.append(_distances(outputs))
        outputs, _, _ = decoder_layer(
            layer, y.expand(n_source + 1, -1, -1), memory.expand(n_source + 1, -1, -1), cross_scale=_scales(n_source, y)
        )  # [1 + S, T, d]
        cross.append(_distances(outputs))
    return encoder, decoder, cross
