"""Batched greedy decoding with cached keys/values (evaluation, validation), and the length penalty.

It encodes the source once and feeds the decoder one new token per step; the cache holds every
layer's past keys and values, so a step costs attention over the prefix only.
"""

from __future__ import annotations

import torch

from model.family import suppressed_ids
from model.network import DecodingNetwork


def default_max_target(source_length: int, max_len: int) -> int:
    """Target pieces allowed (BOS included): room for a translation somewhat longer than the source."""
    return min(max_len, 2 * source_length + 10)


@torch.inference_mode()
def greedy_decode(model: DecodingNetwork, source_ids: torch.Tensor, max_target: int | None = None) -> list[list[int]]:
    """source_ids [B, S] (padded) -> per sentence the generated ids, without BOS and EOS.

    Each sentence's length limit is its own (``max_target``, else from its unpadded length), so a sentence
    decodes the same whatever it is batched with, and the same as the Stepper decodes it alone."""
    config = model.config
    batch = source_ids.shape[0]
    source_lengths = (source_ids != config.pad_id).sum(dim=1).tolist()  # [B]
    limits = [max_target or default_max_target(length, config.max_len) for length in source_lengths]
    memory, memory_mask, _ = model.encode(source_ids)  # [B, S, d_model]
    cache = model.start_cache(memory, memory_mask)
    current = torch.full((batch,), config.bos_id, dtype=torch.long, device=source_ids.device)  # [B]
    finished = torch.zeros(batch, dtype=torch.bool, device=source_ids.device)  # [B]
    # The ids each row may still generate: BOS is one of its limit's pieces.
    generated_limit = torch.tensor(limits, device=source_ids.device) - 1  # [B]
    suppressed = suppressed_ids(config)  # tokens a pretrained model's generation never picks
    generated = []
    for count in range(1, max(limits)):
        hidden, _, _ = model.decode_step(current, cache)  # [B, d_model]
        logits = model.logits(hidden)  # [B, V]
        if suppressed:
            logits[:, suppressed] = float("-inf")
        next_ids = logits.argmax(dim=-1)  # [B]
        next_ids = next_ids.masked_fill(finished, config.pad_id)
        generated.append(next_ids)
        finished |= (next_ids == config.eos_id) | (generated_limit <= count)
        if bool(finished.all()):
            break
        current = next_ids
    rows = torch.stack(generated, dim=1).tolist() if generated else [[] for _ in range(batch)]
    return [_strip(row, config.eos_id, config.pad_id) for row in rows]


def _strip(ids: list[int], eos_id: int, pad_id: int) -> list[int]:
    out = []
    for piece_id in ids:
        if piece_id == eos_id:
            break
        if piece_id != pad_id:
            out.append(piece_id)
    return out


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha; alpha 0 compares raw log probabilities."""
    return ((5.0 + length) / 6.0) ** alpha
