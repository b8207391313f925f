"""What the neuron view reads of one sentence (model/neuron/vectors.py): every head's queries, keys, scores and
weights, and the terms its scores split into by position; and the helpers every reader shares to carry the positional
part of the residual stream through a LayerNorm."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import torch

from model.errors import UserError
from model.kinds import AttentionKind
from model.neuron.splits import TermSplit
from model.pretrained.offload import tensor_of


class NeuronError(UserError):
    """A model, kind, layer, head or query that the neuron view cannot show; the message says why."""


@dataclass
class KindVectors:
    """One kind of attention of one sentence: every layer's and head's queries, keys, scores and weights."""

    kind: AttentionKind
    queries: np.ndarray  # [layers, heads, Q, d_k]
    keys: np.ndarray  # [layers, heads, K, d_k]
    scores: np.ndarray  # [layers, heads, Q, K] QKᵀ/√d_k, -inf where masked
    weights: np.ndarray  # [layers, heads, Q, K] the softmax of the scores
    terms: np.ndarray | None = None  # [n, layers, heads, Q, K] the terms the scores sum to by position; None: no split
    term_split: TermSplit | None = None  # what the terms are

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(layers, heads, queries, keys)."""
        layers, heads, n_queries, n_keys = self.scores.shape
        return layers, heads, n_queries, n_keys

    def first_rows(self, n_rows: int, keys_too: bool) -> KindVectors:
        """The first ``n_rows`` queries (and keys, ``keys_too``): a causal decoder's as they were ``n_rows`` steps in."""
        keys = slice(0, n_rows) if keys_too else slice(None)
        return KindVectors(
            self.kind,
            self.queries[:, :, :n_rows],
            self.keys[:, :, keys],
            self.scores[:, :, :n_rows, keys],
            self.weights[:, :, :n_rows, keys],
            None if self.terms is None else self.terms[:, :, :, :n_rows, keys],
            self.term_split,
        )

    @property
    def split(self) -> bool:
        """Whether the scores are split into terms by position."""
        return self.terms is not None


@dataclass
class SentenceVectors:
    """Every kind's vectors of one sentence (the kinds the model has), with the ids the pass read."""

    kinds: dict[AttentionKind, KindVectors]
    source_ids: list[int]
    target_input_ids: list[int]  # what the decoder read: its first input, then the tokens produced but the last
    positions: str = ""  # the positional encoding split off ("sinusoidal", "learned"); "" when none is

    def prefix(self, n_steps: int) -> SentenceVectors:
        """The vectors as the first ``n_steps`` decoding steps had them: the decoder is causal, so its first rows and keys
        (and cross-attention's first rows) do not depend on what comes later."""
        kinds = dict(self.kinds)
        for kind in (AttentionKind.DECODER, AttentionKind.CROSS):
            if kind in kinds:
                kinds[kind] = kinds[kind].first_rows(n_steps, keys_too=kind.causal)
        inputs = self.target_input_ids[:n_steps]
        return SentenceVectors(kinds, self.source_ids, inputs, self.positions)

    def of(self, kind: AttentionKind | str) -> KindVectors:
        kind = AttentionKind.parse(kind)
        if kind not in self.kinds:
            raise NeuronError(f"this model has no {kind.label}")
        return self.kinds[kind]


def normalised_part(norm: torch.nn.LayerNorm, full: torch.Tensor, part: torch.Tensor) -> torch.Tensor:
    """The part of LN(full) that ``part`` of ``full`` [..., d_model] makes, with LN's mean and σ fixed from ``full``:
    γ⊙(part − mean(part))/σ (β belongs to no part: the caller counts it as content)."""
    variance = full.var(-1, unbiased=False, keepdim=True)  # [..., 1]
    centred = part - part.mean(-1, keepdim=True)  # [..., d_model]
    scaled = centred / torch.sqrt(variance + norm.eps)  # [..., d_model]
    weight = tensor_of(norm, "weight")  # [d_model] (an offloaded layer's read from its weights)
    return scaled * weight if weight is not None else scaled


@dataclass
class Read:
    """The positional parts of what one attention sublayer read: of its queries' stream, and (cross-attention) of the
    memory its keys come from."""

    query_positions: torch.Tensor  # [1, Q, d_model]
    memory_positions: torch.Tensor | None = None  # cross-attention's [1, S, d_model]


def through_norm(
    norm: torch.nn.Module, pre_norm: bool, x: torch.Tensor, position: torch.Tensor, output: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """A sublayer with LayerNorm ``norm`` (read before it: ``pre_norm``; else applied after the residual add) reading
    stream x [1, L, d_model] with positional part ``position``: (the positional part of what the sublayer reads, the
    positional part of the stream after it, given its ``output``)."""
    layer_norm = cast(torch.nn.LayerNorm, norm)
    if pre_norm:
        return normalised_part(layer_norm, x, position), position
    after = position if output is None else normalised_part(layer_norm, x + output, position)
    return position, after


def attention_name(kind: AttentionKind, layer: int) -> str:
    """The hook-name prefix of the attention of ``kind`` in ``layer`` (from 0)."""
    if kind is AttentionKind.ENCODER:
        return f"encoder.{layer}.self"
    return f"decoder.{layer}.{'self' if kind is AttentionKind.DECODER else 'cross'}"
