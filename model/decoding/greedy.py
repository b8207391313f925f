"""Batched greedy decoding with cached keys/values (evaluation, validation), and the length penalty.

It encodes the source once and feeds the decoder one new token per step; the cache holds every
layer's past keys and values, so a step costs attention over the prefix only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from model.family import capabilities_of, forced_first_id, suppressed_ids
from model.network import DecodingNetwork, Network, PromptNetwork

DEFAULT_CONTINUATION = 20  # tokens a decoder-only model adds to its prompt unless told otherwise


def default_max_target(source_length: int, max_len: int) -> int:
    """Target pieces allowed (BOS included): room for a translation somewhat longer than the source."""
    return min(max_len, 2 * source_length + 10)


@torch.inference_mode()
def greedy_decode(model: DecodingNetwork, source_ids: torch.Tensor, max_target: int | None = None) -> list[list[int]]:
    """source_ids [B, S] (padded) -> per sentence the generated ids, without BOS and EOS.

    Each sentence's length limit is its own (``max_target``, else from its unpadded length), so a sentence
    decodes the same whatever it is batched with, and the same as the Stepper decodes it alone."""
    config = model.config
    source_lengths = (source_ids != config.pad_id).sum(dim=1).tolist()  # [B]
    limits = [max_target or default_max_target(length, config.max_len) for length in source_lengths]
    memory, memory_mask, _ = model.encode(source_ids)  # [B, S, d_model]
    ids, _ = greedy_rows(model, memory, memory_mask, limits)  # [B, steps]
    return [_strip(row, config.eos_id, config.pad_id) for row in ids.tolist()]


@torch.inference_mode()
def greedy_rows(
    model: DecodingNetwork, memory: torch.Tensor, memory_mask: torch.Tensor | None, limits: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy decoding of each row of ``memory`` [B, S, d_model] up to its limit (target pieces, BOS included), as the
    Stepper decodes: the model's forced first token where its generation forces one (a language code), its suppressed
    tokens never chosen -> (the chosen ids [B, steps], -1 after a row's EOS or limit; each one's log probability
    [B, steps])."""
    config = model.config
    batch, device = memory.shape[0], memory.device
    cache = model.start_cache(memory, memory_mask)
    current = torch.full((batch,), config.bos_id, dtype=torch.long, device=device)  # [B]
    finished = torch.zeros(batch, dtype=torch.bool, device=device)  # [B]
    generated_limit = torch.tensor(limits, device=device) - 1  # [B]: the ids each row may generate (BOS is a piece)
    suppressed, forced = suppressed_ids(config), forced_first_id(config)
    chosen, log_probabilities = [], []
    for count in range(1, max(limits)):
        hidden, _, _ = model.decode_step(current, cache)  # [B, d_model]
        step_log_probabilities = torch.log_softmax(model.logits(hidden).float(), dim=-1)  # [B, V]
        if suppressed:
            step_log_probabilities[:, suppressed] = float("-inf")
        current = step_log_probabilities.argmax(-1)  # [B]
        if count == 1 and forced is not None:
            current = torch.full_like(current, forced)
        chosen.append(current.masked_fill(finished, -1))
        log_probabilities.append(step_log_probabilities.gather(-1, current[:, None])[:, 0])  # [B]
        finished |= (current == config.eos_id) | (generated_limit <= count)
        if bool(finished.all()):
            break
    if not chosen:
        return torch.zeros((batch, 0), dtype=torch.long), torch.zeros((batch, 0))
    return torch.stack(chosen, 1), torch.stack(log_probabilities, 1)  # [B, steps]


@torch.inference_mode()
def greedy_prompt(model: PromptNetwork, prompt_ids: torch.Tensor, max_new: int | None = None) -> list[int]:
    """A decoder-only model's greedy steps from prompt_ids [1, P], as the Stepper takes them: the prompt's given
    tokens (its first is the first input, not a step), then up to ``max_new`` (default DEFAULT_CONTINUATION) generated,
    within the model's positions, the EOS included where decoding ended on one."""
    return greedy_prompts(model, [prompt_ids[0].tolist()], max_new)[0]


def greedy_prompts(model: PromptNetwork, prompts: Sequence[Sequence[int]], max_new: int | None = None) -> list[list[int]]:
    """``greedy_prompt`` of each prompt, decoded together: prompts of several lengths left-padded, the pads masked and
    each row's positions its own (``start_padded_cache``), so that each row decodes as it would alone; a row that
    reached the EOS or its limit keeps its steps while the others go on."""
    config, device = model.config, next(model.parameters()).device
    rows = [[int(token) for token in prompt] for prompt in prompts]
    longest = max(len(row) for row in rows)
    limits = [min(len(row) - 1 + (max_new or DEFAULT_CONTINUATION), config.max_len - 1) for row in rows]
    ids = torch.tensor([[row[0]] * (longest - len(row)) + row for row in rows], device=device)  # [B, P]: left-padded
    padding = torch.tensor([[0] * (longest - len(row)) + [1] * len(row) for row in rows], device=device)  # [B, P]
    cache = model.start_cache() if bool(padding.all()) else model.start_padded_cache(padding)
    outputs, _, _ = model.decode_steps(ids, cache)  # [B, P, ...]
    logits = model.logits(outputs[:, -1]).float()  # [B, V]
    steps, suppressed = [row[1:] for row in rows], suppressed_ids(config)
    going = [len(step) < limit for step, limit in zip(steps, limits)]
    while any(going):
        if suppressed:
            logits[:, suppressed] = float("-inf")
        chosen = logits.argmax(-1)  # [B]
        for row, token in enumerate(chosen.tolist()):
            if going[row]:
                steps[row].append(token)
                going[row] = token != config.eos_id and len(steps[row]) < limits[row]
        if not any(going):
            break
        output, _, _ = model.decode_step(chosen, cache)  # [B, ...]
        logits = model.logits(output).float()  # [B, V]
    return steps


def _strip(ids: list[int], eos_id: int, pad_id: int) -> list[int]:
    out = []
    for piece_id in ids:
        if piece_id == eos_id or piece_id < 0:
            break
        if piece_id != pad_id:
            out.append(piece_id)
    return out


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha; alpha 0 compares raw log probabilities."""
    return ((5.0 + length) / 6.0) ** alpha


def decoder_inputs(model: Network, source_ids: Sequence[int], chosen_ids: Sequence[int]) -> list[int]:
    """What the decoder reads along ``chosen_ids`` (step t's token, read at step t + 1): the start token, then every
    chosen token but the last; a decoder-only model's: ``source_ids`` (its prompt: the first input, then the given
    steps, in place of the chosen ones there), then the rest. Each has one input per chosen token."""
    chosen = [int(token) for token in chosen_ids]
    if capabilities_of(model).architecture.has_encoder:
        return [model.config.bos_id] + chosen[:-1]
    return ([int(token) for token in source_ids] + chosen[len(source_ids) - 1 :])[: len(chosen)]


def given_steps(model: Network, source_ids: Sequence[int]) -> int:
    """How many first steps are given, not decoded: a decoder-only model's prompt after its first token; none else."""
    return 0 if capabilities_of(model).architecture.has_encoder else len(source_ids) - 1
