"""Tiny Transformers with every parameter random (the layer norms' scales and biases and every bias included, which
a fresh model sets to 1 and 0), so that a test of how the norms and biases are handled can fail; and a padded batch."""

from __future__ import annotations

import torch

from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer
from tests.conftest import TINY_MODEL

VOCAB = 24
SOURCES = ([5, 6, 7, 8, 9, 3], [10, 11, 12, 3])  # the second is padded to the first's length
TARGETS = ([2, 13, 14, 15, 16], [2, 17, 18])


def tiny(norm: str = "post", seed: int = 4, tied: bool = True) -> Transformer:
    """A random model of the suite's tiny size (tests/conftest.py: 2+2 layers, d_model 32, 4 heads); untied: separate
    embeddings and an output layer with a bias."""
    torch.manual_seed(seed)
    sizes = dict(source_vocab_size=VOCAB, target_vocab_size=VOCAB + (0 if tied else 4))
    config = TransformerConfig(**sizes, **TINY_MODEL, norm_placement=norm, tie_embeddings=tied, joint_vocab=tied)
    model = Transformer(config).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1.0 + 0.3 * torch.randn_like(module.weight))
                module.bias.copy_(0.2 * torch.randn_like(module.bias))
            elif isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.copy_(0.2 * torch.randn_like(module.bias))
    return model


def padded(rows: tuple[list[int], ...], pad_id: int = 0) -> torch.Tensor:
    """Rows of ids padded to the longest: [B, L]."""
    width = max(len(row) for row in rows)
    return torch.tensor([row + [pad_id] * (width - len(row)) for row in rows])
