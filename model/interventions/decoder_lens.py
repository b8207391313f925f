"""DecoderLens (Langedijk et al., "DecoderLens: Layerwise Interpretation of Encoder-Decoder Transformers", 2023): the
decoder reads the output of encoder layer l instead of the last, and translates greedily from it.

Each layer's output goes through the encoder's final norm first, as the last layer's does: a pre-norm model's
``encoder_norm`` is a LayerNorm (its residual stream is not normalised otherwise); a post-norm model's is the identity,
each layer's output being normalised already by the layer's own last norm. The last layer's reading is the model's
own greedy translation. All layers decode together, one batch row each, through the model's own cached decoding
steps (``start_cache`` and ``decode_step``), as the Stepper decodes: up to the same number of steps, EOS included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.decoding.greedy import default_max_target
from model.family import Bundle, InterventionTool
from model.interventions.hooked import Hooks, check_supported, hooked_encode, ids_as_text
from model.interventions.served_pass import has_encoder_final_norm
from model.network import Network, TextTokenizer
from model.nn.transformer import Transformer


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


def layer_memories(model: Transformer, source: torch.Tensor) -> torch.Tensor:
    """source [1, S] -> every encoder layer's output through the encoder's final norm [L, S, d_model]."""
    hooks = Hooks([f"encoder.{layer}.resid_post" for layer in range(model.config.n_encoder_layers)])
    hooked_encode(model, source, hooks)
    outputs = torch.cat([hooks.activations[f"encoder.{layer}.resid_post"] for layer in range(model.config.n_encoder_layers)])
    return model.encoder_norm(outputs)  # [L, S, d_model]


def _text(ids: list[int], tokenizer: TextTokenizer | None) -> str:
    """A translation's text: its tokenizer's, else its ids."""
    return " ".join(ids_as_text(ids)) if tokenizer is None else tokenizer.decode(ids)


@torch.inference_mode()
def decoder_lens(model: Network, source_ids: list[int], target_tokenizer: TextTokenizer | None = None) -> DecoderLensResult:
    """The greedy translation of ``source_ids`` (EOS last) from every encoder layer's output; ``target_tokenizer``
    names the pieces and writes the text (without one, the ids stand for both)."""
    network = check_supported(model, InterventionTool.DECODER_LENS)
    config = network.config
    source = torch.tensor([source_ids], device=next(network.parameters()).device)  # [1, S]
    memory = layer_memories(network, source)  # [L, S, d_model]
    n_layers = memory.shape[0]
    cache = network.start_cache(memory, network.padding_mask(source.expand(n_layers, -1)))
    current = torch.full((n_layers,), config.bos_id, dtype=torch.long, device=source.device)  # [L]
    finished = torch.zeros(n_layers, dtype=torch.bool, device=source.device)  # [L]
    chosen, log_probabilities = [], []
    max_steps = min(default_max_target(len(source_ids), config.max_len) - 1, config.max_len - 1)  # the Stepper's limit
    for _ in range(max_steps):
        hidden, _, _ = network.decode_step(current, cache)  # [L, d_model]
        step_log_probabilities = torch.log_softmax(network.logits(hidden).float(), dim=-1)  # [L, V]
        current = step_log_probabilities.argmax(-1)  # [L]
        chosen.append(current.masked_fill(finished, -1))  # -1: that row had ended
        log_probabilities.append(step_log_probabilities.gather(-1, current[:, None])[:, 0])  # [L]
        finished |= current == config.eos_id
        if bool(finished.all()):
            break
    ids = torch.stack(chosen, 1).tolist() if chosen else [[] for _ in range(n_layers)]  # [L][steps]
    scores = torch.stack(log_probabilities, 1).cpu().numpy() if chosen else np.zeros((n_layers, 0), np.float32)
    token_ids = [[token for token in row if token >= 0] for row in ids]
    per_token = [scores[layer, : len(row)] for layer, row in enumerate(token_ids)]
    return DecoderLensResult(
        layers=[f"L{layer + 1}" for layer in range(n_layers)],
        token_ids=token_ids,
        tokens=[ids_as_text(row) if target_tokenizer is None else target_tokenizer.pieces(row) for row in token_ids],
        translations=[_text(row, target_tokenizer) for row in token_ids],
        log_probabilities=per_token,
        total_log_probabilities=np.array([float(row.sum()) for row in per_token], dtype=np.float32),
        final_norm=has_encoder_final_norm(network),
    )


def bundle_decoder_lens(bundle: Bundle, text: str) -> DecoderLensResult:
    """``decoder_lens`` of the sentence ``bundle`` reads from ``text``, labelled with its pieces."""
    return decoder_lens(bundle.model, bundle.source_ids(text)[0], bundle.target_tokenizer)
