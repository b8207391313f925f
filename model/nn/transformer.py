"""The encoder-decoder Transformer of "Attention Is All You Need", written for inspection.

Its attention (``MultiHeadAttention``, model/nn/attention.py) has a fast path (PyTorch's fused kernel, what training
uses) and an inspection path (``need_weights=True``) that returns the probabilities of every head, exactly as they
weighted the values. Decoding one token at a time (``decode_step``) reuses cached keys and values (``DecoderCache``), so
a step costs attention over the prefix only. Masks are boolean with True meaning "may attend".

The teacher-forced pass (``forward``, ``encode``/``decode``, ``inspect``) carries named hook points (model/nn/hooks.py)
at every activation a tool reads or patches; ``hook_points`` names them as model/interventions/hooked.py documents
(``encoder.0.resid_pre``, ``decoder.1.cross.head_out``, …). With no hook registered they return what they are given,
so the plain pass is unchanged; the one-token steps carry none.
"""

from __future__ import annotations

import math
from typing import cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from model.kinds import AttentionKind
from model.network import AttentionWeights
from model.nn.attention import FeedForward, MultiHeadAttention, attention_scores, attention_weights, head_outputs
from model.nn.caches import DecoderCache, LayerCache
from model.nn.config import TransformerConfig
from model.nn.dropout import Dropout
from model.nn.hooks import HookPoint
from model.nn.packing import PackedRows
from model.nn.positions import PositionScheme, StackPositions, build_scheme, sinusoidal_table
from model.nn.sublayers import Sublayers, layer_norm

__all__ = [  # the attention's names stay importable from here, where the model's users find them
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "MultiHeadAttention",
    "Transformer",
    "attention_scores",
    "attention_weights",
    "head_outputs",
    "init_linear",
    "layer_norm",
    "run_encoder_layers",
    "side_embedding",
    "sinusoidal_table",
]


class EncoderLayer(Sublayers):
    def __init__(self, config: TransformerConfig, positions: StackPositions | None = None):
        super().__init__(config, 2)
        self.self_attention = MultiHeadAttention(config, self_attention=True, positions=positions)
        self.feed_forward = FeedForward(config)
        self.hook_self_in, self.hook_self_out, self.hook_self_resid = HookPoint(), HookPoint(), HookPoint()
        self.hook_mlp_in, self.hook_mlp_out = HookPoint(), HookPoint()
        self.hook_self_scale, self.hook_mlp_scale = HookPoint(), HookPoint()

    def forward(self, x, padding_mask, need_weights=False):
        x = self.hook_resid_pre(x)  # [B, S, d_model]
        points = (self.hook_self_in, self.hook_self_out, self.hook_self_scale)
        x, weights = self.residual(0, x, lambda h: self.self_attention(h, mask=padding_mask, need_weights=need_weights), points)
        x = self.hook_self_resid(x)
        x, _ = self.residual(1, x, lambda h: (self.feed_forward(h), None), self.mlp_points())
        return self.hook_resid_post(x), weights

    def hook_points(self) -> dict[str, HookPoint]:
        """Its hook points by their names within the layer, in the order the pass reaches them."""
        mlp = {"mlp_in": self.hook_mlp_in, "mlp_out": self.hook_mlp_out, "mlp_scale": self.hook_mlp_scale}
        mlp["resid_post"] = self.hook_resid_post
        return {"resid_pre": self.hook_resid_pre, **self._attention_points("self", self.self_attention), **mlp}


