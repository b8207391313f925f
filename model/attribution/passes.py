"""The app's Transformer written out sublayer by sublayer, for the measures that look inside a layer.

Every contribution measure needs more than the attention probabilities: ALTI splits each attention sublayer's
output into one vector per input token (through the residual and the layer norm), value zeroing runs one layer
again with a value vector removed, and the gradient methods differentiate through the probabilities and the
input embeddings. ``transparent_pass`` is the model's own teacher-forced forward pass (the same weights, the
same post- or pre-norm placement, no dropout), keeping per attention sublayer what those measures read:

* ``weights`` α [B, H, Q, K], in the autograd graph (attention × gradient differentiates through them);
* ``transformed`` f_h(h_j) = h_j W_V,h W_O,h [B, H, K, d_model], each key's vector as head h passes it on;
* ``residual`` x_i [B, Q, d_model], the input the sublayer's output is added to;
* ``norm``, the LayerNorm after the sum in a post-norm model (None in a pre-norm one).

It starts from the token embeddings (``embed_tokens``: E[id]·√d_model; the positional encoding is added
here), so the gradient methods can scale or differentiate them. A test checks that its logits and attention
equal the model's own inspection pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from model.nn.transformer import MultiHeadAttention, Transformer, attention_weights


@dataclass
class AttentionRecord:
    """One attention sublayer of one pass (see the module's docstring)."""

    weights: torch.Tensor  # [B, H, Q, K]
    transformed: torch.Tensor  # [B, H, K, d_model]
    residual: torch.Tensor  # [B, Q, d_model]
    norm: torch.nn.LayerNorm | None  # post-norm: applied to residual + output


@dataclass
class PassRecord:
    encoder: list[AttentionRecord] = field(default_factory=list)  # per encoder layer
    decoder: list[AttentionRecord] = field(default_factory=list)  # per decoder layer: masked self-attention
    cross: list[AttentionRecord] = field(default_factory=list)  # per decoder layer: cross-attention
    encoder_inputs: list[torch.Tensor] = field(default_factory=list)  # x entering each encoder layer [B, S, d_model]
    decoder_inputs: list[torch.Tensor] = field(default_factory=list)  # x entering each decoder layer [B, T, d_model]
    memory: torch.Tensor | None = None  # [B, S, d_model]: what cross-attention reads
    logits: torch.Tensor | None = None  # [B, T, V], or [B, V] at one position per row (``logits_at``)


def embed_tokens(model: Transformer, ids: torch.Tensor, side: str) -> torch.Tensor:
    """Token ids [B, L] -> their embeddings scaled as the model scales them [B, L, d_model] (no positions)."""
    embedding = model.source_embedding if side == "source" else model.target_embedding
    return embedding(ids) * math.sqrt(model.config.d_model)  # [B, L, d_model]


def _layer_norm(norm: torch.nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


def queries_keys_values(
    module: MultiHeadAttention,
    h: torch.Tensor,  # [B, Q, d_model] what the attention reads
    memory: torch.Tensor | None = None,  # [B, K, d_model] cross-attention's keys and values
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """An attention module's queries [B, H, Q, d_k], keys and values [B, H, K, d_k] (self-attention: K = Q)."""
    if module.is_self_attention:
        q, k, v = module._split_projection(module.qkv_projection(h), 3)  # 3 x [B, H, Q, d_k]
        return q, k, v
    assert memory is not None, "cross-attention reads the memory"
    (q,) = module._split_projection(module.q_projection(h), 1)  # [B, H, Q, d_k]
    k, v = module._split_projection(module.kv_projection(memory), 2)  # 2 x [B, H, K, d_k]
    return q, k, v


def attend(
    layer,
    index: int,
    module,
    x: torch.Tensor,  # [B, Q, d_model] the residual stream
    memory: torch.Tensor | None = None,  # [B, K, d_model] cross-attention's keys and values
    causal: bool = False,
    value_scale: torch.Tensor | None = None,  # [B, K]: each key's value vector multiplied by this (value zeroing)
) -> tuple[torch.Tensor, AttentionRecord]:
    """Sublayer ``index`` of ``layer`` (its attention ``module``) with its residual and norm: (x out, record)."""
    norm = layer.norms[index]
    h = _layer_norm(norm, x) if layer.pre_norm else x  # [B, Q, d_model] what attention reads
    q, k, v = queries_keys_values(module, h, memory)  # 3 x [B, H, Q or K, d_k]
    if value_scale is not None:
        v = v * value_scale[:, None, :, None]  # [B, H, K, d_k]
    weights = attention_weights(q, k, is_causal=causal)  # [B, H, Q, K]: the model's own computation
    out = module.out_projection.weight.view(-1, module.n_heads, module.d_k)  # [d_model, H, d_k]
    transformed = torch.einsum("bhkd,mhd->bhkm", v, out)  # [B, H, K, d_model]: f_h(h_j)
    output = torch.einsum("bhqk,bhkm->bqm", weights, transformed)  # [B, Q, d_model]
    summed = x + output  # [B, Q, d_model]
    result = summed if layer.pre_norm else _layer_norm(norm, summed)
    return result, AttentionRecord(weights, transformed, x, None if layer.pre_norm else norm)


def feed_forward(layer, index: int, x: torch.Tensor) -> torch.Tensor:
    """The position-wise sublayer ``index`` with its residual and norm (no dropout)."""
    norm, ffn = layer.norms[index], layer.feed_forward
    h = _layer_norm(norm, x) if layer.pre_norm else x  # [B, L, d_model]
    output = F.linear(F.relu(F.linear(h, ffn.expand.weight, ffn.expand.bias)), ffn.contract.weight, ffn.contract.bias)
    return x + output if layer.pre_norm else _layer_norm(norm, x + output)


def encoder_layer(layer, x: torch.Tensor, value_scale: torch.Tensor | None = None) -> tuple[torch.Tensor, AttentionRecord]:
    """One encoder layer: x [B, S, d_model] -> (x out, its self-attention's record)."""
    x, record = attend(layer, 0, layer.self_attention, x, value_scale=value_scale)
    return feed_forward(layer, 1, x), record


def decoder_layer(
    layer,
    x: torch.Tensor,  # [B, T, d_model]
    memory: torch.Tensor,  # [B, S, d_model]
    self_scale: torch.Tensor | None = None,  # [B, T]
    cross_scale: torch.Tensor | None = None,  # [B, S]
) -> tuple[torch.Tensor, AttentionRecord, AttentionRecord]:
    """One decoder layer: (x out, masked self-attention's record, cross-attention's record)."""
    x, self_record = attend(layer, 0, layer.self_attention, x, causal=True, value_scale=self_scale)
    x, cross_record = attend(layer, 1, layer.cross_attention, x, memory=memory, value_scale=cross_scale)
    return feed_forward(layer, 2, x), self_record, cross_record


def transparent_pass(
    model: Transformer, source_vectors: torch.Tensor, target_vectors: torch.Tensor, logits_at: torch.Tensor | None = None
) -> PassRecord:
    """The teacher-forced pass from token embeddings: source [B, S, d_model], decoder inputs [B, T, d_model]
    (``embed_tokens``, or scaled copies of them). Sentences are unpadded (one sentence, repeated). With
    ``logits_at`` [B], only each row's logits at that position are computed ([B, V])."""
    record = PassRecord()
    positions = model.positional_table
    x = source_vectors + positions[: source_vectors.shape[1]]  # [B, S, d_model]
    for layer in model.encoder_layers:
        record.encoder_inputs.append(x)
        x, attention = encoder_layer(layer, x)
        record.encoder.append(attention)
    memory = model.encoder_norm(x)  # [B, S, d_model]
    record.memory = memory
    y = target_vectors + positions[: target_vectors.shape[1]]  # [B, T, d_model]
    for layer in model.decoder_layers:
        record.decoder_inputs.append(y)
        y, self_attention, cross_attention = decoder_layer(layer, y, memory)
        record.decoder.append(self_attention)
        record.cross.append(cross_attention)
    if logits_at is not None:
        y = y[torch.arange(y.shape[0], device=y.device), logits_at]  # [B, d_model]
    record.logits = model.logits(model.decoder_norm(y))  # [B, T, V] or [B, V]
    return record


def token_pass(model: Transformer, source_ids: torch.Tensor, target_input_ids: torch.Tensor) -> PassRecord:
    """``transparent_pass`` from token ids [B, S] and [B, T]."""
    return transparent_pass(model, embed_tokens(model, source_ids, "source"), embed_tokens(model, target_input_ids, "target"))
