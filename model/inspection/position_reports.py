"""A model's positional report (``positional_report``: the Positional tab's, the figure's, the command line's): an
absolute table's (model/inspection/positional.py), a pretrained model's own (its family's ``read_positions``), or, for
the app's Transformer whose positions work inside self-attention (issue 42, model/nn/positions.py), what the scheme
does instead of a table, since nothing is added to the embeddings:

* **rope**: the angles each pair of a head's dimensions is turned by (the paper's (sin, cos) table over a head's
  dimensions: a fixed rotation maps position p to p + k exactly) and the relative property *measured on the model*:
  the model's own layer-1 query and key of one piece, turned at every position by its own code, give scores with
  score(i, j) = score(i + k, j + k) to float precision;
* **alibi**: each head's bias −m_h·|key − query| by distance (encoder: both sides; decoder: the same formula, keys after
  the query masked), the slopes in the summary;
* **relative**: each head's learned bias by distance, the encoder's and the decoder's (T5's buckets);
* **none**: what order the model can still know: the decoder's causal mask (query t reads keys 0..t, so it can count),
  and the encoder, whose every query reads every key alike.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import torch

from model.family import Positions
from model.inspection.positional import PositionalReport, sinusoid_table, table_report
from model.nn.classifier import OwnNetwork
from model.nn.positions import SCHEMES, PositionScheme
from model.nn.transformer import EncoderLayer

NO_CHECK = (np.array([1]), np.full(1, np.nan), np.full(1, np.nan))  # offsets, errors: no rotation to check


def positional_report(bundle: Any, n_positions: int | None = None, max_offset: int = 32) -> PositionalReport | None:
    """The report of a model's positions; None for a model that has none (an RNN, whose recurrence carries the
    order; a pretrained one without)."""
    family = bundle.family
    if family.read_positions is not None:  # a family with positions of its own kind (a pretrained model's)
        return family.read_positions(bundle, n_positions, max_offset)
    if family.capabilities.positions is not Positions.TABLE:
        return None
    if not SCHEMES[str(bundle.config.positional_encoding)].table:  # rope, ALiBi, a relative bias or none
        return scheme_report(bundle, n_positions, max_offset)
    table = bundle.model.positional_table.detach().float().cpu().numpy()  # [max_len, d_model]
    return table_report(bundle.config.positional_encoding, table[:n_positions] if n_positions else table, max_offset)


def scheme_report(bundle: Any, n_positions: int | None, max_offset: int = 32) -> PositionalReport:
    """The report of a Transformer whose scheme works inside self-attention, or has no positions (module docstring)."""
    model: OwnNetwork = bundle.model  # the app's own: its scheme is one of model/nn/positions.py's
    scheme = model.positions
    positions = min(n_positions or 64, model.config.max_len)
    if scheme.rotates:
        return _rotary(model, positions, max_offset)
    if not scheme.in_attention:  # no positions at all
        return _none(positions)
    return _bias(scheme, min(positions, 64) // 2)


def _rotary(model: OwnNetwork, positions: int, max_offset: int) -> PositionalReport:
    d_k = model.config.d_k
    report = table_report("rotary", sinusoid_table(positions, d_k), max_offset)
    error = measured_offset_error(model, positions)
    report.summary = (
        f"Rotary positions (RoPE), heads of {d_k} dimensions: nothing is added to the embeddings; every self-attention "
        "turns each (sin, cos) pair of its queries and keys by the angle p·w (left; cross-attention is not turned). A "
        f"fixed rotation maps the angles at p to those at p+k (largest error over k ≤ {report.offsets[-1]}: "
        f"{np.nanmax(report.rotation_error):.1e}). Measured on this model: its layer-1 query and key of one piece, "
        f"turned at {positions} positions, score alike at (i, j) and (i+k, j+k) within {error:.1e}: the score depends on "
        "the offset only (right: constant along each diagonal)."
    )
    return report


@torch.inference_mode()
def measured_offset_error(model: OwnNetwork, positions: int, piece: int = 4) -> float:
    """max |score(i, j) − score(i + k, j + k)| over every i, j, k of the model's first encoder self-attention, for one
    piece's query and key repeated at ``positions`` positions and turned by the model's own scheme."""
    attention = cast(EncoderLayer, model.encoder_layers[0]).self_attention
    x = model.source_embedding.weight[piece] * math.sqrt(model.config.d_model)  # [d_model]
    q, k, _ = attention._split_projection(attention.qkv_projection(x.expand(1, positions, -1)), 3)  # [1, H, P, d_k]
    q, k = model.positions.turn(q, 0), model.positions.turn(k, 0)
    scores = (q @ k.transpose(-1, -2))[0].double() / math.sqrt(q.shape[-1])  # [H, P, P]
    return max(float((scores[:, :-shift, :-shift] - scores[:, shift:, shift:]).abs().max()) for shift in range(1, positions))


@torch.inference_mode()
def _bias(scheme: PositionScheme, distance: int) -> PositionalReport:
    """Each head's bias over key − query from −distance to distance, the encoder's and the decoder's [2D + 1, H]."""
    encoder, decoder = (_bias_by_distance(scheme, stack, distance) for stack in ("encoder", "decoder"))  # [2D + 1, H] each
    distances = np.arange(-distance, distance + 1)
    report = PositionalReport(scheme.name, encoder, decoder, *NO_CHECK, row_values=distances)
    report.summary = (
        f"{scheme.bias_summary()} Left the encoder's, right the decoder's (keys after the query are masked there); "
        "the curves are the chosen heads."
    )
    return report


def _bias_by_distance(scheme: PositionScheme, stack: str, distance: int) -> np.ndarray:
    """[2D + 1, H]: ``stack``'s bias for a query at position D over keys at 0..2D (key − query from −D to D)."""
    bias = scheme.bias(stack, 1, 2 * distance + 1, distance)  # [H, 1, 2D + 1]
    assert bias is not None  # a scheme that biases its scores
    return bias[:, 0].T.float().cpu().numpy()


def _none(positions: int) -> PositionalReport:
    causal = np.tril(np.ones((positions, positions), np.float32))  # [P, P]
    report = PositionalReport("none", causal, np.ones((positions, positions), np.float32), *NO_CHECK)
    report.summary = (
        "No positional information (NoPE): nothing is added and nothing turned. The encoder cannot tell orders apart: "
        "every query reads every key alike (right), so its output is permuted exactly as its input is. The decoder "
        "knows order only through its causal mask (left: query t reads keys 0..t), from which it can count how many "
        "pieces came before."
    )
    return report
