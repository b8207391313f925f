"""A model family that exists only in the tests: an encoder-decoder with one kind of attention (cross-attention,
one layer, two heads), no positional information, a bag-of-embeddings encoder and a decoder that sums its inputs.

It is defined and registered here, outside the project, to show that a new family needs one registry entry and
its network: the stepper, traces, checkpoints, exports, the command line and the window must work with it without
any project file naming it (tests/model/test_toy_family.py, tests/explorer/test_toy_family_window.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn

from model.data.tokenizer import Tokenizer
from model.family import Architecture, Capabilities, Family, ModelOption, Positions, register, unregister
from model.io.bundle import ModelBundle
from model.kinds import AttentionKind
from model.network import AttentionWeights
from model.nn.packing import PackedRows

TOY_NAME = "toy-cross"


@dataclass
class ToyConfig:
    source_vocab_size: int = 60
    target_vocab_size: int = 60
    joint_vocab: bool = True
    d_model: int = 16  # width of the embeddings and of the decoder's state
    n_heads: int = 2  # cross-attention heads of its one layer
    max_len: int = 32
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3

    # The names every family's config answers to.
    @property
    def n_encoder_layers(self) -> int:
        return 0

    @property
    def n_decoder_layers(self) -> int:
        return 1

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ToyConfig:
        return cls(**data)

    def layer_summary(self) -> str:
        return "bag-of-embeddings encoder, one cross-attention layer"

    def describe(self) -> str:
        return f"toy cross-attention model, d_model {self.d_model}, {self.n_heads} heads"


class ToyCache:
    """The decoder's state: the running sum of its inputs, one row per position fed."""

    def __init__(self, memory: torch.Tensor, memory_mask: torch.Tensor | None):
        self.memory = memory  # [B, S, d_model]
        self.memory_mask = memory_mask  # [B, S] True for real pieces, or None
        self.sums: list[torch.Tensor] = []  # [B, d_model] after each position

    def truncate(self, n_positions: int) -> None:
        del self.sums[n_positions:]

    def select(self, rows: torch.Tensor) -> ToyCache:
        self.memory = self.memory.index_select(0, rows)
        self.memory_mask = None if self.memory_mask is None else self.memory_mask.index_select(0, rows)
        self.sums = [total.index_select(0, rows) for total in self.sums]
        return self


class ToyNetwork(nn.Module):
    def __init__(self, config: ToyConfig):
        super().__init__()
        self.config = config
        self.source_embedding = nn.Embedding(config.source_vocab_size, config.d_model)
        self.target_embedding = nn.Embedding(config.target_vocab_size, config.d_model)
        self.query = nn.Linear(config.d_model, config.d_model, bias=False)
        self.key = nn.Linear(config.d_model, config.d_model, bias=False)
        self.output = nn.Linear(config.d_model, config.target_vocab_size)

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def module_tree(self) -> nn.Module:
        return self

    def encode(self, source_ids: torch.Tensor, need_weights: bool = False):
        mask = source_ids != self.config.pad_id  # [B, S]
        return self.source_embedding(source_ids), mask, []  # no self-attention: no weights

    def start_cache(self, memory: torch.Tensor, memory_mask: torch.Tensor | None) -> ToyCache:
        return ToyCache(memory, memory_mask)

    def _attend(self, state: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """state [B, Q, d_model], memory [B, S, d_model] -> (context [B, Q, d_model], weights [B, H, Q, S])."""
        batch, n_queries, width = state.shape
        heads, d_head = self.config.n_heads, width // self.config.n_heads
        q = self.query(state).view(batch, n_queries, heads, d_head).transpose(1, 2)  # [B, H, Q, d_head]
        k = self.key(memory).view(batch, -1, heads, d_head).transpose(1, 2)  # [B, H, S, d_head]
        v = memory.view(batch, -1, heads, d_head).transpose(1, 2)  # [B, H, S, d_head]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)  # [B, H, Q, S]
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # [B, H, Q, S]
        context = (weights @ v).transpose(1, 2).reshape(batch, n_queries, width)  # [B, Q, d_model]
        return context, weights

    def decode_step(self, token_ids: torch.Tensor, cache: ToyCache):
        embedded = self.target_embedding(token_ids)  # [B, d_model]
        total = embedded if not cache.sums else cache.sums[-1] + embedded
        cache.sums.append(total)
        context, weights = self._attend(total[:, None], cache.memory, cache.memory_mask)  # [B, 1, d_model]
        return total + context[:, 0], None, [weights[:, :, 0]]  # hidden [B, d_model]; one layer of [B, H, S]

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.output(hidden)

    def _teacher_forced(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[B, S], [B, T] -> (hidden [B, T, d_model], cross-attention [B, H, T, S]): every position at once."""
        memory, mask, _ = self.encode(source_ids)
        totals = self.target_embedding(target_input_ids).cumsum(1)  # [B, T, d_model]
        context, weights = self._attend(totals, memory, mask)  # [B, T, d_model], [B, H, T, S]
        return totals + context, weights

    def forward(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, rows: PackedRows | None = None) -> torch.Tensor:
        """What the trainer calls: hidden states [B, T, d_model], or [N, d_model] for only the positions in ``rows``."""
        hidden, _ = self._teacher_forced(source_ids, target_input_ids)  # [B, T, d_model]
        return hidden if rows is None else rows.pack(hidden)

    def inspect(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor):
        hidden, weights = self._teacher_forced(source_ids, target_input_ids)
        return self.logits(hidden), AttentionWeights(cross=[weights])


TOY_FAMILY = Family(
    name=TOY_NAME,
    title="toy cross-attention model",
    config_class=ToyConfig,
    network=ToyNetwork,
    capabilities=Capabilities(Architecture.ENCODER_DECODER, (AttentionKind.CROSS,), Positions.NONE, trainable=True),
    options=(ModelOption("d_model", ("d_model",), "d_model", int, "width", (), 4, 64, 4),),
    summary=lambda options: f"toy, d_model {options.get('d_model')}",
)


@contextmanager
def toy_family_registered() -> Iterator[Family]:
    """The toy family, registered for the duration of the block."""
    register(TOY_FAMILY)
    try:
        yield TOY_FAMILY
    finally:
        unregister(TOY_NAME)


def toy_bundle(seed: int = 0) -> ModelBundle:
    """An untrained toy model with a SentencePiece tokenizer of the words it is shown."""
    words = "the cat dog sees sleeps a small big house red green blue runs walks".split()
    texts = [" ".join(words[(i * 7 + j) % len(words)] for j in range(5)) for i in range(200)]
    tokenizer = Tokenizer.train(texts, vocab_size=40, model_type="word")
    config = ToyConfig(source_vocab_size=tokenizer.vocab_size, target_vocab_size=tokenizer.vocab_size)
    torch.manual_seed(seed)
    network = ToyNetwork(config).eval()
    return ModelBundle(network, tokenizer, tokenizer)
