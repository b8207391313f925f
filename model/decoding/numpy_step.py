"""One decoder step for one sentence in NumPy: the Stepper's engine on the CPU.

A step feeds a single token, so every operation works on a vector; at that size PyTorch's
per-operation overhead, not arithmetic, set the pace (about 1.8 ms a step at d_model 256 against
0.8 ms here). The weights are zero-copy views of the model's parameters; the encoder's keys and
values come from the torch model once per sentence. Tests check that its attention rows and logits
equal the torch inspection pass over the same sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from model.nn.caches import DecoderCache
from model.nn.transformer import DecoderLayer, Transformer


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy()


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    centred = x - x.mean()
    return centred / np.sqrt((centred * centred).mean() + eps) * weight + bias


def _softmax(scores: np.ndarray) -> np.ndarray:
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


Norm = tuple[np.ndarray, np.ndarray, float]  # LayerNorm's (weight [d_model], bias [d_model], eps)


@dataclass
class NumpyLayer:
    """One decoder layer's weights as arrays, the memory's keys and values, and its past keys and values."""

    qkv: np.ndarray  # [3 * d_model, d_model] self-attention's query, key and value projections
    self_out: np.ndarray  # [d_model, d_model]
    q: np.ndarray  # [d_model, d_model] cross-attention's query projection
    cross_out: np.ndarray  # [d_model, d_model]
    expand: tuple[np.ndarray, np.ndarray]  # [d_ff, d_model], [d_ff]
    contract: tuple[np.ndarray, np.ndarray]  # [d_model, d_ff], [d_model]
    norms: list[Norm]  # after (or before, pre-norm) self-attention, cross-attention, feed-forward
    memory_keys: np.ndarray  # [H, S, d_k]
    memory_values: np.ndarray  # [H, S, d_k]
    keys: np.ndarray  # [H, max_len, d_k] past keys (the first `length` positions are valid)
    values: np.ndarray  # [H, max_len, d_k]


def _norm(module: torch.nn.Module) -> Norm:
    assert isinstance(module, torch.nn.LayerNorm)
    return _array(module.weight), _array(module.bias), module.eps


class NumpyDecoder:
    """Incremental decoder for one source: ``step(token)`` -> (logits [V], self rows [L, H, t + 1],
    cross rows [L, H, S]); ``truncate(n)`` forgets positions from n on."""

    @staticmethod
    def serves(model: Transformer) -> bool:
        """Whether its steps are the model's: positions added to the embeddings, none inside self-attention (rotary
        turns and score biases are the torch step's, model/nn/positions.py)."""
        return not model.positions.in_attention

    def __init__(self, model: Transformer, cache: DecoderCache):
        config = model.config
        self.n_heads, self.d_k, self.max_len = config.n_heads, config.d_k, config.max_len
        self.scale = 1.0 / math.sqrt(config.d_k)
        self.embedding_scale = math.sqrt(config.d_model)
        self.pre_norm = config.norm_placement == "pre"
        self.embedding = _array(model.target_embedding.weight)  # [V, d_model]
        self.positions = _array(model.positional_table)  # [max_len, d_model]
        output = model.output_projection
        self.output_weight = self.embedding if output is None else _array(output.weight)
        self.output_bias = None if output is None else _array(output.bias)
        self.final_norm = _norm(model.decoder_norm) if self.pre_norm else None
        memory_mask = cache.memory_mask
        self.memory_blocked = None if memory_mask is None else ~_array(memory_mask[0, 0, 0].float()).astype(bool)
        self.layers: list[NumpyLayer] = []
        for layer, (memory_keys, memory_values) in zip(model.decoder_layers, cache.memory_keys_values):
            assert isinstance(layer, DecoderLayer)
            feed_forward = layer.feed_forward
            self.layers.append(
                NumpyLayer(
                    qkv=_array(layer.self_attention.qkv_projection.weight),
                    self_out=_array(layer.self_attention.out_projection.weight),
                    q=_array(layer.cross_attention.q_projection.weight),
                    cross_out=_array(layer.cross_attention.out_projection.weight),
                    expand=(_array(feed_forward.expand.weight), _array(feed_forward.expand.bias)),
                    contract=(_array(feed_forward.contract.weight), _array(feed_forward.contract.bias)),
                    norms=[_norm(norm) for norm in layer.norms],
                    memory_keys=_array(memory_keys[0]),
                    memory_values=_array(memory_values[0]),
                    keys=np.zeros((self.n_heads, config.max_len, self.d_k), np.float32),
                    values=np.zeros((self.n_heads, config.max_len, self.d_k), np.float32),
                )
            )
        self.length = 0

    def _residual(self, x: np.ndarray, norm: Norm, sublayer) -> tuple[np.ndarray, Any]:
        if self.pre_norm:
            output, extra = sublayer(_layer_norm(x, *norm))
            return x + output, extra
        output, extra = sublayer(x)
        return _layer_norm(x + output, *norm), extra

    def step(self, token_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.length >= self.max_len:
            raise ValueError(f"sequence of {self.length + 1} pieces exceeds max_len {self.max_len}")
        t = self.length
        x = self.embedding[token_id] * self.embedding_scale + self.positions[t]  # [d_model]
        self_rows: list[np.ndarray] = []
        cross_rows: list[np.ndarray] = []
        for layer in self.layers:

            def self_attention(h, layer=layer):
                q, k, v = (layer.qkv @ h).reshape(3, self.n_heads, self.d_k)  # 3 x [H, d_k]
                layer.keys[:, t], layer.values[:, t] = k, v
                weights = _softmax(np.einsum("hd,htd->ht", q, layer.keys[:, : t + 1]) * self.scale)  # [H, t+1]
                context = np.einsum("ht,htd->hd", weights, layer.values[:, : t + 1]).reshape(-1)  # [d_model]
                return layer.self_out @ context, weights

            def cross_attention(h, layer=layer):
                q = (layer.q @ h).reshape(self.n_heads, self.d_k)  # [H, d_k]
                scores = np.einsum("hd,hsd->hs", q, layer.memory_keys) * self.scale  # [H, S]
                if self.memory_blocked is not None:
                    scores[:, self.memory_blocked] = -np.inf
                weights = _softmax(scores)
                context = np.einsum("hs,hsd->hd", weights, layer.memory_values).reshape(-1)
                return layer.cross_out @ context, weights

            def feed_forward(h, layer=layer):
                (w1, b1), (w2, b2) = layer.expand, layer.contract
                return w2 @ np.maximum(w1 @ h + b1, 0.0) + b2, None

            x, self_weights = self._residual(x, layer.norms[0], self_attention)
            x, cross_weights = self._residual(x, layer.norms[1], cross_attention)
            x, _ = self._residual(x, layer.norms[2], feed_forward)
            self_rows.append(self_weights)
            cross_rows.append(cross_weights)
        if self.final_norm is not None:
            x = _layer_norm(x, *self.final_norm)
        logits = self.output_weight @ x
        if self.output_bias is not None:
            logits = logits + self.output_bias
        self.length += 1
        return logits, np.stack(self_rows), np.stack(cross_rows)

    def truncate(self, length: int) -> None:
        self.length = min(self.length, max(length, 0))
