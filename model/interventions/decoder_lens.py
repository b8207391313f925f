"""DecoderLens (Langedijk et al., "DecoderLens: Layerwise Interpretation of Encoder-Decoder Transformers", 2023): the
decoder reads the output of encoder layer l instead of the last, and translates greedily from it.

Each layer's output goes through the encoder's final norm first, as the last layer's does: a pre-norm model's is a
LayerNorm (T5's an RMS norm; its residual stream is not normalised otherwise); a post-norm model has none, each layer's
output being normalised already by the layer's own last norm. The last layer's reading is the model's
own greedy translation. All layers decode together, one batch row each, through the model's own cached decoding
steps (``start_cache`` and ``decode_step``), as the Stepper decodes: up to the same number of steps, EOS included, a
forced first token (a language code) forced and suppressed tokens never chosen (model/decoding/greedy.py). Each layer's
output comes from the model's hooked pass (its adapter's ``layer_memories``): the app's Transformer's, or a Hugging Face
model's read by hooks on the library's modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

from model.decoding.greedy import default_max_target, greedy_rows
from model.family import Bundle, InterventionTool
from model.interventions.hooked import check_tool, ids_as_text
from model.network import Network, TextTokenizer

if TYPE_CHECKING:
    from model.network import DecodingNetwork


@dataclass
class DecoderLensResult:
    """One greedy translation per encoder layer read."""

    layers: list[str]  # [L] "L1", …: the encoder layer the decoder read
    token_ids: list[list[int]]  # [L][steps] each translation's tokens, EOS last when reached
    tokens: list[list[str]]  # [L][steps] their pieces
    translations: list[str]  # [L] their text (the ids, with no tokenizer)
    log_probabilities: list[np.ndarray]  # [L][steps] each token's log probability
    total_log_probabilities: np.ndarray  # [L] the sum of each translation's
    final_norm: bool  # the layers' outputs went through the encoder's final LayerNorm (a pre-norm model)


def _text(ids: list[int], tokenizer: TextTokenizer | None) -> str:
    """A translation's text: its tokenizer's, else its ids."""
    return " ".join(ids_as_text(ids)) if tokenizer is None else tokenizer.decode(ids)


@torch.inference_mode()
def decoder_lens(model: Network, source_ids: list[int], target_tokenizer: TextTokenizer | None = None) -> DecoderLensResult:
    """The greedy translation of ``source_ids`` (EOS last) from every encoder layer's output; ``target_tokenizer``
    names the pieces and writes the text (without one, the ids stand for both)."""
    adapter = check_tool(model, InterventionTool.DECODER_LENS)
    network = cast("DecodingNetwork", model)  # served: an encoder-decoder
    config = network.config
    source = torch.tensor([source_ids], device=next(network.parameters()).device)  # [1, S]
    memory, memory_mask = adapter.layer_memories(source)  # [L, S, d_model]
    n_layers = memory.shape[0]
    limit = min(default_max_target(len(source_ids), config.max_len), config.max_len)  # the Stepper's
    ids, scores = greedy_rows(network, memory, memory_mask, [limit] * n_layers)  # [L, steps]
    token_ids = [[token for token in row if token >= 0] for row in ids.tolist()]
    per_token = [scores[layer, : len(row)].cpu().numpy() for layer, row in enumerate(token_ids)]
    return DecoderLensResult(
        layers=[f"L{layer + 1}" for layer in range(n_layers)],
        token_ids=token_ids,
        tokens=[ids_as_text(row) if target_tokenizer is None else target_tokenizer.pieces(row) for row in token_ids],
        translations=[_text(row, target_tokenizer) for row in token_ids],
        log_probabilities=per_token,
        total_log_probabilities=np.array([float(row.sum()) for row in per_token], dtype=np.float32),
        final_norm=adapter.has_encoder_final_norm(),
    )


def bundle_decoder_lens(bundle: Bundle, text: str) -> DecoderLensResult:
    """``decoder_lens`` of the sentence ``bundle`` reads from ``text``, labelled with its pieces."""
    return decoder_lens(bundle.model, bundle.source_ids(text)[0], bundle.target_tokenizer)
