"""Multi-head attention and the position-wise feed-forward block of "Attention Is All You Need", written for inspection.

Every attention module has two paths through the same weights:

* the fast path calls ``torch.nn.functional.scaled_dot_product_attention`` and is what training uses;
* the inspection path (``need_weights=True``) computes softmax(QK^T / sqrt(d_k) + mask) by hand and returns the
  probabilities of every head, exactly as they weighted the values; a hook on the scores or the pattern runs it too
  (a hook that only reads them keeps the fast path's values).

Its hook points (model/nn/hooks.py) are the queries, keys and values [B, H, L, d_k], the scores and the pattern
[B, H, Q, K] (on the inspection path), and each head's output through its slice of W^O [B, H, Q, d_model], formed only
when hooked. Masks are boolean with True meaning "may attend"; masked scores are -inf, so padded keys and future
positions get probability exactly 0.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from model.nn.caches import LayerCache
from model.nn.config import TransformerConfig
from model.nn.dropout import Dropout
from model.nn.hooks import HookPoint
from model.nn.packing import PackedRows
from model.nn.positions import StackPositions

ATTENTION_POINTS = ("q", "k", "v", "scores", "pattern", "head_out")  # an attention's own hook points, in pass order


def attention_scores(
    q: torch.Tensor,  # [B, H, Q, d_k]
    k: torch.Tensor,  # [B, H, K, d_k]
    mask: torch.Tensor | None = None,  # bool, broadcast to [B, H, Q, K]; True = may attend
    is_causal: bool = False,  # query i attends to keys 0..i (Q = K)
    bias: torch.Tensor | None = None,  # [H, Q, K] added to the scores (ALiBi, a relative bias: model/nn/positions.py)
) -> torch.Tensor:
    """QKᵀ / √d_k (+ the positions' bias) with masked keys at -inf: [B, H, Q, K], the scores the softmax reads
    (``attention_weights``; the neuron view shows them, model/neuron/)."""
    scores = torch.matmul(q, k.transpose(-2, -1)).mul_(1.0 / math.sqrt(q.shape[-1]))  # [B, H, Q, K]
    if bias is not None:
        scores = scores + bias.to(scores.dtype)  # [B, H, Q, K]
    if is_causal:
        n_queries = q.shape[-2]
        causal = torch.ones(n_queries, n_queries, dtype=torch.bool, device=q.device).tril()  # [Q, Q]
        mask = causal if mask is None else mask & causal
    if mask is not None:
        scores = scores.masked_fill_(~mask, float("-inf"))
    return scores


def attention_weights(
    q: torch.Tensor,  # [B, H, Q, d_k]
    k: torch.Tensor,  # [B, H, K, d_k]
    mask: torch.Tensor | None = None,  # bool, broadcast to [B, H, Q, K]; True = may attend
    is_causal: bool = False,  # query i attends to keys 0..i (Q = K)
    bias: torch.Tensor | None = None,  # [H, Q, K] the positions' bias
) -> torch.Tensor:
    """softmax(QKᵀ / √d_k) with masked keys at -inf: [B, H, Q, K]. The one computation of attention probabilities that
    every path shares (the inspection pass, one-token decoding steps, the attribution passes, the neuron view); training's
    fast path asks PyTorch's fused kernel for the same softmax(QKᵀ / √d_k) V without the weights."""
    return torch.softmax(attention_scores(q, k, mask, is_causal, bias), dim=-1)


def through_heads(vectors: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Each head's vectors [B, H, L, d_k] through its slice of an output projection's weight W^O [d_model, H * d_k]
    -> [B, H, L, d_model] (contexts: each head's part of the output; values: each key's vector as the head passes it on)."""
    n_heads = vectors.shape[1]
    out = weight.view(weight.shape[0], n_heads, -1)  # [d_model, H, d_k]
    return torch.einsum("bhld,mhd->bhlm", vectors, out)  # [B, H, L, d_model]


def split_heads(vectors: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, L, H * d_k] (the heads side by side, as a projection gives them) -> [B, H, L, d_k]."""
    return vectors.view(*vectors.shape[:2], n_heads, -1).transpose(1, 2)


def head_outputs(module: MultiHeadAttention, context: torch.Tensor) -> torch.Tensor:
    """Each head's context [B, H, Q, d_k] through its slice of W^O -> [B, H, Q, d_model] (their sum is the output)."""
    return through_heads(context, module.out_projection.weight)  # [B, H, Q, d_model]


Masking = tuple[torch.Tensor | None, bool, torch.Tensor | None]  # (bool mask, causal, the positions' bias [H, Q, K])


def _fast_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, is_causal: bool, bias: torch.Tensor | None
) -> torch.Tensor:
    """PyTorch's fused softmax(QKᵀ / √d_k + bias) V [B, H, Q, d_k]; a bias goes in as a float mask, the boolean mask
    and the causal one at -inf in it."""
    if bias is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device)  # [Q, K]
    if is_causal:
        allowed = allowed.tril()
    if mask is not None:
        allowed = allowed & mask  # [B or 1, 1, Q, K]
    additive = bias.to(q.dtype).masked_fill(~allowed, float("-inf"))  # [B or 1, H, Q, K]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=additive)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: self-attention projects Q, K, V from one input in a single matmul.

    The projections are matrices without bias, as in the paper: head_i = Attention(Q W_i^Q, K W_i^K,
    V W_i^V) and MultiHead = Concat(head_1..h) W^O.
    """

    def __init__(self, config: TransformerConfig, self_attention: bool, positions: StackPositions | None = None):
        super().__init__()
        self.positions = positions  # self-attention's rotary turn or score bias (model/nn/positions.py); None: none
        self.n_heads = config.n_heads
        self.d_k = config.d_k
        self.is_self_attention = self_attention
        if self_attention:
            self.qkv_projection = nn.Linear(config.d_model, 3 * config.d_model, bias=False)
        else:
            self.q_projection = nn.Linear(config.d_model, config.d_model, bias=False)
            self.kv_projection = nn.Linear(config.d_model, 2 * config.d_model, bias=False)
        self.out_projection = nn.Linear(config.d_model, config.d_model, bias=False)
        self.hook_q, self.hook_k, self.hook_v = HookPoint(), HookPoint(), HookPoint()  # [B, H, L, d_k] each
        self.hook_scores, self.hook_pattern = HookPoint(), HookPoint()  # [B, H, Q, K] each
        self.hook_head_out = HookPoint()  # [B, H, Q, d_model]

    def hook_points(self) -> dict[str, HookPoint]:
        """Its own hook points by name (ATTENTION_POINTS)."""
        return {name: getattr(self, f"hook_{name}") for name in ATTENTION_POINTS}

    def _split_projection(self, projected: torch.Tensor, parts: int) -> tuple[torch.Tensor, ...]:
        """[B, L, parts * d_model] -> parts x [B, H, L, d_k], as views (no copies). Split on the parts axis
        before moving heads forward: the backward pass then gathers the gradients of all parts straight into
        the contiguous [B, L, parts * d_model] layout, one copy instead of two."""
        batch, length, _ = projected.shape
        split = projected.view(batch, length, parts, self.n_heads, self.d_k).unbind(2)  # parts x [B, L, H, d_k]
        return tuple(part.transpose(1, 2) for part in split)

    def head_projections(self, reads: torch.Tensor, parts: str) -> tuple[torch.Tensor, ...]:
        """Each head's own input [B, H, L, d_model] through its slices of the projections named by ``parts`` ("qkv" for
        self-attention; "q" or "kv" for cross-attention) -> one [B, H, L, d_k] per part, queries and keys turned as the
        pass turns them (rope): what a head would compute had it alone read ``reads`` (the circuits' edges, which
        change one head's input and not its neighbours', model/circuits/)."""
        if parts == "qkv":
            weight = self.qkv_projection.weight
        else:
            weight = self.q_projection.weight if parts == "q" else self.kv_projection.weight
        slices = weight.view(len(parts), self.n_heads, self.d_k, weight.shape[-1])  # [parts, H, d_k, d_model]
        projected = torch.einsum("bhld,phkd->pbhlk", reads, slices).unbind(0)  # parts x [B, H, L, d_k]
        if parts == "qkv" and self.positions is not None:
            q, k = self.positions.turn(projected[0], projected[1], 0)
            return q, k, projected[2]
        return tuple(projected)

    def forward(
        self,
        x: torch.Tensor,  # [B, Q, d_model] queries (and keys/values for self-attention)
        mask: torch.Tensor | None = None,  # bool [B or 1, 1, Q or 1, K], True = may attend
        is_causal: bool = False,
        keys_values: tuple[torch.Tensor, torch.Tensor] | None = None,  # cross-attention memory
        need_weights: bool = False,
        rows: PackedRows | None = None,  # x holds only these rows of the queries, as [N, d_model]
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        spread = rows.unpack if rows is not None else (lambda t: t)
        if self.is_self_attention:
            q, k, v = self._split_projection(spread(self.qkv_projection(x)), 3)  # 3 x [B, H, Q, d_k]
        else:
            (q,) = self._split_projection(spread(self.q_projection(x)), 1)  # [B, H, Q, d_k]
            assert keys_values is not None, "cross-attention reads the memory's keys and values"
            k, v = keys_values  # [B, H, S, d_k]
        bias = None
        if self.positions is not None:
            q, k = self.positions.turn(q, k, 0)  # rope: turned by their positions
            bias = self.positions.bias(q.shape[-2], k.shape[-2], 0)  # [H, Q, K] or None
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        if need_weights or self.hook_scores.hooked or self.hook_pattern.hooked:
            context, weights = self._by_hand(q, k, v, (mask, is_causal, bias), need_weights)
            return self._project(context, rows), weights
        return self._project(_fast_attention(q, k, v, mask, is_causal, bias), rows), None

    def _by_hand(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, masking: Masking, need_weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The inspection path, through the scores' and the pattern's hook points: (context [B, H, Q, d_k], the pattern
        [B, H, Q, K] when ``need_weights``). Hooks that only read them leave the fast path's context (its gradient
        flowing through the pattern read), so that reading never changes what the model computes."""
        computed = attention_scores(q, k, *masking)  # [B, H, Q, K]
        scores = self.hook_scores(computed)
        probabilities = torch.softmax(scores, dim=-1)  # [B, H, Q, K]
        pattern = self.hook_pattern(probabilities)
        context = pattern @ v  # [B, H, Q, d_k]
        if need_weights:
            return context, pattern
        if scores is computed and pattern is probabilities:
            fast = _fast_attention(q, k, v, *masking)  # [B, H, Q, d_k]
            context = fast.detach() + (context - context.detach())
        return context, None

    def _project(self, context: torch.Tensor, rows: PackedRows | None) -> torch.Tensor:
        """The heads' contexts [B, H, Q, d_k] concatenated through W^O -> [B, Q, d_model] ([N, d_model] with ``rows``)."""
        batch, _, n_queries, _ = context.shape
        merged = context.transpose(1, 2).reshape(batch, n_queries, -1)  # [B, Q, d_model]
        if rows is not None:
            merged = rows.pack(merged)  # [N, d_model]
        output = self.out_projection(merged)
        return self._through_heads(context, output, rows) if self.hook_head_out.hooked else output

    def _through_heads(self, context: torch.Tensor, output: torch.Tensor, rows: PackedRows | None) -> torch.Tensor:
        """The output as the sum of each head's output through its slice of W^O, passed through ``hook_head_out``:
        patched, the heads' sum; only read, ``output`` itself, its gradient flowing through the heads read."""
        per_head = head_outputs(self, context)  # [B, H, Q, d_model]
        heads = self.hook_head_out(per_head)
        summed = heads.sum(1)  # [B, Q, d_model]
        if rows is not None:
            summed = rows.pack(summed)  # [N, d_model]
        if heads is per_head:
            return output.detach() + (summed - summed.detach())
        return summed

    def step(self, x: torch.Tensor, cache: LayerCache | None = None, keys_values=None, mask=None):
        """One new query per row, for incremental decoding: x [B, d_model] -> (output [B, d_model],
        probabilities [B, H, keys]). Self-attention appends its key/value to ``cache``; cross-attention
        reads the memory's ``keys_values``. Functional calls only: this runs once per layer per token."""
        batch, bias = x.shape[0], None
        if self.is_self_attention:
            qkv = F.linear(x, self.qkv_projection.weight).view(batch, 3, self.n_heads, 1, self.d_k)
            q, k, v = qkv.unbind(1)  # 3 x [B, H, 1, d_k]
            assert cache is not None, "self-attention steps through a cache"
            position = cache.length  # the new query's (and key's) position
            if self.positions is not None:
                q, k = self.positions.turn(q, k, position)  # the cache keeps keys turned
            k, v = cache.append(k, v)  # [B, H, t, d_k]
            if self.positions is not None:
                bias = self.positions.bias(1, k.shape[-2], position)  # [H, 1, t] or None
        else:
            q = F.linear(x, self.q_projection.weight).view(batch, self.n_heads, 1, self.d_k)
            k, v = keys_values  # [B, H, S, d_k]
        weights = attention_weights(q, k, mask, bias=bias)  # [B, H, 1, K]
        context = torch.matmul(weights, v).view(batch, -1)  # [B, H * d_k]
        return F.linear(context, self.out_projection.weight), weights[:, :, 0]


class FeedForward(nn.Module):
    """Position-wise FFN(x) = max(0, x W1 + b1) W2 + b2."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.expand = nn.Linear(config.d_model, config.d_ff)
        self.contract = nn.Linear(config.d_ff, config.d_model)
        self.dropout = Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.contract(self.dropout(F.relu(self.expand(x))))

    def step(self, x: torch.Tensor) -> torch.Tensor:
        """Inference only (no dropout), as plain functional calls."""
        hidden = F.relu_(F.linear(x, self.expand.weight, self.expand.bias))
        return F.linear(hidden, self.contract.weight, self.contract.bias)
