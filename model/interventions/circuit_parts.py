"""What the circuits (model/circuits/) read of a network's hooked pass: its layers, heads and norms, and each head's own
projections, so that one edge of the computational graph can be patched in the network's own forward pass.

An edge changes the input of one receiver (a head, a feed-forward block, the logits) and not its neighbours': a
head's queries, keys and values are formed again from that head's own input (``head_inputs``), and a pre-norm
receiver's LayerNorm is recomputed on it (``read_norm``). A family whose adapter serves the circuits
(``InterventionTool.CIRCUITS``) gives its ``CircuitParts`` (``circuit_parts()``); the hook names are
model/interventions/hooked.py's, with each sublayer norm's scale 1/σ at ``….self.scale``, ``….cross.scale`` and
``….mlp_scale`` (a post-norm model's norms sit on the residual stream: the circuits hold them at the clean run's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

# Why an adapter does not serve them (``unserved``), in one line each.
NO_CROSSING = "the circuits here cross from an encoder into a decoder, and {what} has no {part}"
NOT_SPLIT = (
    "circuits are found on the app's own Transformers: a Hugging Face model's hooked pass (on the library's modules) "
    "does not yet give each head its own input or each norm its scale, which patching one edge needs"
)

Norm = Callable[[torch.Tensor], torch.Tensor]  # [..., d_model] -> [..., d_model]


@dataclass(frozen=True)
class CircuitParts:
    """The parts of an encoder-decoder that its computational graph is made of."""

    n_encoder_layers: int
    n_decoder_layers: int
    n_heads: int
    pre_norm: bool  # each sublayer's norm before it reads (recomputed per receiver); else after its add, on the stream
    # (side "encoder" | "decoder", layer, sublayer "self" | "cross" | "mlp") -> the norm it reads through (pre-norm),
    # or None (post-norm: it reads the stream itself)
    read_norm: Callable[[str, int, str], Norm | None]
    memory_norm: Norm | None  # the encoder's final norm before the memory (pre-norm), or None
    final_norm: Norm | None  # the decoder's final norm before the logits (pre-norm), or None
    # (side, layer, "qkv" | "q" | "kv", each head's own input [B, H, L, d_model]) -> q, k, v (or q; or k, v) [B, H, L, d_k]
    head_inputs: Callable[[str, int, str, torch.Tensor], tuple[torch.Tensor, ...]]
    # (side, layer, sublayer) -> the norm's γ [d_model]: how a post-norm norm, held at the clean run's scale, carries a
    # change of the stream (γ ⊙ (Δ − mean Δ) · s)
    norm_weight: Callable[[str, int, str], torch.Tensor]


class CircuitPass(Protocol):
    """A hooked-pass adapter that serves the circuits."""

    def circuit_parts(self) -> CircuitParts: ...
