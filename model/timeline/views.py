"""What a timeline figure shows of each snapshot: one head (or a mean, max or rollout of a layer), one layer's heads
side by side, or every layer and head (the grid), as one image per snapshot (a ``Panel``).

The same ``ViewSpec`` picks the panels of the strip figure, of each frame of the GIF and of a difference of two
snapshots, so that all three show the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from model.decoding.trace import Trace
from model.figures.attention import grid_mosaic
from model.inspection.selection import head_title, select
from model.kinds import AttentionKind, SelectionError
from model.timeline.source import TimelineError

Scope = Literal["head", "layer", "grid"]  # a head (or an aggregate), a layer's heads, every layer and head


@dataclass(frozen=True)
class ViewSpec:
    """A kind of attention and how much of it: a head of a layer, a layer's heads, or every layer and head."""

    kind: AttentionKind
    layer: int | None = None  # from 0; None: every layer (the grid)
    head: int | str | None = None  # from 0, or mean, max, rollout; None: every head of the layer (or the grid)

    @property
    def scope(self) -> Scope:
        if self.layer is None:
            return "grid"
        return "layer" if self.head is None else "head"

    def title(self) -> str:
        """'cross-attention (encoder-decoder), layer 2, head 3' (layers and heads from 1)."""
        label = self.kind.label
        if self.layer is None:
            return f"{label}, every layer and head"
        if self.head is None:
            return f"{label}, layer {self.layer + 1}, every head"
        return f"{label}, layer {self.layer + 1}, {head_title(self.head)}"

    def check(self, trace: Trace) -> None:
        """A TimelineError naming what the trace lacks: the kind, the layer or the head."""
        if self.layer is None and self.head is not None:
            raise TimelineError("a head is chosen within a layer: give the layer too")
        try:
            if self.scope == "head":
                assert self.layer is not None and self.head is not None
                select(trace, self.kind, self.layer, self.head)
                return
            n_layers = trace.matrix(self.kind).shape[0]
        except SelectionError as error:
            raise TimelineError(str(error)) from None
        if self.layer is not None and not 0 <= self.layer < n_layers:
            raise TimelineError(f"layer must be between 1 and {n_layers}, not {self.layer + 1}")


@dataclass
class Panel:
    """One snapshot's image: a matrix [queries, keys] with its tokens, or a mosaic of heads with NaN gaps."""

    values: np.ndarray  # [rows, columns]
    query_labels: list[str] = field(default_factory=list)  # a head's rows and columns; empty for a mosaic
    key_labels: list[str] = field(default_factory=list)
    row_titles: list[tuple[float, str]] = field(default_factory=list)  # (row at the centre, "layer 2") of a mosaic
    column_titles: list[tuple[float, str]] = field(default_factory=list)  # (column at the centre, "head 3")

    @property
    def labelled(self) -> bool:
        return bool(self.query_labels)


def _mosaic(weights: np.ndarray, first_layer: int) -> Panel:
    """Heads [layers, heads, Q, K] side by side (layers in rows), titled from ``first_layer`` (0-based)."""
    n_layers, n_heads, n_queries, n_keys = weights.shape
    if not (n_queries and n_keys):
        weights = np.zeros((n_layers, n_heads, 1, 1), np.float32)
        n_queries = n_keys = 1
    mosaic, step_rows, step_columns = grid_mosaic(weights)  # [rows, columns], NaN between cells
    return Panel(
        mosaic,
        row_titles=[(layer * step_rows + n_queries / 2, f"layer {first_layer + layer + 1}") for layer in range(n_layers)],
        column_titles=[(head * step_columns + n_keys / 2, f"head {head + 1}") for head in range(n_heads)],
    )


def view_panel(trace: Trace, view: ViewSpec) -> Panel:
    """The panel ``view`` shows of ``trace``: one matrix with its tokens, a layer's heads, or the grid."""
    view.check(trace)
    if view.scope == "head":
        assert view.layer is not None and view.head is not None
        matrix = select(trace, view.kind, view.layer, view.head)
        return Panel(np.asarray(matrix.values, dtype=np.float32), list(matrix.query_labels), list(matrix.key_labels))
    weights = np.asarray(trace.matrix(view.kind), dtype=np.float32)  # [layers, heads, Q, K]
    if view.layer is None:
        return _mosaic(weights, 0)
    return _mosaic(weights[view.layer : view.layer + 1], view.layer)


def default_view(trace: Trace) -> ViewSpec:
    """The grid of the trace's cross-attention, or of its first kind when it has none."""
    kinds = trace.kinds
    if not kinds:
        raise TimelineError("this model's trace holds no attention to show")
    return ViewSpec(AttentionKind.CROSS if AttentionKind.CROSS in kinds else kinds[0])
