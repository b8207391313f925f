"""One attention matrix picked out of a Trace, exactly as a view shows it and an export writes it:
a kind, a layer and a head (or the mean or max over heads, or rollout), with its axis labels.

Shared by the app's views and the ``export`` command, so the NPY/CSV a user saves holds the
numbers on the screen.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from model.decoding.trace import Trace
from model.inspection.heads import max_over_heads, mean_over_heads, rollout
from model.inspection.measure_catalogue import MEASURES
from model.kinds import AttentionKind, SelectionError, current_row

AGGREGATES = ("mean", "max", "rollout")  # what a view can show instead of one head
AGGREGATE_TITLES = {"mean": "mean over heads", "max": "max over heads", "rollout": "rollout"}


def write_csv(values: np.ndarray, row_labels: list[str], column_labels: list[str], path: str | Path, corner: str = "") -> None:
    """A 2-D table with its labels in the first row and column; numbers written exactly (repr)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([corner, *column_labels])
        for label, row in zip(row_labels, np.asarray(values)):
            writer.writerow([label, *(repr(float(v)) for v in row)])


def parse_head(text: str | int) -> int | str:
    """'3' -> 2 (heads are numbered from 1 for people), 'mean'/'max'/'rollout' as they are."""
    if isinstance(text, int):
        return text
    text = str(text).strip().lower()
    if text in AGGREGATES:
        return text
    if not (text.isascii() and text.isdigit()) or int(text) < 1:  # ASCII digits: '²' is a digit int() refuses
        raise SelectionError(f"head must be a number from 1, or one of {', '.join(AGGREGATES)}, not {text!r}")
    return int(text) - 1


@dataclass
class AttentionMatrix:
    values: np.ndarray  # [queries, keys], float32
    query_labels: list[str]
    key_labels: list[str]
    kind: AttentionKind
    layer: int  # 0-based
    head: int | str  # 0-based head, or an aggregate name
    step: int  # decoding steps the trace held
    measure: str = ""  # the trace's measure ("" = attention weights; model/attribution/measures.py)

    @property
    def title(self) -> str:
        if not self.measure:
            return f"{self.kind.label}, layer {self.layer + 1}, {head_title(self.head)}"
        return f"{measure_place(self.measure, self.layer, self.head)} ({self.kind.value})"

    @property
    def current_row(self) -> int | None:
        """The row of the step being decoded, outlined in every view; None for encoder self-attention."""
        return current_row(self.kind, len(self.query_labels))


def head_title(head: int | str) -> str:
    """'head 3' (from 1, for people) or the aggregate's name."""
    return f"head {head + 1}" if isinstance(head, int) else AGGREGATE_TITLES[head]


def one_map_per_layer(trace: Trace) -> bool:
    """Whether the trace holds a measure that gives one map per layer (or one in all), not one per head."""
    measure = MEASURES.get(trace.measure) if trace.measure else None
    return measure is not None and not measure.per_head


def map_titles(trace: Trace, kind: AttentionKind | str) -> tuple[list[str], list[str]]:
    """(a title per layer, a title per head) of the maps the trace holds for ``kind``: "layer 2" / "head 3"; "all
    heads" for a measure with one map per layer, "all layers" for one with a single map."""
    n_layers, n_heads = trace.matrix(AttentionKind.parse(kind)).shape[:2]
    one_map = one_map_per_layer(trace) and n_heads == 1
    single = one_map and MEASURES[trace.measure].single and n_layers == 1
    layers = ["all layers"] if single else [f"layer {layer + 1}" for layer in range(n_layers)]
    return layers, ["all heads"] if one_map else [head_title(head) for head in range(n_heads)]


def source_shares_through(trace: Trace, layer: int) -> np.ndarray:
    """[T] each prediction's share from the source: for a rolled-out measure (ALTI+), through ``layer`` (its cross map's
    row sums); else the trace's own (a saliency's; empty when the trace does not split predictions)."""
    measure = MEASURES.get(trace.measure) if trace.measure else None
    if measure is not None and measure.rollout and trace.cross is not None and len(trace.cross):
        return trace.cross[min(layer, len(trace.cross) - 1), 0].sum(-1).astype(np.float32)  # [T]
    return trace.source_share


def prediction_source_share(trace: Trace, layer: int) -> float | None:
    """The share of the last step's prediction that comes from the source (``source_shares_through``); None when the
    trace does not split predictions."""
    shares = source_shares_through(trace, layer)
    if trace.n_steps and len(shares) and not np.isnan(shares[-1]):
        return float(shares[-1])
    return None


def heads_for(kind: AttentionKind, n_heads: int) -> list[int | str]:
    """Every choice a view offers for a kind: each head, then the aggregates (no rollout for cross-attention,
    which does not feed its own input)."""
    kind = AttentionKind.parse(kind)
    return [*range(n_heads), *(a for a in AGGREGATES if kind.is_self_attention or a != "rollout")]


def select(trace: Trace, kind: AttentionKind | str, layer: int, head: int | str, step: int | None = None) -> AttentionMatrix:
    """The matrix of ``kind`` at ``layer`` (0-based) for ``head`` (0-based, 'mean', 'max' or 'rollout'),
    in the trace as it stood after ``step`` steps (all of them when None)."""
    kind = AttentionKind.parse(kind)
    if step is not None:
        if step < 0 or step > trace.n_steps:
            raise SelectionError(f"step must be between 0 and {trace.n_steps}, not {step}")
        trace = trace.at_step(step)
    weights = trace.matrix(kind)  # [layers, heads, queries, keys]
    n_layers, n_heads = weights.shape[:2]
    if not 0 <= layer < n_layers:
        raise SelectionError(f"layer must be between 1 and {n_layers}, not {layer + 1}")
    if isinstance(head, int):
        if not 0 <= head < n_heads:
            raise SelectionError(f"head must be between 1 and {n_heads}, not {head + 1}")
        values = weights[layer, head]
    elif head == "mean":
        values = mean_over_heads(weights)[layer]
    elif head == "max":
        values = max_over_heads(weights)[layer]
    elif head == "rollout":
        if not kind.is_self_attention:
            raise SelectionError("rollout follows self-attention through the layers; choose encoder or decoder")
        values = rollout(weights)[layer] if weights.shape[2] else weights[layer, 0]
    else:
        raise SelectionError(f"unknown head {head!r}")
    queries, keys = trace.axis_labels(kind)
    return AttentionMatrix(
        np.ascontiguousarray(values, dtype=np.float32), list(queries), list(keys), kind, layer, head, trace.n_steps, trace.measure
    )


def measure_place(name: str, layer: int, head: int | str) -> str:
    """'ALTI+ through layer 2', 'Norm-based ‖α f(x)‖, layer 1, head 3', 'Integrated gradients' (views' titles)."""
    measure = MEASURES[name]
    if measure.single:
        return measure.label
    if not measure.per_head:
        return f"{measure.label} {'through' if measure.rollout else 'in'} layer {layer + 1}"
    return f"{measure.label}, layer {layer + 1}, {head_title(head)}"