class DecoderLayer(Sublayers):
    def __init__(self, config: TransformerConfig, positions: StackPositions | None = None):
        super().__init__(config, 3)
        self.self_attention = MultiHeadAttention(config, self_attention=True, positions=positions)
        self.cross_attention = MultiHeadAttention(config, self_attention=False)
        self.feed_forward = FeedForward(config)
        self.hook_self_in, self.hook_self_out, self.hook_self_resid = HookPoint(), HookPoint(), HookPoint()
        self.hook_cross_in, self.hook_cross_out, self.hook_cross_resid = HookPoint(), HookPoint(), HookPoint()
        self.hook_mlp_in, self.hook_mlp_out = HookPoint(), HookPoint()
        self.hook_self_scale, self.hook_cross_scale, self.hook_mlp_scale = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x, memory_keys_values, memory_mask, self_mask=None, need_weights=False, rows=None):
        """x [B, T, d_model], or [N, d_model] holding only ``rows`` (PackedRows) of the positions."""
        # Causal masking: with no explicit mask, is_causal lets position p see keys 0..p.
        is_causal = self_mask is None and (rows.length if rows is not None else x.shape[1]) > 1
        x = self.hook_resid_pre(x)
        x, self_weights = self.residual(
            0,
            x,
            lambda h: self.self_attention(h, mask=self_mask, is_causal=is_causal, need_weights=need_weights, rows=rows),
            (self.hook_self_in, self.hook_self_out, self.hook_self_scale),
        )
        x = self.hook_self_resid(x)
        x, cross_weights = self.residual(
            1,
            x,
            lambda h: self.cross_attention(
                h, mask=memory_mask, keys_values=memory_keys_values, need_weights=need_weights, rows=rows
            ),
            (self.hook_cross_in, self.hook_cross_out, self.hook_cross_scale),
        )
        x = self.hook_cross_resid(x)
        x, _ = self.residual(2, x, lambda h: (self.feed_forward(h), None), self.mlp_points())
        return self.hook_resid_post(x), self_weights, cross_weights

    def hook_points(self) -> dict[str, HookPoint]:
        """Its hook points by their names within the layer, in the order the pass reaches them."""
        mlp = {"mlp_in": self.hook_mlp_in, "mlp_out": self.hook_mlp_out, "mlp_scale": self.hook_mlp_scale}
        mlp["resid_post"] = self.hook_resid_post
        attentions = self._attention_points("self", self.self_attention) | self._attention_points("cross", self.cross_attention)
        return {"resid_pre": self.hook_resid_pre, **attentions, **mlp}

    def step(self, x, cache: LayerCache, memory_keys_values, memory_mask):
        """One new position per row: x [B, d_model] -> (x, self weights [B, H, t], cross [B, H, S])."""
        x, self_weights = self.residual(0, x, lambda h: self.self_attention.step(h, cache=cache))
        x, cross_weights = self.residual(
            1, x, lambda h: self.cross_attention.step(h, keys_values=memory_keys_values, mask=memory_mask)
        )
        x, _ = self.residual(2, x, lambda h: (self.feed_forward.step(h), None))
        return x, self_weights, cross_weights


def side_embedding(embeddings: nn.ModuleDict, side: str) -> nn.Embedding:
    """The ``side`` ("source" or "target") embedding of a family's ModuleDict: the shared one when there is one."""
    return cast(nn.Embedding, embeddings["shared" if "shared" in embeddings else side])


