"""How a model's attention scores split into terms by position (the neuron view's, model/neuron/terms.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TermSplit:
    """The terms a model's scores are the sum of: their names, colours, which vary with the key's position, and how."""

    scheme: str  # "absolute" (a table added to the embeddings) or "relative bias" (T5's)
    names: tuple[str, ...]
    colours: tuple[str, ...]  # the window's and the figures' colour of each term
    key_position_terms: tuple[int, ...]  # the terms that vary with the key's position
    note: str  # the sum, said in words (the tooltip)
    position: str  # what the position part is, said in words (the figure's caption, the window's line); {} the encoding
    score_label: str = "scaled score QKᵀ/√d_k"  # the score's plot title in the window
    score_axis: str = "scaled score"  # the score's axis in the figure


TERM_NAMES = ("token·token", "token·position", "position·token", "position·position")  # query part · key part
TERM_COLOURS = ("#4c78a8", "#72b7b2", "#f58518", "#e45756")  # the window's and the figures' colour of each term
KEY_POSITION_TERMS = (1, 3)  # the terms that vary with the key's position
TERMS_NOTE = (
    "score = token·token + token·position + position·token + position·position (query part · key part, over √d_k); "
    "position = the positional encoding's direct path through every LayerNorm, token = everything else (β included)"
)
ABSOLUTE_TERMS = TermSplit(
    "absolute",
    TERM_NAMES,
    TERM_COLOURS,
    KEY_POSITION_TERMS,
    TERMS_NOTE,
    "position = the {} encoding's direct path through every LayerNorm; token = everything else (LayerNorm β and the "
    "projections' biases included)",
)
RELATIVE_BIAS_TERMS = TermSplit(
    "relative bias",
    ("query·key", "relative position bias"),
    (TERM_COLOURS[0], TERM_COLOURS[3]),
    (1,),
    "score = query·key + the relative position bias the model learned for the key's offset from the query (T5: one "
    "per head and bucket of offsets, computed by the first layer and added in every layer; no √d_k)",
    "relative position bias = the bias the model learned for the key's offset from the query (in buckets: exact near, "
    "coarser far), the same in every layer; query·key = the rest",
    "score QKᵀ + relative position bias",
    "score",  # T5 does not divide by √d_k
)


def term_tables(queries: np.ndarray, keys: np.ndarray, query_positions: np.ndarray, key_positions: np.ndarray) -> np.ndarray:
    """The four terms of queries [..., Q, d_k] and keys [..., K, d_k] with their positional parts: [4, ..., Q, K] in
    TERM_NAMES' order, each over √d_k, in float64."""
    q_position, k_position = query_positions.astype(np.float64), key_positions.astype(np.float64)
    q_token, k_token = queries.astype(np.float64) - q_position, keys.astype(np.float64) - k_position
    scale = 1.0 / math.sqrt(queries.shape[-1])
    pairs = ((q_token, k_token), (q_token, k_position), (q_position, k_token), (q_position, k_position))
    return np.stack([np.einsum("...qd,...kd->...qk", q, k) * scale for q, k in pairs])  # [4, ..., Q, K]


ROTARY_TERMS = TermSplit(
    "rotary",
    ("query·key, unrotated", "rotation"),
    (TERM_COLOURS[0], TERM_COLOURS[3]),
    (1,),
    "score = (the query and key as projected, unrotated)·/√d_k + what turning them by their positions adds (the "
    "rotary angle of the key's offset from the query: a relative position term)",
    "rotation = the score of the rotated query and key minus that of the unrotated ones; query·key, unrotated = the "
    "rest (content: every position's rotation undone)",
    "scaled score of the rotated q, k over √d_k",
)


def bias_terms(scheme: str, bias: str) -> TermSplit:
    """The two terms of the app's Transformer with a score bias by offset (``scheme``: "alibi" or "relative"; ``bias``:
    what it is, said in words): the scaled query·key, and the bias."""
    return TermSplit(
        scheme,
        ("query·key", "position bias"),
        (TERM_COLOURS[0], TERM_COLOURS[3]),
        (1,),
        f"score = query·key/√d_k + {bias} for the key's offset from the query",
        f"position bias = {bias}; query·key = the rest",
        "scaled score QKᵀ/√d_k + position bias",
    )
