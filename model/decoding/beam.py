"""Beam search that keeps its whole tree: every hypothesis kept at every step, with its token,
score and parent, so a user can see what was considered and ask for the trace of any hypothesis.

A decoder-only model searches from its prompt: the prompt's given tokens are the tree's first steps (one node each, a
trunk scored 0: a hypothesis is scored on what it adds, as ``generate`` scores it), so the tree's steps are the trace's
and every hypothesis begins with the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import torch

from model.decoding.greedy import default_max_target, length_penalty
from model.family import capabilities_of, suppressed_ids
from model.network import DecodingNetwork, PromptNetwork


@dataclass
class BeamNode:
    step: int  # 0-based step that produced the token
    token_id: int
    parent: int  # index into BeamTree.nodes, -1 for a child of <s>
    log_probability: float  # of the whole prefix up to and including this token
    score: float  # log probability / length penalty
    finished: bool  # the token is EOS


@dataclass
class BeamTree:
    nodes: list[BeamNode] = field(default_factory=list)
    hypotheses: list[int] = field(default_factory=list)  # nodes ending a hypothesis, best first
    pieces: list[str] = field(default_factory=list)  # the token piece of each node (set by whoever has the tokenizer)
    length_penalty: float = 0.6  # the GNMT alpha the search scored with

    def node_path(self, node_index: int) -> list[int]:
        """The nodes from the first step to this one."""
        path = []
        while node_index >= 0:
            path.append(node_index)
            node_index = self.nodes[node_index].parent
        return path[::-1]

    def token_ids(self, node_index: int) -> list[int]:
        """The tokens from the first step to this node (EOS included when it ends one)."""
        return [self.nodes[index].token_id for index in self.node_path(node_index)]

    def steps(self) -> list[list[int]]:
        """Node indices grouped by step."""
        by_step: list[list[int]] = []
        for index, node in enumerate(self.nodes):
            while len(by_step) <= node.step:
                by_step.append([])
            by_step[node.step].append(index)
        return by_step

    @property
    def best(self) -> list[int]:
        return self.token_ids(self.hypotheses[0]) if self.hypotheses else []


def _start(model: DecodingNetwork, source_ids: torch.Tensor, tree: BeamTree) -> tuple[Any, int, int]:
    """The decoder's cache after its start: an encoder-decoder's source encoded; a decoder-only model's prompt
    (source_ids [1, P]) read, its given tokens (all but the first) put in the tree as its trunk -> (the cache, the
    last input token, the trunk's last node or -1)."""
    config, can = model.config, capabilities_of(model)
    if can.architecture.has_encoder:
        memory, memory_mask, _ = model.encode(source_ids)
        return model.start_cache(memory, memory_mask), config.bos_id, -1
    prompt = [int(token) for token in source_ids[0].tolist()]
    cache = cast(PromptNetwork, model).start_cache()
    if len(prompt) > 1 and can.prompt_in_one_pass:
        cast(PromptNetwork, model).decode_steps(source_ids[:, :-1], cache)  # every prompt token but the last, in one pass
    elif len(prompt) > 1:
        for token in prompt[:-1]:
            model.decode_step(torch.tensor([token], device=source_ids.device), cache)
    for step, token in enumerate(prompt[1:]):
        tree.nodes.append(BeamNode(step, token, len(tree.nodes) - 1, 0.0, 0.0, False))
    return cache, prompt[-1], len(tree.nodes) - 1


@torch.inference_mode()
def beam_search(
    model: DecodingNetwork, source_ids: torch.Tensor, beam_width: int = 4, alpha: float = 0.6, max_target: int | None = None
) -> BeamTree:
    """Beam search for one source [1, S] (a decoder-only model's prompt, whose given tokens are the tree's first
    steps); finished hypotheses (or, if none finished, the alive ones) best first. ``max_target``: the steps allowed,
    plus one (a decoder-only model's given ones count)."""
    if beam_width < 1:
        raise ValueError("beam width must be at least 1")
    config = model.config
    device = source_ids.device
    max_target = max_target or default_max_target(source_ids.shape[1], config.max_len)
    tree = BeamTree(length_penalty=alpha)
    cache, first, trunk = _start(model, source_ids, tree)
    given = len(tree.nodes)  # the trunk's steps: the hypotheses are scored on the steps after them
    alive_nodes = [trunk]
    alive_scores = torch.zeros(1, device=device)  # [beams] summed log probabilities
    current = torch.full((1,), first, dtype=torch.long, device=device)
    finished: list[int] = []
    # An encoder-decoder's padding and start token are no output (a decoder-only model's "pad" may be a real token)
    banned = [config.pad_id, config.bos_id] if capabilities_of(model).architecture.has_encoder else []
    banned += list(suppressed_ids(config))
    for step in range(given, max_target - 1):
        hidden, _, _ = model.decode_step(current, cache)  # [beams, d_model]
        log_probs = torch.log_softmax(model.logits(hidden).float(), dim=-1)  # [beams, V]
        log_probs[:, banned] = float("-inf")
        totals = (alive_scores[:, None] + log_probs).view(-1)  # [beams * V]
        top_scores, top_index = totals.topk(min(2 * beam_width, totals.numel()))
        vocab = log_probs.shape[1]
        keep_rows: list[int] = []
        keep_tokens: list[int] = []
        keep_scores: list[float] = []
        keep_nodes: list[int] = []
        for total, index in zip(top_scores.tolist(), top_index.tolist()):
            if total == float("-inf"):
                break
            row, token = divmod(index, vocab)
            is_eos = token == config.eos_id
            if not is_eos and len(keep_rows) >= beam_width:
                continue
            score = total / length_penalty(step + 1 - given, alpha)
            tree.nodes.append(BeamNode(step, token, alive_nodes[row], total, score, is_eos))
            if is_eos:
                finished.append(len(tree.nodes) - 1)
            else:
                keep_rows.append(row)
                keep_tokens.append(token)
                keep_scores.append(total)
                keep_nodes.append(len(tree.nodes) - 1)
        if not keep_rows:
            break
        best_finished = max((tree.nodes[i].score for i in finished), default=float("-inf"))
        # Scores only fall as hypotheses grow, so an alive one can at best reach its log probability
        # divided by the largest length penalty still possible.
        bound = max(keep_scores) / (length_penalty(max_target - 1 - given, alpha) if alpha > 0 else 1.0)
        if len(finished) >= beam_width and best_finished >= bound:
            break
        rows = torch.tensor(keep_rows, device=device)
        cache = cache.select(rows)
        alive_nodes = keep_nodes
        alive_scores = torch.tensor(keep_scores, device=device)
        current = torch.tensor(keep_tokens, device=device)
    ends = finished or [n for n in alive_nodes if n >= 0]
    tree.hypotheses = sorted(ends, key=lambda i: tree.nodes[i].score, reverse=True)
    return tree
