"""Positional encodings of a model as plain arrays, and the relative-position property of the paper:
for the sinusoidal encoding, PE(pos + k) is a fixed rotation of PE(pos) — each (sin, cos) pair of
dimensions turns by the angle k * omega_i whatever pos is — so attention can learn relative offsets.

Used by the app's positional-encoding tab and from Python; no Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class PositionalReport:
    """A model's positions. For "sinusoidal" and "learned" tables: ``table`` [positions, d_model] and its
    ``similarity``. For T5's "relative" bias: ``table`` is the encoder's bias [distance, head] and
    ``similarity`` the decoder's, with the distances (key − query) in ``row_values``."""

    # "sinusoidal", "learned", "rotary" (the angles a rotary model turns a head's pairs by), "relative" or "alibi" (a bias
    # by distance), "none" (no positions: the masks instead)
    kind: str
    table: np.ndarray  # [positions, d_model] the encoding added to the embeddings
    similarity: np.ndarray  # [positions, positions] dot products PE(i) . PE(j)
    offsets: np.ndarray  # [K] the k of PE(pos + k)
    rotation_error: np.ndarray  # [K] max |R_k PE(pos) - PE(pos + k)| over pos (sinusoidal: the closed-form rotation)
    unrotated_error: np.ndarray  # [K] max |PE(pos) - PE(pos + k)|: how far apart they are before rotating
    row_values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # relative: the distances of table's rows
    summary: str = ""  # what the tab and the figure say of it ('' : the kind's own words, positional_tab.py)

    @property
    def relative(self) -> bool:
        """A bias by distance (T5's, ALiBi's): rows are distances, columns heads."""
        return self.kind in ("relative", "alibi")

    @property
    def table_like(self) -> bool:
        """Rows are positions of a table or of angles (its rotation check is drawn): not a bias, not the masks."""
        return self.kind in ("sinusoidal", "learned", "rotary")

    @property
    def rotates(self) -> bool:
        """Whether a fixed rotation R_k maps the table's row p to row p + k (sinusoidal tables, rotary angles)."""
        return self.kind in ("sinusoidal", "rotary")

    def panel_titles(self) -> dict[str, tuple[str, tuple[str, str]]]:
        """Each panel's (title, (row axis, column axis)), the curves' with their (x axis, legend prefix)."""
        if self.relative:
            return {
                "table": ("encoder bias (every layer): distance × head", ("key − query", "head")),
                "second": ("decoder bias (every layer): distance × head", ("key − query", "head")),
                "curves": ("bias of the chosen heads over distance", ("key − query", "head")),
            }
        if self.kind == "none":
            return {
                "table": ("decoder: the keys each query may read (its causal mask)", ("query", "key")),
                "second": ("encoder: every query reads every key alike", ("query", "key")),
                "curves": ("chosen keys over queries", ("query", "key")),
            }
        if self.kind == "rotary":
            return {
                "table": ("rotary angles sin/cos(p·w): position × dimension", ("position", "dimension")),
                "second": ("R(i)·R(j): a function of j − i only", ("position i", "position j")),
                "curves": ("chosen dimensions over positions", ("position", "dim")),
            }
        return {
            "table": ("encoding: positions × dimensions", ("position", "dimension")),
            "second": ("similarity PE(i)·PE(j)", ("position i", "position j")),
            "curves": ("chosen dimensions over positions", ("position", "dim")),
        }

    def value_labels(self) -> tuple[str, str]:
        """What the two matrices' colours mean (their colour bars' labels)."""
        if self.relative:
            return ("bias added to the attention logit", "bias added to the attention logit")
        if self.kind == "none":
            return ("may read (1) or not (0)", "may read (1) or not (0)")
        return ("encoding value", "dot product")

    @property
    def row_labels(self) -> list[str]:
        return [str(int(v)) for v in self.row_values] if len(self.row_values) else [str(p) for p in range(self.table.shape[0])]


def frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """omega_i = base^(-2i / d_model) for the d_model / 2 (sin, cos) pairs (the paper's base is 10,000; a rotary
    model's is its ``rope_theta``, over a head's dimensions)."""
    return np.power(base, -np.arange(0, d_model, 2, dtype=np.float64) / d_model)


def sinusoid_table(positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """[positions, d_model]: (sin(p w_i), cos(p w_i)) pairs: the paper's table, or a rotary model's angles."""
    angles = np.arange(positions, dtype=np.float64)[:, None] * frequencies(d_model, base)  # [positions, d_model / 2]
    table = np.empty((positions, d_model), np.float64)
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return table


def rotate(table: np.ndarray, k: int, base: float = 10000.0) -> np.ndarray:
    """Apply the rotation R_k to each row of a sinusoidal table [positions, d_model]: the pair
    (sin(p w), cos(p w)) becomes (sin((p + k) w), cos((p + k) w))."""
    angle = k * frequencies(table.shape[1], base)  # [d_model / 2]
    sin, cos = table[:, 0::2], table[:, 1::2]
    rotated = np.empty_like(table, dtype=np.float64)
    rotated[:, 0::2] = sin * np.cos(angle) + cos * np.sin(angle)
    rotated[:, 1::2] = cos * np.cos(angle) - sin * np.sin(angle)
    return rotated


def table_report(kind: str, table: np.ndarray, max_offset: int = 32, base: float = 10000.0) -> PositionalReport:
    """Similarity and the rotation check of an absolute table [positions, d_model] (a rotary model's: the angles its
    rotation turns each pair of a head's dimensions by, whose frequencies have ``base``)."""
    table = np.ascontiguousarray(table, dtype=np.float32)
    offsets = np.arange(1, max(2, min(max_offset, table.shape[0] // 2)) + 1)
    table64 = table.astype(np.float64)
    if kind in ("sinusoidal", "rotary"):
        rotation = np.array([np.abs(rotate(table64[:-k], k, base) - table64[k:]).max() for k in offsets])
    else:
        rotation = np.full(len(offsets), np.nan)  # a learned table has no such rotation
    unrotated = np.array([np.abs(table64[:-k] - table64[k:]).max() for k in offsets])
    return PositionalReport(kind, table, (table64 @ table64.T).astype(np.float32), offsets, rotation, unrotated)


SEQUENTIAL_MAP, DIVERGING_MAP = "viridis", "CET-D1"  # pyqtgraph's name; figures use matplotlib's "RdBu_r"


def colour_scale(values: np.ndarray) -> tuple[tuple[float, float], bool]:
    """(levels, diverging): a sequential map over (min, max) when no value is negative, else a
    diverging one symmetric around 0, so that 0 is the map's neutral middle."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return (0.0, 1.0), False
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    if low == high:  # one value everywhere: placed against 0 (all ones at the top of the scale, all zeros at the bottom)
        return ((low, -low), True) if low < 0 else ((0.0, high if high > 0 else 1.0), False)
    if low >= 0:
        return (low, high), False
    limit = max(abs(low), abs(high)) or 1.0
    return (-limit, limit), True
