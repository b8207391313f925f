"""What a pretrained model has for positions, as the positional-encoding tab and figure read it
(model.inspection.positional.PositionalReport):

- a sinusoidal table (Marian): its (sin | cos) halves put back into (sin, cos) pairs, so the paper's
  rotation check applies;
- a learned absolute table (BERT, GPT-2, BART): the table and its similarity;
- rotary positions (the Llama family): no table is added; each head's queries and keys are turned, pair of
  dimensions by pair, by the angle p·w_i (w_i = rope_theta^(-2i / head size)). The report holds those angles as the
  paper's (sin, cos) table over a head's dimensions: the rotation check is exact for it (seed 003's algebra), which is
  why a rotary head's score depends on the offset between query and key only;
- T5's relative-position bias: no table is added to the embeddings; instead each head of the first layer
  adds a learned bias to its attention logits by the (bucketed) distance key − query. The report holds
  it as [distance, head] for the encoder (both directions) and the decoder (causal: keys at or before
  the query).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from model.inspection.positional import PositionalReport, sinusoid_table, table_report


def _first_table(hf_model: Any) -> tuple[str, np.ndarray] | None:
    """(kind, [positions, d_model]) of the model's absolute position table, None when it has none."""
    config = hf_model.config
    for name, module in hf_model.named_modules():
        if name.endswith(("position_embeddings", "wpe", "embed_positions")) and hasattr(module, "weight"):
            table = module.weight.detach().float().cpu().numpy()  # [positions (+ offset), d_model]
            offset = int(getattr(module, "offset", 0) or 0)  # BART keeps 2 unused rows first
            table = table[offset:]
            if config.model_type in ("marian", "pegasus"):  # [sin half | cos half] -> (sin, cos) pairs
                half = table.shape[1] // 2
                paired = np.empty_like(table)
                paired[:, 0::2], paired[:, 1::2] = table[:, :half], table[:, half:]
                return "sinusoidal", paired
            return "learned", table
    return None


@torch.inference_mode()
def relative_bias(hf_model: Any, max_distance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distances [2D + 1], encoder bias [2D + 1, heads], decoder bias [2D + 1, heads]) of T5's first layer."""
    distances = np.arange(-max_distance, max_distance + 1)
    tables = []
    for stack in (hf_model.get_encoder(), hf_model.get_decoder()):
        attention = stack.block[0].layer[0].SelfAttention
        bias = attention.compute_bias(2 * max_distance + 1, 2 * max_distance + 1)  # [1, heads, q, k]
        tables.append(bias[0, :, max_distance, :].T.float().cpu().numpy())  # [k = 2D + 1, heads]: distance k - D
    return distances, tables[0], tables[1]


def pretrained_report(bundle: Any, n_positions: int | None, max_offset: int = 32):
    """The PositionalReport of a pretrained model (see the module docstring)."""
    hf_model = bundle.model.hf_model
    if bundle.config.positional_encoding == "relative":
        distance = max(2, min(n_positions or 32, 64) // 2)
        distances, encoder, decoder = relative_bias(hf_model, distance)
        return PositionalReport(
            "relative", encoder, decoder, np.array([1]), np.full(1, np.nan), np.full(1, np.nan), row_values=distances
        )
    if bundle.config.positional_encoding == "rotary":
        config = hf_model.config
        head_size = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        base = float(getattr(config, "rope_theta", None) or 10000.0)
        positions = min(n_positions or 128, bundle.config.max_len)
        return table_report("rotary", sinusoid_table(positions, head_size, base), max_offset, base)
    found = _first_table(hf_model)
    if found is None:
        return None
    kind, table = found
    return table_report(kind, table[: n_positions or None], max_offset)