def init_linear(module: nn.Module) -> None:
    """Glorot-uniform weights and zero biases for a Linear layer (every family's projections start so)."""
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def run_encoder_layers(layers, x: torch.Tensor, mask, need_weights: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """x [B, S, d_model] through encoder layers -> (output [B, S, d_model], per-layer weights [B, H, S, S] when asked)."""
    weights = []
    for layer in layers:
        x, layer_weights = layer(x, mask, need_weights=need_weights)
        if need_weights:
            weights.append(layer_weights)
    return x, weights


class Transformer(nn.Module):
    """Encoder-decoder Transformer; see TransformerConfig for every choice it makes. The first model family
    (model/family.py): it has all three kinds of attention."""

    positional_table: torch.Tensor  # [max_len, d_model]: a buffer (sinusoidal; zeros for a scheme with no table) or a
    # parameter (learned)

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        d_model = config.d_model
        share_all = config.tie_embeddings and config.joint_vocab
        if share_all:
            self.embeddings = nn.ModuleDict({"shared": nn.Embedding(config.source_vocab_size, d_model)})
        else:
            self.embeddings = nn.ModuleDict(
                {
                    "source": nn.Embedding(config.source_vocab_size, d_model),
                    "target": nn.Embedding(config.target_vocab_size, d_model),
                }
            )
        self.output_projection = None if config.tie_embeddings else nn.Linear(d_model, config.target_vocab_size)
        self.positions: PositionScheme = build_scheme(config.positional_encoding, config.max_len, d_model, config.n_heads)
        if config.positional_encoding == "learned":
            self.positional_table = nn.Parameter(torch.empty(config.max_len, d_model))
        else:  # the paper's table, or zeros: a scheme that works inside self-attention adds nothing to the embeddings
            table = sinusoidal_table(config.max_len, d_model) if self.positions.table else torch.zeros(config.max_len, d_model)
            self.register_buffer("positional_table", table, persistent=False)
        self.embedding_dropout = Dropout(config.dropout)
        inside = self.positions.in_attention  # rope, ALiBi, a relative bias: each stack's self-attention asks the scheme
        encoder_positions = StackPositions(self.positions, "encoder") if inside else None
        decoder_positions = StackPositions(self.positions, "decoder") if inside else None
        self.encoder_layers = nn.ModuleList(EncoderLayer(config, encoder_positions) for _ in range(config.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config, decoder_positions) for _ in range(config.n_decoder_layers))
        pre_norm = config.norm_placement == "pre"
        self.encoder_norm = nn.LayerNorm(d_model) if pre_norm else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if pre_norm else nn.Identity()
        # Hook points of each side's embeddings [B, L, d_model] (scaled) and positions [L, d_model], of the memory
        # [B, S, d_model] (after the encoder's final norm) and of the decoder's output [B, T, d_model] (after its own).
        self.hook_source_embed, self.hook_source_pos, self.hook_memory = HookPoint(), HookPoint(), HookPoint()
        self.hook_target_embed, self.hook_target_pos, self.hook_final = HookPoint(), HookPoint(), HookPoint()
        self._init_weights()
        for name, point in self.hook_points().items():
            point.name = name

    def _init_weights(self) -> None:
        for module in self.modules():
            init_linear(module)
            if isinstance(module, nn.Embedding):
                # Scaled by sqrt(d_model) on lookup, the embeddings start with unit variance.
                nn.init.normal_(module.weight, std=self.config.d_model**-0.5)
        if isinstance(self.positional_table, nn.Parameter):
            nn.init.normal_(self.positional_table, std=0.02)

    @property
    def source_embedding(self) -> nn.Embedding:
        return side_embedding(self.embeddings, "source")

    @property
    def target_embedding(self) -> nn.Embedding:
        return side_embedding(self.embeddings, "target")

    @property
    def decoder_stack(self) -> list[DecoderLayer]:
        """The decoder layers, typed (an nn.ModuleList yields plain Modules to a type checker)."""
        return cast("list[DecoderLayer]", list(self.decoder_layers))

    def attention_module(self, kind: AttentionKind, layer: int) -> MultiHeadAttention:
        """The attention of ``kind`` in ``layer`` (0-based): what knocking a head out zeroes a slice of."""
        if kind is AttentionKind.ENCODER:
            return cast(EncoderLayer, self.encoder_layers[layer]).self_attention
        decoder_layer = self.decoder_stack[layer]
        return decoder_layer.self_attention if kind is AttentionKind.DECODER else decoder_layer.cross_attention

    def head_projection(self, kind: AttentionKind, layer: int) -> nn.Linear:
        """The output projection W^O of the attention of ``kind`` in ``layer``: what knocking a head out zeroes columns of."""
        return self.attention_module(kind, layer).out_projection

    def head_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O [d_model, H * d_k] of the attention of ``kind`` in ``layer`` (its projection's weight)."""
        return self.head_projection(kind, layer).weight

    def head_count(self, kind: AttentionKind) -> int:
        return self.config.n_heads

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def module_tree(self) -> nn.Module:
        """The module whose parts are its layers, embeddings and head (the report card's cascade): itself."""
        return self

    def hook_points(self) -> dict[str, HookPoint]:
        """Every hook point of the teacher-forced pass by its name (model/interventions/hooked.py), in the order the
        pass reaches them: ``encoder.embed``, ``encoder.pos``, each encoder layer's (``encoder.{l}.resid_pre``, …),
        ``encoder.memory``, the decoder's alike, and ``decoder.final``."""
        points = {"encoder.embed": self.hook_source_embed, "encoder.pos": self.hook_source_pos}
        for index, layer in enumerate(self.encoder_layers):
            points |= {f"encoder.{index}.{name}": point for name, point in cast(EncoderLayer, layer).hook_points().items()}
        points |= {"encoder.memory": self.hook_memory, "decoder.embed": self.hook_target_embed, "decoder.pos": self.hook_target_pos}
        for index, decoder_layer in enumerate(self.decoder_stack):
            points |= {f"decoder.{index}.{name}": point for name, point in decoder_layer.hook_points().items()}
        points["decoder.final"] = self.hook_final
        return points

    def _embed(self, ids: torch.Tensor, embedding: nn.Embedding, points: tuple[HookPoint, HookPoint]) -> torch.Tensor:
        length = ids.shape[1]
        if length > self.config.max_len:
            raise ValueError(f"sequence of {length} pieces exceeds max_len {self.config.max_len}")
        x = points[0](embedding(ids) * math.sqrt(self.config.d_model))  # [B, L, d_model]
        x = x + points[1](self.positional_table[self._positions(length, ids.device)])  # [B, L, d_model]
        return self.embedding_dropout(x)

    def _positions(self, length: int, device: torch.device) -> torch.Tensor | slice:
        """The table rows a sequence of ``length`` reads: 0..length − 1, or in training with randomised positions a
        sorted random draw from the whole table (Ruoss et al. 2023; the config says)."""
        if not (self.training and self.config.randomised_positions):
            return slice(0, length)
        return torch.randperm(self.config.max_len, device=device)[:length].sort().values  # [L]

    def padding_mask(self, ids: torch.Tensor) -> torch.Tensor | None:
        """[B, 1, 1, L] True where a key is a real piece; None when nothing is padded."""
        real = ids != self.config.pad_id  # [B, L]
        if bool(real.all()):
            return None
        return real[:, None, None, :]

    def encode(self, source_ids: torch.Tensor, need_weights: bool = False):
        """source_ids [B, S] -> (memory [B, S, d_model], padding mask, per-layer weights or [])."""
        mask = self.padding_mask(source_ids)
        x = self._embed(source_ids, self.source_embedding, (self.hook_source_embed, self.hook_source_pos))  # [B, S, d_model]
        x, weights = run_encoder_layers(self.encoder_layers, x, mask, need_weights)
        return self.hook_memory(self.encoder_norm(x)), mask, weights

    def start_cache(self, memory: torch.Tensor, memory_mask: torch.Tensor | None) -> DecoderCache:
        """Project the memory [B, S, d_model] into keys and values once for every decoder layer."""
        # Every layer's key/value projection in one matmul: [B, S, layers * 2 * d_model].
        weights = torch.cat([layer.cross_attention.kv_projection.weight for layer in self.decoder_stack])
        projected = F.linear(memory, weights).chunk(len(self.decoder_layers), dim=-1)
        memory_keys_values = []
        for layer, layer_projection in zip(self.decoder_stack, projected):
            keys, values = layer.cross_attention._split_projection(layer_projection, 2)  # 2 x [B, H, S, d_k]
            memory_keys_values.append((keys, values))
        return DecoderCache(
            memory_keys_values=memory_keys_values,
            memory_mask=memory_mask,
            self_attention=[LayerCache() for _ in self.decoder_layers],
        )

    def decode(
        self,
        target_ids: torch.Tensor,
        cache: DecoderCache,
        target_mask: torch.Tensor | None = None,
        need_weights: bool = False,
        rows: PackedRows | None = None,
    ):
        """Teacher-forced decoder pass over target_ids [B, T] from position 0, against the memory held
        in ``cache`` (its past keys/values are neither read nor changed).

        Returns (hidden [B, T, d_model], self weights, cross weights) with per-layer weights when asked.
        With ``rows``, hidden is [N, d_model]: only those positions are computed past attention.
        """
        x = self._embed(target_ids, self.target_embedding, (self.hook_target_embed, self.hook_target_pos))  # [B, T, d_model]
        if rows is not None:
            x = rows.pack(x)  # [N, d_model]
        self_weights, cross_weights = [], []
        for index, layer in enumerate(self.decoder_layers):
            x, layer_self, layer_cross = layer(
                x, cache.memory_keys_values[index], cache.memory_mask, self_mask=target_mask, need_weights=need_weights, rows=rows
            )
            if need_weights:
                self_weights.append(layer_self)
                cross_weights.append(layer_cross)
        return self.hook_final(self.decoder_norm(x)), self_weights, cross_weights

    def decode_step(self, token_ids: torch.Tensor, cache: DecoderCache):
        """Incremental decoding: feed one token per row [B] at position ``cache.length``, through the
        cached keys/values (inference only). Returns (hidden [B, d_model], per-layer self-attention
        rows [B, H, length + 1], per-layer cross-attention rows [B, H, S])."""
        if cache.length >= self.config.max_len:
            raise ValueError(f"sequence of {cache.length + 1} pieces exceeds max_len {self.config.max_len}")
        x = self.target_embedding(token_ids) * math.sqrt(self.config.d_model)  # [B, d_model]
        x = x + self.positional_table[cache.length]
        self_weights, cross_weights = [], []
        for index, layer in enumerate(self.decoder_stack):
            x, layer_self, layer_cross = layer.step(
                x, cache.self_attention[index], cache.memory_keys_values[index], cache.memory_mask
            )
            self_weights.append(layer_self)
            cross_weights.append(layer_cross)
        cache.length += 1
        return self.decoder_norm(x), self_weights, cross_weights

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden [..., d_model] -> unnormalised scores over the target vocabulary [..., V]."""
        if self.output_projection is None:
            return F.linear(hidden, self.target_embedding.weight)
        return self.output_projection(hidden)

    def forward(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, rows: PackedRows | None = None) -> torch.Tensor:
        """Teacher-forced fast path: [B, S], [B, T] -> hidden states [B, T, d_model], or [N, d_model]
        for only the target positions in ``rows`` (training passes the real ones).

        Padded target keys only ever follow the real ones, so the causal mask alone hides them from
        every real query; padded query rows are ignored by the loss.
        """
        # Packing the source as well was measured slower: it has little padding.
        memory, memory_mask, _ = self.encode(source_ids)
        cache = self.start_cache(memory, memory_mask)
        hidden, _, _ = self.decode(target_input_ids, cache, rows=rows)
        return hidden

    def target_mask(self, target_input_ids: torch.Tensor, when_padded_only: bool = False) -> torch.Tensor | None:
        """The decoder's teacher-forced mask of target inputs [B, T]: causal, and padding hidden [B or 1, 1, T, T]; with
        ``when_padded_only``, None where nothing is padded (``decode`` is causal then, on its fast path)."""
        target_real = self.padding_mask(target_input_ids)
        if target_real is None and when_padded_only:
            return None
        length = target_input_ids.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=target_input_ids.device).tril()  # [T, T]
        return causal if target_real is None else target_real & causal  # [B or 1, 1, T, T]

    def inspect(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor):
        """Teacher-forced inspection path: (logits [B, T, V], AttentionWeights of every layer and head)."""
        memory, memory_mask, encoder_weights = self.encode(source_ids, need_weights=True)
        cache = self.start_cache(memory, memory_mask)
        target_mask = self.target_mask(target_input_ids)
        hidden, self_weights, cross_weights = self.decode(target_input_ids, cache, target_mask=target_mask, need_weights=True)
        return self.logits(hidden), AttentionWeights(encoder_weights, self_weights, cross_weights)
