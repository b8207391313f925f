"""A Transformer built by hand whose predictions depend on exactly one source piece (the known answer).

Every source embedding is zero but the chosen piece's, the positions are a learned table of zeros, and the encoder's
attention and feed-forward outputs are zero: every other piece (and </s>) encodes to the zero vector, the chosen one
to LayerNorm(its embedding). The decoder's inputs all embed to one vector c, so every step reads the same query; its
cross-attention gives the chosen piece a score of 40 and every other (key zero) 0, so the attention on the chosen piece
is 1 in float32 and the other pieces' values are zero: hiding or leaving out any other piece changes nothing (by
e^-40), hiding the chosen one changes the prediction. The reference token is the one whose probability falls most
without the chosen piece.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from model.data.corpora import Pair
from model.grading.cases import GradedPair
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer

D_MODEL, VOCAB = 8, 16
SOURCE = [5, 6, 7, 8, 9, 10, 11, 12]  # eight source pieces
CHOSEN = 2  # the position of the piece the prediction depends on
STEPS = 3  # graded predictions (the same one each step)


def one_piece_model(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    config = TransformerConfig(
        source_vocab_size=VOCAB,
        target_vocab_size=VOCAB,
        n_encoder_layers=1,
        n_decoder_layers=1,
        d_model=D_MODEL,
        n_heads=1,
        d_ff=16,
        dropout=0.0,
        positional_encoding="learned",
        tie_embeddings=False,
        joint_vocab=False,
    )
    model = Transformer(config).eval()
    with torch.no_grad():
        model.positional_table.zero_()
        source = model.source_embedding.weight
        piece = torch.randn(D_MODEL)
        source.zero_()
        source[SOURCE[CHOSEN]] = piece
        model.target_embedding.weight.copy_(torch.randn(D_MODEL).expand(VOCAB, -1))  # every input embeds to c
        for layer in [*model.encoder_layers, *model.decoder_layers]:
            layer.self_attention.out_projection.weight.zero_()
            for part in (layer.feed_forward.expand, layer.feed_forward.contract):
                part.weight.zero_()
                part.bias.zero_()
        cross = model.decoder_layers[0].cross_attention
        query = _normalised(model.target_embedding.weight[0] * math.sqrt(D_MODEL))  # ĉ: what every step's query reads
        key = _normalised(_normalised(piece * math.sqrt(D_MODEL)))  # the chosen piece's memory
        cross.q_projection.weight.copy_(torch.eye(D_MODEL))
        keys = 40 * math.sqrt(D_MODEL) * torch.outer(query, key) / (query.dot(query) * key.dot(key))
        cross.kv_projection.weight.copy_(torch.cat([keys, torch.eye(D_MODEL)]))  # K: score 40 on it; V: the memory
        cross.out_projection.weight.copy_(torch.eye(D_MODEL))
        model.output_projection.weight.mul_(8)  # a clear prediction with the piece, another without
    return model


def _normalised(vector: torch.Tensor) -> torch.Tensor:
    """LayerNorm with unit gain and zero bias (the model's fresh norms)."""
    return torch.nn.functional.layer_norm(vector, (D_MODEL,))


def reference_token(model: Transformer) -> int:
    """The token whose probability falls most when the chosen piece is hidden."""
    with torch.no_grad():
        source = torch.tensor([SOURCE + [3]])
        hidden = source.clone()
        hidden[0, CHOSEN] = model.config.pad_id
        inputs = torch.tensor([[2]])
        full = torch.softmax(model.logits(model(source, inputs))[0, 0], -1)
        without = torch.softmax(model.logits(model(hidden, inputs))[0, 0], -1)
    drop = (full - without).numpy()
    drop[[0, 2, 3]] = -np.inf  # pad, <s>, </s>
    return int(np.argmax(drop))


def one_piece_case(model: Transformer) -> GradedPair:
    token = reference_token(model)
    return GradedPair(Pair("s " * len(SOURCE), "t " * STEPS), SOURCE + [3], [2] + [token] * STEPS + [3])
