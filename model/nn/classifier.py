"""The encoder-only Transformer classifier of seed 004: our Transformer's encoder with a linear head.

Seed 004's ``TransformerClassifier`` puts ``nn.Linear(d_model, num_classes)`` on every position of the
encoder's output, so it answers ``[batch, seq_len, classes]``: a tagger (``task="tagging"``, a class for
each piece; a word's class is read at its first piece). A sentence classifier (``task="sentence"``) pools
the encoder's output first: the mean over the real pieces, then the same linear head, ``[batch, classes]``.

The encoder is the encoder-decoder Transformer's own (``EncoderLayer``: multi-head self-attention and a
feed-forward network, residuals, LayerNorm after or before), so its self-attention is computed and
returned exactly as there: softmax(QK^T / sqrt(d_k) + mask) for every layer and head.

As a model family (model/family.py) it has one kind of attention, the encoder's, and no decoder: ``encode``
returns the encoder's output, and ``read`` the head's class probabilities for the trace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
import torch.nn as nn

from model.kinds import AttentionKind, KindError
from model.network import AttentionWeights
from model.nn.classifier_config import ClassifierConfig
from model.nn.config import TransformerConfig
from model.nn.hooks import HookPoint
from model.nn.positions import PositionScheme, build_scheme
from model.nn.transformer import EncoderLayer, MultiHeadAttention, Transformer, init_linear, run_encoder_layers, sinusoidal_table


@dataclass
class Predictions:
    """What an encoder-only model's head says about the typed text (shared with the pretrained encoders)."""

    mask_positions: np.ndarray  # [M] source positions of the mask token
    mask_candidate_ids: np.ndarray  # [M, k]
    mask_candidate_probabilities: np.ndarray  # [M, k]
    class_names: list[str]  # [C] of a classification head
    class_probabilities: np.ndarray  # [C] (a sentence class) or [S, C] (a class per piece)

    @classmethod
    def of_classes(cls, names: list[str], probabilities: np.ndarray, k: int) -> Predictions:
        """Class probabilities only (no mask candidates)."""
        empty = np.zeros((0, k), np.int64)
        return cls(np.zeros(0, np.int64), empty, empty.astype(np.float32), list(names), probabilities.astype(np.float32))


