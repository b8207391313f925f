"""Any view as the signed difference of two snapshots: what training changed between them (later minus earlier).

The two traces must have the same shapes, which forcing one target on every snapshot gives
(model/timeline/traces.py). Figures draw a difference with a diverging colour map centred at 0 and symmetric limits
(``difference_levels``), so that red is attention gained and blue attention lost whatever the range.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from model.decoding.trace import Trace
from model.timeline.source import TimelineError
from model.timeline.traces import SnapshotTrace
from model.timeline.views import Panel, ViewSpec, view_panel

DIVERGING_COLORMAP = "RdBu_r"  # blue below 0, white at 0, red above


def _same_shapes(before: Trace, after: Trace) -> None:
    for kind in after.kinds:
        if not before.has(kind) or before.matrix(kind).shape != after.matrix(kind).shape:
            raise TimelineError(
                "the two snapshots decoded the sentence differently, so their matrices differ in shape; "
                "force one target on both (the final model's translation, or the reference)"
            )


def difference_trace(before: SnapshotTrace, after: SnapshotTrace) -> Trace:
    """``after``'s trace with every attention array replaced by after - before (the same shapes are required); the
    tokens and candidates are ``after``'s."""
    _same_shapes(before.trace, after.trace)

    def minus(kind_field: str) -> np.ndarray | None:
        later, earlier = getattr(after.trace, kind_field), getattr(before.trace, kind_field)
        return None if later is None else (later.astype(np.float32) - earlier.astype(np.float32))  # [layers, heads, Q, K]

    return replace(after.trace, encoder_self=minus("encoder_self"), decoder_self=minus("decoder_self"), cross=minus("cross"))


def difference_panel(before: SnapshotTrace, after: SnapshotTrace, view: ViewSpec) -> Panel:
    """The panel ``view`` shows, as after - before (a mean, max or rollout is taken of each snapshot first)."""
    _same_shapes(before.trace, after.trace)
    earlier, later = view_panel(before.trace, view), view_panel(after.trace, view)
    return replace(later, values=later.values - earlier.values)  # [rows, columns]; NaN gaps stay NaN


def difference_levels(values: np.ndarray) -> tuple[float, float]:
    """Symmetric colour limits (-m, m) around 0, m the largest |difference| (1 when there is none)."""
    finite = np.abs(values[np.isfinite(values)])
    largest = float(finite.max()) if finite.size else 0.0
    largest = largest if largest > 0 else 1.0
    return -largest, largest
