"""Curves over training in the window: each head's entropy, role, AER and (on request) importance at every snapshot of
the opened model's timeline, with its validation scores, when each head became alignment-like and the largest
changes between consecutive snapshots (model/timeline/curves.py and changes.py). No Qt.

While the view is shown (``set_shown``), the curves follow the sentence explored on their own: the sentence and options
explored are measured once (without importance, the slow curve: asked for with ``compute``) as soon as the view is
shown, the timeline opened or another sentence decoded; a run the user cancelled is not started again for the same
sentence. ``compute`` decodes the sentence explored with every snapshot, forced along the final model's translation (so that
every snapshot's matrices compare; model/timeline/traces.py), then measures the curves, in a job of the
"timeline-curves" channel with progress, which ``cancel`` stops between two snapshots. The curves describe the
models as trained: heads knocked out in the window are not knocked out here. ``go_to_change`` moves the timeline to
a phase change's pair of snapshots (the later explored, the earlier compared with it) and chooses its head as the
user would (the Explore controller's ``choose_view``: the Attention box, the views, the Neuron view and the exports
all read that one choice); ``head_chosen`` then asks the tab to show the pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from psygnal import Signal

from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Job, Runner
from explorer.controllers.timeline import DIFFERENCE, SIDE_BY_SIDE, TimelineController
from model.decoding.stepper import DecodingOptions
from model.timeline.curves import CURVE_AER_PAIRS, CurveOptions, HeadCurves, head_curves
from model.timeline.source import SnapshotSource, choose_snapshots, snapshot_name
from model.timeline.traces import SnapshotTrace, decode_forced, decode_own, shared_target

CURVES_CHANNEL = "timeline-curves"
DECODING, MEASURING = "decoding the sentence with each snapshot", "measuring each snapshot's heads"


def decode_all(
    source: SnapshotSource,
    text: str,
    options: DecodingOptions,
    check: Callable[[], None] = lambda: None,
    progress: Callable[[int, int], None] = lambda done, total: None,
    indices: Sequence[int] | None = None,
) -> list[SnapshotTrace]:
    """``text`` decoded with each snapshot (all by default), forced along the final model's translation;
    ``check()`` before each snapshot (it raises to stop), ``progress(done, total)`` after each."""
    chosen = choose_snapshots(source, indices)
    target_ids = shared_target(source, text, "final", None, options)
    traces = []
    for done, index in enumerate(chosen, start=1):
        check()
        bundle = source.bundle_at(index)
        trace = decode_own(bundle, text, options)[0] if target_ids is None else decode_forced(bundle, text, target_ids, options)
        step, name = source.snapshots[index].step, snapshot_name(source, index)
        traces.append(SnapshotTrace(index, step, name, trace, target_ids is not None))
        progress(done, len(chosen))
    return traces


class CurvesController:
    """Events: ``progress(stage, done, total)`` (DECODING or MEASURING), ``ready(HeadCurves or None)``,
    ``message(text)``, ``running_changed(bool)``, ``head_chosen(kind, layer, head)`` (a phase change's head)."""

    progress = Signal(str, int, int)
    ready = Signal(object)
    message = Signal(str)
    running_changed = Signal(bool)
    head_chosen = Signal(object, int, object)

    def __init__(self, explore: ExploreController, runner: Runner, timeline: TimelineController) -> None:
        self.explore, self.runner, self.timeline = explore, runner, timeline
        self.curves: HeadCurves | None = None
        self.traces: list[SnapshotTrace] = []  # every snapshot's trace of the curves' sentence
        self.traces_of: tuple[str, DecodingOptions] | None = None  # the sentence and options they decode
        self.shown = False  # whether the curves view is shown: the curves then follow the sentence on their own
        self._asked: tuple[str, DecodingOptions] | None = None  # the sentence and options of the last run started
        timeline.opened.connect(self._on_opened)
        explore.trace_changed.connect(lambda _trace: self.follow())

    @property
    def running(self) -> bool:
        return self.runner.is_running(CURVES_CHANNEL)

    def unavailable(self) -> str:
        """Why no curves can be computed now ('' when they can)."""
        if self.timeline.source is None:
            return "This model has no timeline of its training: train it with one recorded to watch it learn."
        if not self.explore.text.strip():
            return "Type a sentence: every snapshot decodes it."
        return ""

    def options(self) -> DecodingOptions:
        """The decoding options of the curves and figures over training: the window's, every head in."""
        return replace(self.explore.options, masked_heads=())

    def cached_traces(self, text: str, options: DecodingOptions) -> list[SnapshotTrace] | None:
        """Every snapshot's trace of ``text`` with ``options`` when the last curves decoded it, else None."""
        return list(self.traces) if self.traces and self.traces_of == (text, options) else None

    def compute(self, importance_pairs: int = 0, aer_pairs: int = CURVE_AER_PAIRS) -> bool:
        """Measure the curves in a job (a run under way gives way); False, with a message, when they cannot be."""
        why = self.unavailable()
        if why or self.timeline.source is None:
            self.message.emit(why)
            return False
        if importance_pairs < 0 or aer_pairs < 0:
            self.message.emit("The pairs AER and importance are measured on must be 0 (none) or more.")
            return False
        source, text, options = self.timeline.source, self.explore.text, self.options()
        self._asked = (text, options)
        curve_options = CurveOptions(aer_pairs=aer_pairs, importance_pairs=importance_pairs)
        cached = self.cached_traces(text, options)

        def work(job: Job) -> tuple[list[SnapshotTrace], HeadCurves]:
            def measured(done: int, total: int) -> None:
                job.check()
                job.progress(MEASURING, done, total)

            traces = cached or decode_all(source, text, options, job.check, lambda done, total: job.progress(DECODING, done, total))
            return traces, head_curves(source, traces, curve_options, measured)

        def done(result: tuple[list[SnapshotTrace], HeadCurves]) -> None:
            self.traces, self.curves = result
            self.traces_of = (text, options)
            self.ready.emit(self.curves)

        self.runner.submit(
            CURVES_CHANNEL,
            work,
            on_progress=self.progress.emit,
            on_done=done,
            on_cancelled=lambda: self.message.emit("Curves over training cancelled: the curves shown are unchanged."),
            on_error=lambda text: self.message.emit(f"The curves over training could not be measured: {text}"),
            on_end=lambda: self.running_changed.emit(False),
        )
        self.running_changed.emit(True)
        return True

    def set_shown(self, shown: bool) -> None:
        """The curves view is shown (True) or not: shown, its curves follow the sentence explored."""
        self.shown = shown
        self.follow()

    def follow(self) -> None:
        """While the view is shown, measure the curves of the sentence explored (no importance) unless they are its
        already, or a run for it was started (and is under way, was cancelled or failed)."""
        if not self.shown or self.unavailable() or self.explore.stepper is None:
            return
        wanted = (self.explore.text, self.options())
        if wanted not in (self.traces_of, self._asked):
            self.compute()

    def cancel(self) -> None:
        """Stop the run before its next snapshot; the curves shown stay as they were."""
        self.runner.cancel(CURVES_CHANNEL)

    def go_to_change(self, position: int) -> None:
        """Phase change ``position`` (in the list, from 0): its later snapshot explored, its earlier one compared with
        it (as a difference unless snapshots are side by side), its first head selected."""
        curves = self.curves
        if curves is None or not 0 <= position < len(curves.phase_changes):
            return
        change = curves.phase_changes[position]
        timeline = self.timeline
        timeline.move(change.after)
        timeline.compare_with(change.before, SIDE_BY_SIDE if timeline.mode == SIDE_BY_SIDE else DIFFERENCE)
        layer, head = change.heads[0]
        self.explore.choose_view(kind=change.kind, layer=layer, head=head)  # the user's own path: the boxes say it too
        self.head_chosen.emit(change.kind, layer, head)
        self.message.emit(f"Phase change {change.describe()}")

    def _on_opened(self, _source: SnapshotSource | None) -> None:
        """Another timeline (or none): the run under way is dropped and the curves cleared."""
        if self.runner.cancel(CURVES_CHANNEL, drop=True):
            self.running_changed.emit(False)
        self.curves, self.traces, self.traces_of, self._asked = None, [], None, None
        self.ready.emit(None)
        self.follow()