class EncoderClassifier(nn.Module):
    """Embeddings + positions, the Transformer's encoder layers, and a linear head (per position or pooled)."""

    positional_table: torch.Tensor  # [max_len, d_model]

    def __init__(self, config: ClassifierConfig):
        super().__init__()
        self.config = config
        layer_config = cast(TransformerConfig, config)  # EncoderLayer reads d_model, n_heads, d_k, d_ff, dropout, norm
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        if config.positional_encoding == "sinusoidal":
            self.register_buffer("positional_table", sinusoidal_table(config.max_len, config.d_model), persistent=False)
        else:
            self.positional_table = nn.Parameter(torch.empty(config.max_len, config.d_model))
        # its scheme, as the Transformer names its own (a table: nothing inside attention; model/nn/positions.py)
        self.positions: PositionScheme = build_scheme(config.positional_encoding, config.max_len, config.d_model, config.n_heads)
        self.embedding_dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(EncoderLayer(layer_config) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(config.d_model) if config.norm_placement == "pre" else nn.Identity()
        self.head = nn.Linear(config.d_model, config.n_classes)
        # Hook points of the text's embeddings [B, S, d_model] (scaled) and positions [S, d_model], as the Transformer's
        self.hook_source_embed, self.hook_source_pos = HookPoint(), HookPoint()
        for module in self.modules():
            init_linear(module)
        nn.init.normal_(self.embedding.weight, std=config.d_model**-0.5)
        if isinstance(self.positional_table, nn.Parameter):
            nn.init.normal_(self.positional_table, std=0.02)

    # The encoder's parts under the encoder-decoder's names: its hooked pass (model/interventions/hooked.py) reads them.
    @property
    def source_embedding(self) -> nn.Embedding:
        return self.embedding

    @property
    def encoder_layers(self) -> nn.ModuleList:
        return self.layers

    @property
    def encoder_norm(self) -> nn.Module:
        return self.final_norm

    def hook_points(self) -> dict[str, HookPoint]:
        """Its hook points by the encoder-decoder's names (``encoder.embed``, ``encoder.pos``, then each encoder layer's
        ``encoder.{l}.resid_pre``, …), in order."""
        return {"encoder.embed": self.hook_source_embed, "encoder.pos": self.hook_source_pos} | {
            f"encoder.{index}.{name}": point
            for index, layer in enumerate(self.layers)
            for name, point in cast(EncoderLayer, layer).hook_points().items()
        }

    def attention_module(self, kind: AttentionKind, layer: int) -> MultiHeadAttention:
        """The self-attention of encoder ``layer`` (0-based): what knocking a head out zeroes a slice of."""
        if kind is not AttentionKind.ENCODER:
            raise KindError(f"an encoder-only model has no {kind.label}")
        return cast(EncoderLayer, self.layers[layer]).self_attention

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

    def padding_mask(self, ids: torch.Tensor) -> torch.Tensor | None:
        """[B, 1, 1, L] True where a key is a real piece; None when nothing is padded."""
        real = ids != self.config.pad_id  # [B, L]
        return None if bool(real.all()) else real[:, None, None, :]

    def hidden_states(self, source_ids: torch.Tensor, need_weights: bool = False):
        """source_ids [B, S] -> (encoder output [B, S, d_model], padding mask, per-layer weights [B, H, S, S] or [])."""
        length = source_ids.shape[1]
        if length > self.config.max_len:
            raise ValueError(f"sequence of {length} pieces exceeds max_len {self.config.max_len}")
        mask = self.padding_mask(source_ids)
        x = self.hook_source_embed(self.embedding(source_ids) * math.sqrt(self.config.d_model))  # [B, S, d_model]
        x = x + self.hook_source_pos(self.positional_table[:length])  # [B, S, d_model]
        x = self.embedding_dropout(x)
        x, weights = run_encoder_layers(self.layers, x, mask, need_weights)
        return self.final_norm(x), mask, weights

    def classify(self, hidden: torch.Tensor, source_ids: torch.Tensor) -> torch.Tensor:
        """Head scores: [B, S, C] for a tagger, [B, C] for a sentence classifier (mean over real pieces)."""
        if self.config.task == "tagging":
            return self.head(hidden)  # [B, S, C]
        real = (source_ids != self.config.pad_id).unsqueeze(-1).to(hidden.dtype)  # [B, S, 1]
        pooled = (hidden * real).sum(1) / real.sum(1).clamp_min(1.0)  # [B, d_model]
        return self.head(pooled)  # [B, C]

    def forward(self, source_ids: torch.Tensor) -> torch.Tensor:
        """Training's fast path: [B, S] -> class scores [B, S, C] or [B, C]."""
        hidden, _, _ = self.hidden_states(source_ids)
        return self.classify(hidden, source_ids)

    def encode(self, source_ids: torch.Tensor, need_weights: bool = False):
        """(the encoder's output [B, S, d_model], the padding mask, per-layer weights [B, H, S, S] when asked)."""
        return self.hidden_states(source_ids, need_weights)

    def inspect(self, source_ids: torch.Tensor, target_input_ids: Any = None):
        """(class scores, AttentionWeights with the encoder's self-attention of every layer)."""
        hidden, _, weights = self.hidden_states(source_ids, need_weights=True)
        return self.classify(hidden, source_ids), AttentionWeights(weights, [], [])

    def read(self, source_ids: torch.Tensor, k: int) -> tuple[Predictions, list[torch.Tensor]]:
        """The head's reading of one text [1, S] (class probabilities: [C] for a sentence class, [S, C] for a tag per
        piece) and the encoder's self-attention of every layer [1, H, S, S]."""
        hidden, _, weights = self.hidden_states(source_ids, need_weights=True)
        scores = self.classify(hidden, source_ids)  # [1, S, C] or [1, C]
        probabilities = torch.softmax(scores[0].float(), dim=-1).cpu().numpy()  # [C] or [S, C]
        return Predictions.of_classes(self.config.class_names, probabilities, k), weights

    def sentence_rows(self, length: int) -> list[int]:
        """The positions of a ``length``-piece text a sentence classifier reads: every one (``classify``'s mean)."""
        return list(range(length))

    def masked_logits(self, source_ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """Text [B, S] read with the pieces where ``keep`` [B, S] is False hidden in place (their ids the pad id's,
        masked as padding; the others keep their positions) -> class scores [B, S, C] or [B, C] (the report card's
        removal, model/grading/scoring.py)."""
        return self(source_ids.masked_fill(~keep.bool(), self.config.pad_id))

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The head on hidden states [..., d_model] -> [..., C] (the family interface's output layer)."""
        return self.head(hidden)


OwnNetwork = Transformer | EncoderClassifier  # the app's Transformers: the encoder-decoder and the encoder-only
