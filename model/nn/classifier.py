"""The encoder-only Transformer classifier of seed 004: our Transformer's encoder with a linear head.

Seed 004's ``TransformerClassifier`` puts ``nn.Linear(d_model, num_classes)`` on every position of the
encoder's output, so it answers ``[batch, seq_len, classes]``: a tagger (``task="tagging"``, a class for
each piece; a word's class is read at its first piece). A sentence classifier (``task="sentence"``) pools
the encoder's output first: the mean over the real pieces, then the same linear head, ``[batch, classes]``.

The encoder is the encoder-decoder Transformer's own (``EncoderLayer``: multi-head self-attention and a
feed-forward network, residuals, LayerNorm after or before), so its self-attention is computed and
returned exactly as there: softmax(QK^T / sqrt(d_k) + mask) for every layer and head.

As a model family (model/family.py) it has one kind of attention, the encoder's, and no decoder:
``encode`` returns the head's output in place of a memory, and ``predictions`` turns it into class
probabilities for the trace.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, cast

import numpy as np
import torch
import torch.nn as nn

from model.kinds import AttentionKind
from model.nn.config import (
    NORM_PLACEMENTS,
    POSITIONAL_ENCODINGS,
    ConfigError,
    TransformerConfig,
    check_dropout,
    check_heads,
    check_special_ids,
    check_whole_numbers,
    config_fields,
)
from model.nn.transformer import AttentionWeights, EncoderLayer, init_linear, run_encoder_layers, sinusoidal_table

CLASSIFIER_TASKS = ("tagging", "sentence")


@dataclass
class ClassifierConfig:
    vocab_size: int = 1000  # pieces of the tokenizer (pad/unk/bos/eos included)
    class_names: list[str] = field(default_factory=lambda: ["no", "yes"])  # the labels, in the head's output order
    task: str = "tagging"  # "tagging": a class per position (seed 004's shape); "sentence": one class per text (pooled)
    n_layers: int = 2  # encoder layers; the seed's example has one
    d_model: int = 64  # width of the residual stream and embeddings
    n_heads: int = 4  # d_model must split evenly into heads of d_k = d_model / n_heads
    d_ff: int = 256  # inner width of the feed-forward network
    dropout: float = 0.1
    max_len: int = 128  # longest input in pieces (EOS included)
    norm_placement: str = "post"  # as the encoder-decoder's: "post" (the paper) or "pre"
    positional_encoding: str = "sinusoidal"  # "sinusoidal" (fixed) or "learned"
    pad_id: int = 0  # padding piece: never attended to
    bos_id: int = 2  # unused by the classifier; kept so every family's config names the same special ids
    eos_id: int = 3  # ends every input

    def __post_init__(self) -> None:
        self.validate()

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    # The names every family's config answers to (the stepper, checkpoints and views read them).
    @property
    def source_vocab_size(self) -> int:
        return self.vocab_size

    @property
    def target_vocab_size(self) -> int:
        return self.vocab_size

    @property
    def n_encoder_layers(self) -> int:
        return self.n_layers

    @property
    def n_decoder_layers(self) -> int:
        return 0

    def validate(self) -> None:
        check_whole_numbers(self, ("vocab_size", "n_layers", "d_model", "n_heads", "d_ff", "max_len"))
        if not isinstance(self.class_names, list) or not all(isinstance(n, str) and n for n in self.class_names):
            raise ConfigError("class_names must be a list of non-empty names")
        if len(self.class_names) < 2 or len(set(self.class_names)) != len(self.class_names):
            raise ConfigError(f"a classifier needs at least two distinct classes, got {self.class_names!r}")
        if self.task not in CLASSIFIER_TASKS:
            raise ConfigError(f"task must be one of {CLASSIFIER_TASKS}, got {self.task!r}")
        check_dropout(self.dropout)
        check_special_ids(self, self.vocab_size)
        check_heads(self.d_model, self.n_heads)
        if self.norm_placement not in NORM_PLACEMENTS:
            raise ConfigError(f"norm_placement must be one of {NORM_PLACEMENTS}, got {self.norm_placement!r}")
        if self.positional_encoding not in POSITIONAL_ENCODINGS:
            raise ConfigError(f"positional_encoding must be one of {POSITIONAL_ENCODINGS}, got {self.positional_encoding!r}")
        if self.positional_encoding == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"sinusoidal positions need an even d_model, got {self.d_model}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ClassifierConfig:
        return cls(**config_fields(cls, data))

    def describe(self) -> str:
        what = "tagger" if self.task == "tagging" else "sentence classifier"
        return (
            f"encoder-only {what}, {self.n_layers} layers x {self.n_heads} heads, d_model {self.d_model}, "
            f"d_ff {self.d_ff}, {self.n_classes} classes"
        )


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
    family: ClassVar[str] = "classifier"
    kinds: ClassVar[tuple[AttentionKind, ...]] = (AttentionKind.ENCODER,)
    architecture: ClassVar[str] = "encoder-only"

    def __init__(self, config: ClassifierConfig):
        super().__init__()
        self.config = config
        layer_config = cast(TransformerConfig, config)  # EncoderLayer reads d_model, n_heads, d_k, d_ff, dropout, norm
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        if config.positional_encoding == "sinusoidal":
            self.register_buffer("positional_table", sinusoidal_table(config.max_len, config.d_model), persistent=False)
        else:
            self.positional_table = nn.Parameter(torch.empty(config.max_len, config.d_model))
        self.embedding_dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(EncoderLayer(layer_config) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(config.d_model) if config.norm_placement == "pre" else nn.Identity()
        self.head = nn.Linear(config.d_model, config.n_classes)
        for module in self.modules():
            init_linear(module)
        nn.init.normal_(self.embedding.weight, std=config.d_model**-0.5)
        if isinstance(self.positional_table, nn.Parameter):
            nn.init.normal_(self.positional_table, std=0.02)

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())

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
        x = self.embedding(source_ids) * math.sqrt(self.config.d_model) + self.positional_table[:length]  # [B, S, d_model]
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
        """(the head's scores [B, S, C] or [B, C] in place of a memory, the padding mask, per-layer weights)."""
        hidden, mask, weights = self.hidden_states(source_ids, need_weights)
        return self.classify(hidden, source_ids), mask, weights

    def inspect(self, source_ids: torch.Tensor, target_input_ids: Any = None):
        """(class scores, AttentionWeights with the encoder's self-attention of every layer)."""
        scores, _, weights = self.encode(source_ids, need_weights=True)
        return scores, AttentionWeights(weights, [], [])

    def predictions(self, head_output: torch.Tensor, source_ids: list[int], k: int) -> Predictions:
        """Class probabilities of one text: [C] for a sentence class, [S, C] for a tag per piece."""
        probabilities = torch.softmax(head_output[0].float(), dim=-1).cpu().numpy()  # [C] or [S, C]
        return Predictions.of_classes(self.config.class_names, probabilities, k)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The head on hidden states [..., d_model] -> [..., C] (the family interface's output layer)."""
        return self.head(hidden)
