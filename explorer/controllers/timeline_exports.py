"""The window's exports over training, made by the core and written atomically (model/timeline/: animation.py,
figures.py, curve_files.py), in a job of the "timeline-export" channel: an animated GIF of a head, a layer or the
grid (one frame per snapshot), the strip of small multiples (PNG, SVG, PDF), the curves as CSV or as a figure, and
the signed difference the window shows as a figure. No Qt.

What is drawn is the window's choice (``Shown``: the kind, layer and head, or a layer or every layer, and the level);
the sentence is the one explored, decoded with every snapshot forced along the final model's translation (the
curves' traces when they decoded it already). The difference figure draws the two traces the window shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psygnal import Signal

from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Job, Runner
from explorer.controllers.timeline import TimelineController
from explorer.controllers.timeline_curves import CurvesController, decode_all
from model.cli.recorded import model_reference, timeline_record
from model.decoding.trace import Trace
from model.kinds import AttentionKind
from model.provenance.embed import write_sidecar
from model.provenance.record import Record
from model.timeline.curves import CurveOptions, head_curves
from model.timeline.traces import SnapshotTrace

if TYPE_CHECKING:  # matplotlib loads with the first export
    from model.figures.attention import FigureOptions
    from model.timeline.views import Scope, ViewSpec

EXPORT_CHANNEL = "timeline-export"


@dataclass(frozen=True)
class Shown:
    """What a figure over training shows: a kind, and a head of a layer (or an aggregate), a layer's heads, or every
    layer and head (``scope``), of pieces or words."""

    kind: AttentionKind
    layer: int = 0  # from 0
    head: int | str = "mean"
    scope: Scope = "head"
    word_level: bool = False

    def view(self) -> ViewSpec:
        from model.timeline.views import ViewSpec  # deferred: matplotlib loads with the first export

        if self.scope == "grid":
            return ViewSpec(self.kind)
        return ViewSpec(self.kind, self.layer, self.head if self.scope == "head" else None)

    def leveled(self, traces: list[SnapshotTrace]) -> list[SnapshotTrace]:
        if not self.word_level:
            return traces
        return [SnapshotTrace(t.index, t.step, t.name, t.trace.word_level(), t.forced) for t in traces]


class TimelineExports:
    """Events: ``progress(done, total)`` (snapshots decoded), ``written(path)``, ``message(text)``,
    ``running_changed(bool)``."""

    progress = Signal(int, int)
    written = Signal(str)
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner, timeline: TimelineController, curves: CurvesController):
        self.explore, self.runner, self.timeline, self.curves = explore, runner, timeline, curves

    @property
    def running(self) -> bool:
        return self.runner.is_running(EXPORT_CHANNEL)

    def _traces(self) -> Callable[[Job], list[SnapshotTrace]] | None:
        """What gives every snapshot's trace of the sentence in the job (None, with a message, when nothing can)."""
        why = self.curves.unavailable()
        source = self.timeline.source
        if why or source is None:
            self.message.emit(f"Nothing to export over training: {why[0].lower()}{why[1:]}" if why else "")
            return None
        text, options = self.explore.text, self.curves.options()
        cached = self.curves.cached_traces(text, options)
        return lambda job: cached or decode_all(source, text, options, job.check, job.progress)

    def _run(self, what: str, work: Callable[[Job], Path]) -> bool:
        self.runner.submit(
            EXPORT_CHANNEL,
            work,
            on_progress=self.progress.emit,
            on_done=self._on_written,
            on_error=lambda text: self.message.emit(f"Export failed: {text}"),
            on_end=lambda: self.running_changed.emit(False),
        )
        self.running_changed.emit(True)
        self.message.emit(f"Exporting {what}…")
        return True

    def _record(self, what: str, shown: Shown, options: Any, dpi: float, diff: tuple[int, int] | None = None,
                curves_figure: bool = False) -> Record | None:  # fmt: skip
        """The ``timeline`` command of this export (model/provenance/), as the command line records it; what it cannot
        draw (words, a difference at a step before the end) named."""
        bundle = self.explore.opened
        if bundle is None:
            return None
        model = model_reference(bundle)
        layer = None if shown.scope == "grid" else shown.layer
        head = shown.head if shown.scope == "head" else None
        record = timeline_record(bundle, model, self.explore.text, what, str(shown.kind), layer, head, None, diff,
                                 curves_figure, options, dpi)  # fmt: skip
        trace = self.explore.trace
        early = diff is not None and trace is not None and trace.n_steps < self.explore.total_steps
        beyond = ["words" if shown.word_level else "", "a step before the end" if early else ""]
        if any(beyond):
            record.beyond_the_command("; ".join(part for part in beyond if part))
        return record

    def _on_written(self, path: Path) -> None:
        self.message.emit(f"Exported {path}")
        self.written.emit(path)

    def animation(self, path: str | Path, shown: Shown, options: FigureOptions | None = None, dpi: float = 100) -> bool:
        """An animated GIF of ``shown``, one frame per snapshot."""
        traces = self._traces()
        if traces is None:
            return False
        record = self._record("gif", shown, options, dpi)

        def work(job: Job) -> Path:
            from model.timeline.animation import save_gif  # deferred: matplotlib loads with the first export

            written = save_gif(shown.leveled(traces(job)), shown.view(), path, options, dpi)
            write_sidecar(written, record)  # a GIF keeps its record beside it, as the command's
            return written

        return self._run("the animation over training", work)

    def strip(self, path: str | Path, shown: Shown, options: FigureOptions | None = None, dpi: float = 300) -> bool:
        """The strip of small multiples (every snapshot in a row) as PNG, SVG or PDF."""
        traces = self._traces()
        if traces is None:
            return False
        record = self._record("strip", shown, options, dpi)

        def work(job: Job) -> Path:
            from model.figures.saving import save_figure  # deferred: matplotlib loads with the first export
            from model.timeline.figures import snapshot_strip

            return save_figure(snapshot_strip(shown.leveled(traces(job)), shown.view(), options), path, dpi, record)

        return self._run("the strip over training", work)

    def curves_file(self, path: str | Path, width: float = 6.9, dpi: float = 200) -> bool:
        """The curves as CSV (by the suffix) or as a figure: the ones shown, else measured now (without importance)."""
        traces, curves, source = self._traces(), self.curves.curves, self.timeline.source
        if traces is None or source is None:
            return False
        csv = Path(path).suffix.lower() == ".csv"
        shown = Shown(self.explore.view.kind, scope="grid")  # the curves are every head's
        record = self._record("curves", shown, None, dpi, curves_figure=not csv)
        if record is not None:
            record.beyond_the_command("the curves shown (their AER pairs and importance)" if curves else "")

        def work(job: Job) -> Path:
            from model.timeline.curve_files import save_curves_csv, save_curves_figure  # deferred: matplotlib

            measured = curves or head_curves(source, traces(job), CurveOptions(), lambda done, total: job.check())
            if csv:
                written = save_curves_csv(measured, path)
                write_sidecar(written, record)
                return written
            return save_curves_figure(measured, path, width, dpi, record)

        return self._run("the curves over training", work)

    def difference(self, path: str | Path, pair: tuple[Trace, Trace], shown: Shown, options: Any = None, dpi: float = 300) -> bool:
        """The signed difference the window shows, (compared snapshot's trace, explored one's) as a figure."""
        timeline = self.timeline
        if not timeline.differing or timeline.compare_index is None:
            self.message.emit("Export failed: choose a snapshot to compare with first (the timeline bar's “Compare with”).")
            return False
        before_index, after_index = timeline.compare_index, timeline.index
        before = SnapshotTrace(before_index, 0, timeline.name(before_index), pair[0], True)
        after = SnapshotTrace(after_index, 0, timeline.name(after_index), pair[1], False)

        record = self._record("diff", shown, options, dpi, diff=(before_index, after_index))

        def work(job: Job) -> Path:
            from model.figures.saving import save_figure  # deferred: matplotlib loads with the first export
            from model.timeline.figures import difference_figure

            return save_figure(difference_figure(before, after, shown.view(), options), path, dpi, record)

        return self._run("the difference of two snapshots", work)
