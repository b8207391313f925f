"""Knocking heads out: the forward pass with chosen heads' outputs set to zero.

Multi-head attention concatenates the heads' outputs, head-major, and projects them with W^O
(model/nn/transformer.py: ``context.transpose(1, 2).reshape(B, Q, H * d_k)`` then ``out_projection``).
Head h's output therefore reaches the residual stream only through columns h·d_k … (h+1)·d_k of W^O, and
zeroing those columns is exactly the forward pass with that head's output zeroed — on every path (the fast
SDPA one, the inspection one, one-token steps and the stepper's NumPy engine, which copies the weights).

The masked model is a copy (``masked_model``): the open model is never changed, so a view or a worker
reading it at the same time sees the unmasked weights. Heads are named by kind, layer and head, counted from
1 by people (``cross:3:1``) and from 0 in code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, cast

import torch

from model.errors import UserError
from model.family import capabilities_of, family_of
from model.kinds import AttentionKind, KindError
from model.network import HeadMaskingNetwork, Network, stack_layers
from model.nn.hooks import copy_without_thread_hooks

NetworkT = TypeVar("NetworkT", bound=Network)


class MaskError(UserError):
    """A head to mask that the model does not have, or a mask written wrongly."""


@dataclass(frozen=True)
class Head:
    """One attention head: its kind, and its layer and head counted from 0."""

    kind: AttentionKind
    layer: int
    head: int

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.layer + 1}:{self.head + 1}"

    def describe(self) -> str:
        return f"{self.kind.value} L{self.layer + 1} H{self.head + 1}"

    def sort_key(self) -> tuple[int, int, int]:
        """Encoder heads first, then the decoder's self-attention, then cross-attention: the model's order."""
        return tuple(AttentionKind).index(self.kind), self.layer, self.head


def parse_heads(text: str) -> tuple[Head, ...]:
    """'cross:3:1,encoder:1:2' (layers and heads from 1) -> the heads in the model's order, without repeats."""
    heads = set()
    for item in text.split(","):
        if not item.strip():
            continue
        parts = [part.strip() for part in item.split(":")]
        if len(parts) != 3 or not all(part.isascii() and part.isdigit() for part in parts[1:]):  # not '²' (int() refuses it)
            raise MaskError(f"{item.strip()!r}: write a head as KIND:LAYER:HEAD, e.g. cross:3:1 (layers and heads from 1)")
        try:
            kind = AttentionKind.parse(parts[0])
        except KindError:
            raise MaskError(f"{item.strip()!r}: the kind is encoder, decoder or cross, not {parts[0]!r}") from None
        layer, head = int(parts[1]), int(parts[2])
        if layer < 1 or head < 1:
            raise MaskError(f"{item.strip()!r}: layers and heads are counted from 1")
        heads.add(Head(kind, layer - 1, head - 1))
    return tuple(sorted(heads, key=Head.sort_key))


def describe_heads(heads: tuple[Head, ...]) -> str:
    """'cross L3 H1, encoder L1 H2', or 'none'."""
    return ", ".join(head.describe() for head in heads) or "none"


def head_projection(model: Network, kind: AttentionKind, layer: int) -> tuple[torch.nn.Module, torch.Tensor, int]:
    """The output projection of ``kind``'s attention in ``layer`` of a network whose heads can be masked (its family's
    capabilities say ``head_masking``), its W^O [d_model, H * d_k] (a view of the module's weight), and d_k: the width
    of each head's columns (a T5's heads are ``d_kv`` wide, not d_model / H)."""
    network = cast(HeadMaskingNetwork, model)  # check_heads has asked its capabilities
    weight = network.head_weight(kind, layer)  # [d_model, H * d_k]
    return network.head_projection(kind, layer), weight, weight.shape[1] // network.head_count(kind)


def check_heads(model: Network, heads: tuple[Head, ...]) -> None:
    """Refuse heads the model does not have, or a model whose heads cannot be masked, with the reason."""
    if not heads:
        return
    capabilities, title = capabilities_of(model), family_of(model).title
    if not capabilities.head_masking:
        raise MaskError(
            f"heads are knocked out where each head's slice of the attention's output projection is known (the app's "
            f"Transformers, Hugging Face layouts whose projections are known), not in this model ({title})"
        )
    config, network = model.config, cast(HeadMaskingNetwork, model)
    for head in heads:
        if head.kind not in capabilities.kinds:
            raise MaskError(f"{head}: this model has no {head.kind.label}")
        n_layers = stack_layers(config, head.kind.stack)
        n_heads = network.head_count(head.kind)
        if head.layer >= n_layers or head.head >= n_heads:
            raise MaskError(f"{head}: this model's {head.kind.label} has {n_layers} layers of {n_heads} heads")


def zero_heads(model: Network, heads: tuple[Head, ...]) -> None:
    """Zero, in place, the W^O columns that carry each head's output (a bias, where W^O has one, is no head's)."""
    with torch.no_grad():
        for head in heads:
            _, weight, d_k = head_projection(model, head.kind, head.layer)
            weight[:, head.head * d_k : (head.head + 1) * d_k] = 0.0  # of [d_model, H * d_k] (a view: in place)


def masked_model(model: NetworkT, heads: tuple[Head, ...]) -> NetworkT:
    """A copy of ``model`` whose ``heads`` output zero; the model itself when there is nothing to mask."""
    check_heads(model, heads)
    if not heads:
        return model
    masked = copy_without_thread_hooks(model)
    zero_heads(masked, heads)
    masked.eval()
    return masked
