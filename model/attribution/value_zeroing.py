"""Value zeroing (Mohebbi, Zuidema, Chrupała and Alishahi, "Quantifying Context Mixing in Transformers",
EACL 2023): how much a token's value vector matters to each position's output.

For layer l and key token j, the model's own layer is run again from its inputs with j's value vector set to zero
in every head (a hook on its ``v`` point scales the values); position i's score is the cosine distance between its
layer output with and without it, 1 − cos(x̃_i, x̃_i^¬j). A token no query attends to (a future position under the
decoder's mask) changes nothing, and scores 0. Per layer (all heads at once), for every kind: encoder self-attention, the decoder's
masked self-attention (the decoder layer's output), cross-attention (a source token's value zeroed in that
layer's cross-attention). Each layer is one batch: the unchanged run and one run per zeroed token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from model.attribution.transparent_pass import PassRecord, attention_point, hook_points, hooked, without_dropout
from model.kinds import AttentionKind
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


def _scaling(scale: torch.Tensor):
    """A hook on a ``v`` point [B, H, K, d_k] that multiplies each row's key j by scale [B, K]."""
    return lambda values: values * scale[:, None, :, None]  # [B, H, K, d_k]


def _zeroed_layer(model: Transformer, kind: AttentionKind, layer: int, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
    """Layer ``layer``'s own forward from its input x [1, L, d_model], once unchanged and once per key of the attention
    of ``kind`` with that key's value zeroed (a hook on its ``v`` point) -> distances [L, K]."""
    n_keys = x.shape[1] if kind is not AttentionKind.CROSS else memory.shape[1]
    scale = _scales(n_keys, x)  # [1 + K, K]
    rows = x.expand(n_keys + 1, -1, -1)  # [1 + K, L, d_model]
    with hooked(hook_points(model), {attention_point(kind, layer, "v"): _scaling(scale)}), without_dropout(model):
        if kind is AttentionKind.ENCODER:
            outputs, _ = model.encoder_layers[layer](rows, None)  # [1 + K, S, d_model]
        else:
            keys, values = model.start_cache(memory, None).memory_keys_values[layer]  # [1, H, S, d_k] each
            memory_rows = (keys.expand(n_keys + 1, -1, -1, -1), values.expand(n_keys + 1, -1, -1, -1))
            outputs, _, _ = model.decoder_stack[layer](rows, memory_rows, None)  # [1 + K, T, d_model]
    return _distances(outputs)


@torch.inference_mode()
def value_zeroing(model: Transformer, record: PassRecord) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Per layer, from one sentence's transparent pass (batch 1): (encoder [S, S], decoder [T, T], cross [T, S]). Each
    runs the model's own layer from its recorded input, its value vectors scaled through the ``v`` hook point."""
    memory = record.memory
    assert memory is not None
    encoder = [_zeroed_layer(model, AttentionKind.ENCODER, i, x, memory) for i, x in enumerate(record.encoder_inputs)]
    decoder, cross = [], []
    for index, y in enumerate(record.decoder_inputs):
        decoder.append(_zeroed_layer(model, AttentionKind.DECODER, index, y, memory))
        cross.append(_zeroed_layer(model, AttentionKind.CROSS, index, y, memory))
    return encoder, decoder, cross
