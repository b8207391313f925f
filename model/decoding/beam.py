"""Beam search that keeps its whole tree: every hypothesis kept at every step, with its token,
score and parent, so a user can see what was considered and ask for the trace of any hypothesis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from model.decoding.greedy import default_max_target, length_penalty
from model.family import suppressed_ids
from model.network import DecodingNetwork


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


@torch.inference_mode()
def beam_search(
    model: DecodingNetwork, source_ids: torch.Tensor, beam_width: int = 4, alpha: float = 0.6, max_target: int | None = None
) -> BeamTree:
    """Beam search for one source [1, S]; finished hypotheses (or, if none finished, the alive ones) best first."""
    if beam_width < 1:
        raise ValueError("beam width must be at least 1")
    config = model.config
    device = source_ids.device
    max_target = max_target or default_max_target(source_ids.shape[1], config.max_len)
    memory, memory_mask, _ = model.encode(source_ids)
    cache = model.start_cache(memory, memory_mask)
    tree = BeamTree(length_penalty=alpha)
    alive_nodes = [-1]
    alive_scores = torch.zeros(1, device=device)  # [beams] summed log probabilities
    current = torch.full((1,), config.bos_id, dtype=torch.long, device=device)
    finished: list[int] = []
    for step in range(max_target - 1):
        hidden, _, _ = model.decode_step(current, cache)  # [beams, d_model]
        log_probs = torch.log_softmax(model.logits(hidden).float(), dim=-1)  # [beams, V]
        log_probs[:, config.pad_id] = float("-inf")
        log_probs[:, config.bos_id] = float("-inf")
        log_probs[:, suppressed_ids(config)] = float("-inf")
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
            tree.nodes.append(BeamNode(step, token, alive_nodes[row], total, total / length_penalty(step + 1, alpha), is_eos))
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
        bound = max(keep_scores) / (length_penalty(max_target - 1, alpha) if alpha > 0 else 1.0)
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
