"""Batched decoding with cached keys/values: greedy for evaluation, beam search for translation.

Both encode the source once and feed the decoder one new token per step; the cache holds every
layer's past keys and values, so a step costs attention over the prefix only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .transformer import Transformer


def default_max_target(source_length: int, max_len: int) -> int:
    """Target pieces allowed (BOS included): room for a translation somewhat longer than the source."""
    return min(max_len, 2 * source_length + 10)


@torch.no_grad()
def greedy_decode(model: Transformer, source_ids: torch.Tensor, max_target: int | None = None) -> list[list[int]]:
    """source_ids [B, S] (padded) -> per sentence the generated ids, without BOS and EOS."""
    config = model.config
    batch = source_ids.shape[0]
    max_target = max_target or default_max_target(source_ids.shape[1], config.max_len)
    memory, memory_mask, _ = model.encode(source_ids)  # [B, S, d_model]
    cache = model.start_cache(memory, memory_mask)
    current = torch.full((batch, 1), config.bos_id, dtype=torch.long, device=source_ids.device)  # [B, 1]
    finished = torch.zeros(batch, dtype=torch.bool, device=source_ids.device)
    generated = []
    for _ in range(max_target - 1):
        hidden, _, _ = model.decode(current, cache)  # [B, 1, d_model]
        next_ids = model.logits(hidden[:, -1]).argmax(dim=-1)  # [B]
        next_ids = next_ids.masked_fill(finished, config.pad_id)
        generated.append(next_ids)
        finished |= next_ids == config.eos_id
        if bool(finished.all()):
            break
        current = next_ids[:, None]
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


@dataclass
class Hypothesis:
    ids: list[int]  # generated ids without BOS (EOS included when finished)
    log_probability: float
    score: float  # log probability divided by the length penalty
    finished: bool


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha; alpha 0 compares raw log probabilities."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def beam_search(model: Transformer, source_ids: torch.Tensor, beam_width: int = 4, alpha: float = 0.6,
                max_target: int | None = None) -> list[Hypothesis]:
    """Beam search for one source [1, S]; returns the finished (or, failing that, alive) hypotheses, best first."""
    config = model.config
    max_target = max_target or default_max_target(source_ids.shape[1], config.max_len)
    memory, memory_mask, _ = model.encode(source_ids)
    cache = model.start_cache(memory, memory_mask)
    alive_ids = [[]]  # per beam row
    alive_scores = torch.zeros(1, device=source_ids.device)  # [beams] summed log probabilities
    current = torch.full((1, 1), config.bos_id, dtype=torch.long, device=source_ids.device)
    finished: list[Hypothesis] = []
    for step in range(max_target - 1):
        hidden, _, _ = model.decode(current, cache)  # [beams, 1, d_model]
        log_probs = torch.log_softmax(model.logits(hidden[:, -1]).float(), dim=-1)  # [beams, V]
        log_probs[:, config.pad_id] = float("-inf")
        log_probs[:, config.bos_id] = float("-inf")
        totals = (alive_scores[:, None] + log_probs).view(-1)  # [beams * V]
        top_scores, top_index = totals.topk(min(2 * beam_width, totals.numel()))
        vocab = log_probs.shape[1]
        keep_rows, keep_tokens, keep_scores = [], [], []
        for score, index in zip(top_scores.tolist(), top_index.tolist()):
            row, token = divmod(index, vocab)
            ids = alive_ids[row] + [token]
            if token == config.eos_id:
                finished.append(Hypothesis(ids, score, score / length_penalty(len(ids), alpha), True))
            elif len(keep_rows) < beam_width:
                keep_rows.append(row)
                keep_tokens.append(token)
                keep_scores.append(score)
        best_finished = max((h.score for h in finished), default=float("-inf"))
        if not keep_rows:
            break
        # Stop once no alive hypothesis can beat the best finished one (scores only fall).
        best_alive_bound = max(keep_scores) / length_penalty(max_target, alpha) if alpha > 0 else max(keep_scores)
        if len(finished) >= beam_width and best_finished >= best_alive_bound:
            break
        rows = torch.tensor(keep_rows, device=source_ids.device)
        cache = cache.select(rows)
        alive_ids = [alive_ids[r] + [t] for r, t in zip(keep_rows, keep_tokens)]
        alive_scores = torch.tensor(keep_scores, device=source_ids.device)
        current = torch.tensor(keep_tokens, device=source_ids.device)[:, None]
    if not finished:
        finished = [Hypothesis(ids, s, s / length_penalty(len(ids), alpha), False)
                    for ids, s in zip(alive_ids, alive_scores.tolist())]
    return sorted(finished, key=lambda h: h.score, reverse=True)
