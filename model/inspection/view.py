"""What the Explore view shows, without Qt: a kind of attention, a layer, a head or an aggregate, the
step, the token level and the beam hypothesis. The window keeps one ``ExploreView``; the ``export``
command builds one from its options (``ExportRequest`` extends it), so both show the same matrix.

``fitted`` turns a wish into what a trace can show: a kind the model lacks becomes the first it has,
a layer beyond the model's the last one, rollout of cross-attention its mean (with a note saying so).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from model.decoding.trace import Trace
from model.inspection.selection import AttentionMatrix, one_map_per_layer, select
from model.kinds import AttentionKind, SelectionError


def shown_trace(trace: Trace, step: int | None, word_level: bool) -> Trace:
    """The trace as a view shows it: cut to ``step`` steps first, then grouped into words (so rows of
    later steps never leak into a word)."""
    if step is not None:
        if not 0 <= step <= trace.n_steps:
            raise SelectionError(f"step must be between 0 and {trace.n_steps}, not {step}")
        trace = trace.at_step(step)
    return trace.word_level() if word_level else trace


@dataclass
class ExploreView:
    kind: AttentionKind = AttentionKind.CROSS
    layer: int = 0  # 0-based
    head: int | str = "mean"  # 0-based head, or mean, max, rollout
    step: int | None = None  # the decoding as it stood after this many steps (None: all of it)
    word_level: bool = False  # words instead of pieces (keys summed, queries averaged)
    hypothesis: int | None = None  # the beam hypothesis shown (0 = best), when decoding searched a beam

    def fitted(self, trace: Trace) -> tuple[ExploreView, str]:
        """(this view as ``trace`` can show it, a note for the user when something had to change)."""
        kinds = trace.kinds
        if not kinds:
            return self, "this trace holds no attention"
        kind = AttentionKind.parse(self.kind)
        note = ""
        if kind not in kinds:
            note = f"this model has no {kind.label}: showing its {kinds[0].label}"
            kind = kinds[0]
        n_layers, n_heads = trace.matrix(kind).shape[:2]
        layer = min(max(self.layer, 0), n_layers - 1)
        head = self.head
        if one_map_per_layer(trace) and n_heads == 1:
            head = 0  # a layer-wide measure's one map ("all heads", as the head box says), whatever was chosen before
        if isinstance(head, int) and not 0 <= head < n_heads:
            head = "mean"
        if head == "rollout" and not kind.is_self_attention:
            head = "mean"
            note = "Rollout follows self-attention through the layers: showing the mean for cross."
        return replace(self, kind=kind, layer=layer, head=head), note

    def shown_trace(self, trace: Trace) -> Trace:
        """The trace as the view shows it: cut to the step first, then grouped into words."""
        return shown_trace(trace, self.step, self.word_level)

    def matrix(self, shown: Trace) -> AttentionMatrix:
        """The matrix of the focus view, from a trace already at this view's step and level."""
        return select(shown, self.kind, self.layer, self.head)
