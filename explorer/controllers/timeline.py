"""The opened model's timeline in the window (issue 29): its snapshots explored one at a time, played through, and
compared two by two. No Qt: the timeline bar (explorer/widgets/timeline_bar.py) shows what this emits.

- A model opened (or trained) is asked for its timeline through the core's one function, ``timeline_for``
  (model/timeline/source.py), in a job of the "timeline-open" channel (it may read a file); one it has but cannot
  use is a message, and the model is shown without it. Tests give ``find`` a source of their own.
- ``move(index)`` explores a snapshot: its model is loaded (``bundle_at``; the last few are kept) and the sentence
  decoded with it, with the Explore controller's options, heads knocked out and step, in a job of the
  "timeline-snapshot" channel, so that a newer position supersedes one still computing. Then the Explore controller
  explores it (``show_snapshot``) and every view follows, the snapshot named in titles and captions. The last
  snapshot is the model as opened: it is shown itself, not a copy. With ``same_output`` (the default) every snapshot
  is made to write the output explored (the last decoding to its end of the sentence: the model's own translation,
  unless the user forced tokens), so that the step is kept, the views compare like with like and the candidates
  show what each snapshot would have chosen instead; stepping on from a step before the end, it writes its own. An
  early snapshot left to write on its own often stops at once, with no attention to show.
- ``play``, ``pause`` and ``advance``: while playing, the bar's timer calls ``advance`` (once a second): the next
  snapshot once the last one is shown; at the end it stops, or starts again from the first with ``loop``.
- ``compare_with(index, mode)``: a second snapshot, loaded in a job of the "timeline-partner" channel. As a
  ``DIFFERENCE``, the focus and the grid show the explored snapshot minus it, both reading the same output: it is
  decoded forced along the explored decoding's tokens (``partner``); ``SIDE_BY_SIDE``, it goes beside the explored
  one in the side-by-side view (explorer/controllers/compare.py), showing the head chosen for the opened model.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from psygnal import Signal

from explorer.controllers.background import model_name, with_job_template
from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Job, Runner
from model.decoding.stepper import DecodingOptions, Stepper
from model.decoding.trace import Trace
from model.family import Bundle
from model.timeline.source import SnapshotRecord, SnapshotSource, TimelineError, snapshot_name, timeline_for
from model.timeline.traces import decode_forced, forced_stepper

OPEN_CHANNEL, SNAPSHOT_CHANNEL, PARTNER_CHANNEL = "timeline-open", "timeline-snapshot", "timeline-partner"
KEPT_BUNDLES = 3  # snapshots' models kept loaded (moving back and forth between them decodes at once)
PLAY_SECONDS = 1.0  # each snapshot on screen while playing
DIFFERENCE, SIDE_BY_SIDE = "difference", "side by side"
MODES = (DIFFERENCE, SIDE_BY_SIDE)


def describe_record(record: SnapshotRecord) -> str:
    """'training loss 2.314 · validation: bleu 12.3, exact_match 0.05': what is known of a snapshot's training."""
    loss = record.train_loss
    parts = [f"training loss {loss:.3f}" if isinstance(loss, (int, float)) and math.isfinite(loss) else "no training loss yet"]
    scores = [
        f"{name} {_score(value)}"
        for name, value in (record.validation or {}).items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ]
    parts.append(f"validation: {', '.join(scores)}" if scores else "no validation at this step")
    return " · ".join(parts)


def _score(value: float) -> str:
    """A validation score as people write it: a count in full ('2,000'), anything else to 3 significant digits."""
    return f"{int(value):,}" if float(value).is_integer() and abs(value) >= 1000 else f"{value:.3g}"


def symmetric_levels(values: np.ndarray) -> tuple[float, float]:
    """Colour limits (-m, m) centred at 0, m the largest |value| (1 when every value is 0): a difference's scale."""
    finite = np.abs(values[np.isfinite(values)])
    largest = float(finite.max()) if finite.size else 0.0
    return (-largest, largest) if largest > 0 else (-1.0, 1.0)


def decode_snapshot(
    bundle: Bundle, text: str, options: DecodingOptions, step: int | None, output: tuple[list[int], list[bool]] | None = None
) -> tuple[Stepper, int]:
    """(``text`` decoded by ``bundle`` at ``step``, or at its end when None; the decoding's length to its end).
    ``output``: (token ids, which the user forced): the tokens it is made to write (only the user's are marked
    forced), else its own."""
    if output is None:
        stepper = Stepper(bundle, text, options)
        stepper.run()
    else:
        ids, marks = output
        stepper = forced_stepper(bundle, text, ids, options)
        given = len(stepper.given)
        for position, made in enumerate(stepper.steps[given:], start=given):
            made.forced = position < len(marks) and marks[position]  # marked only where the user had forced it
    total = len(stepper.steps)
    if step is not None:
        stepper.jump(step)
    return stepper, total


class SideBySide(Protocol):
    """What the timeline drives of the side-by-side view's controller (explorer/controllers/compare.py, given by the
    window): a snapshot put beside the explored model, made to write its output or not."""

    bundle: Bundle | None
    stepper: Stepper | None
    forced_stepper: Stepper | None
    same_output: bool

    def set_model(self, bundle: Bundle, name: str = "", like: Bundle | None = None, same_output: bool = False) -> bool: ...

    def clear(self) -> None: ...


class TimelineController:
    """Events: ``opened(source or None)`` (a timeline to show, or none), ``moved(index)`` (the slider's snapshot, at
    once), ``shown(index)`` (its decoding is explored now), ``playing_changed(bool)``, ``compare_changed(index or
    None, mode)`` (the second snapshot is ready, or gone), ``message(text)``, ``running_changed(bool)``."""

    opened = Signal(object)
    moved = Signal(int)
    shown = Signal(int)
    playing_changed = Signal(bool)
    compare_changed = Signal(object, str)
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner, compare: SideBySide) -> None:
        self.explore, self.runner, self.compare = explore, runner, compare
        self.find: Callable[[Bundle], SnapshotSource | None] = timeline_for  # tests give a source of their own
        self.source: SnapshotSource | None = None
        self.index = 0  # the snapshot at the slider (from 0)
        self.playing = False
        self.loop = False  # at the end of play: start again (True) or stop
        self.same_output = True  # every snapshot made to write the output explored (False: each writes its own)
        self._output: tuple[str, list[int], list[bool]] | None = None  # the sentence's last decoding to its end
        self.compare_index: int | None = None
        self.mode = DIFFERENCE
        self.partner_bundle: Bundle | None = None  # the compared snapshot's model, once loaded
        self._bundles: OrderedDict[int, Bundle] = OrderedDict()  # the last snapshots' models
        self._partner: tuple[Trace, Trace | None] | None = None  # (the explored trace, its compared snapshot's)
        self._beside: Bundle | None = None  # the snapshot this controller put in the side-by-side view
        self._was_running = False
        explore.model_changed.connect(self._on_model_changed)
        explore.trace_changed.connect(self._on_trace_changed)

    # --- the timeline ----------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return len(self.source.snapshots) if self.source is not None else 0

    @property
    def last(self) -> int:
        return self.count - 1

    @property
    def running(self) -> bool:
        return any(self.runner.is_running(channel) for channel in (OPEN_CHANNEL, SNAPSHOT_CHANNEL, PARTNER_CHANNEL))

    def _set_running(self) -> None:
        if self.running != self._was_running:
            self._was_running = self.running
            self.running_changed.emit(self.running)

    def _on_trace_changed(self, trace: Trace | None) -> None:
        """A decoding at its end is the output every snapshot is made to write."""
        stepper = self.explore.stepper
        if trace is not None and stepper is not None and stepper.finished:
            self._output = (self.explore.text, stepper.target_ids(), [bool(flag) for flag in trace.forced])

    def output(self, text: str) -> tuple[list[int], list[bool]] | None:
        """(token ids, forced by the user) a snapshot is made to write for ``text``; None: its own."""
        stepper = self.explore.stepper
        if not self.same_output or stepper is None:
            return None
        if self._output is not None and self._output[0] == text:
            return self._output[1], self._output[2]
        trace = self.explore.trace
        return stepper.target_ids(), [bool(flag) for flag in trace.forced] if trace is not None else []

    def _on_model_changed(self, bundle: Bundle | None) -> None:
        """Another model: its timeline, if it has one, is looked for in a job."""
        for channel in (OPEN_CHANNEL, SNAPSHOT_CHANNEL, PARTNER_CHANNEL):
            self.runner.cancel(channel, drop=True)
        self.set_source(None)
        if bundle is None:
            self._set_running()
            return
        find = self.find

        def found(source: SnapshotSource | None) -> None:
            if self.explore.opened is bundle:
                self.set_source(source)

        self.runner.submit(
            OPEN_CHANNEL,
            lambda job: find(bundle),
            on_done=found,
            on_error=lambda text: self.message.emit(f"The model's timeline cannot be shown: {text}. The model opened without it."),
            on_end=self._set_running,
            joinable=False,  # a file read that never ends never holds the window's closing
        )
        self._set_running()

    def set_source(self, source: SnapshotSource | None) -> None:
        """Show ``source``, the opened model's timeline, at its last snapshot (the model as opened); None: none."""
        if source is not None and not len(source.snapshots):
            self.message.emit("The model's timeline holds no snapshots: the model opened without it.")
            source = None
        if source is None and self.source is None:
            return  # nothing shown, nothing to hide
        self.pause()
        self._leave_comparison()
        self.source, self.index, self._bundles = source, max(len(source.snapshots) - 1, 0) if source else 0, OrderedDict()
        self._output = None
        self.compare_index, self.partner_bundle, self._partner = None, None, None
        if source is not None or self.explore.snapshot:
            self.explore.name_snapshot(self.name(self.index) if source is not None else "")
        self.opened.emit(source)

    def name(self, index: int) -> str:
        """'step 1,200 of 9,000' ("" without a timeline)."""
        return snapshot_name(self.source, index) if self.source is not None else ""

    def details(self, index: int) -> str:
        """The training loss and validation scores of snapshot ``index``."""
        return describe_record(self.source.snapshots[index]) if self.source is not None else ""

    def _bundle(self, index: int) -> Bundle | None:
        """The snapshot's model when it is at hand (the model as opened at the last), else None: a job loads it."""
        if index == self.last:
            return self.explore.opened
        if index in self._bundles:
            self._bundles.move_to_end(index)
        return self._bundles.get(index)

    def _keep(self, index: int, bundle: Bundle) -> None:
        if index != self.last:
            self._bundles[index] = bundle
            self._bundles.move_to_end(index)
            while len(self._bundles) > KEPT_BUNDLES:
                self._bundles.popitem(last=False)

    # --- moving ----------------------------------------------------------------------------------
    def move(self, index: int) -> None:
        """Explore snapshot ``index``: loaded and decoded in a job (a newer move supersedes it), then shown."""
        source = self.source
        if source is None:
            return
        if not 0 <= index < self.count:
            raise TimelineError(f"snapshot {index} does not exist: this timeline has snapshots 0 to {self.last}")
        self.index = index
        self.moved.emit(index)
        bundle, name = self._bundle(index), self.name(index)
        text, options, step = self.explore.decoding_state()
        decode, output = self.explore.stepper is not None and bool(text.strip()), self.output(text)

        def work(job: Job) -> tuple[int, Bundle, Stepper | None, int]:
            loaded = bundle if bundle is not None else with_job_template(source.bundle_at(index))
            job.check()
            if not decode:
                return index, loaded, None, 0
            stepper, total = decode_snapshot(loaded, text, options, step, output)
            return index, loaded, stepper, total

        def done(result: tuple[int, Bundle, Stepper | None, int]) -> None:
            moved, loaded, stepper, total = result
            self._keep(moved, loaded)
            # An earlier snapshot made to write the output explored: the side-by-side view labels its translation forced.
            self.compare.forced_stepper = stepper if output is not None and moved != self.last else None
            self.explore.show_snapshot(loaded, name, stepper, total)
            self.shown.emit(moved)

        self.runner.submit(
            SNAPSHOT_CHANNEL,
            work,
            on_done=done,
            on_error=lambda text: self.message.emit(f"The {name} snapshot cannot be shown: {text}"),
            on_end=self._set_running,
        )
        self._set_running()

    def set_same_output(self, same: bool) -> None:
        """Make every snapshot write the output explored (True) or its own; the snapshot shown is decoded again."""
        if same != self.same_output:
            self.same_output = same
            if self._beside is not None and self.compare.bundle is self._beside:  # the snapshot beside follows
                self.compare.same_output, self.compare.stepper = same, None  # decoded again, as asked
            if self.source is not None:
                self.move(self.index)

    @property
    def moving(self) -> bool:
        """Whether a snapshot is being loaded and decoded."""
        return self.runner.is_running(SNAPSHOT_CHANNEL)

    # --- playing ---------------------------------------------------------------------------------
    def play(self) -> None:
        """Animate through the snapshots (from the first when at the last)."""
        if self.count < 2 or self.playing:
            return
        self.playing = True
        self.playing_changed.emit(True)
        if self.index == self.last:
            self.move(0)

    def pause(self) -> None:
        if self.playing:
            self.playing = False
            self.playing_changed.emit(False)

    def advance(self) -> None:
        """A tick of play: the next snapshot, once the one asked before is shown; at the end stop, or go round."""
        if not self.playing or self.moving:
            return
        if self.index < self.last:
            self.move(self.index + 1)
        elif self.loop:
            self.move(0)
        else:
            self.pause()

    # --- comparing two snapshots -------------------------------------------------------------------
    def compare_with(self, index: int | None, mode: str = DIFFERENCE) -> None:
        """Compare the explored snapshot with snapshot ``index`` (None: with none) as a ``mode`` (MODES)."""
        if mode not in MODES:
            raise TimelineError(f"snapshots are compared as one of {', '.join(MODES)}, not {mode!r}")
        self.runner.cancel(PARTNER_CHANNEL, drop=True)
        if self.mode == SIDE_BY_SIDE and mode != SIDE_BY_SIDE or index is None:
            self._leave_comparison()
        self.compare_index, self.mode, self.partner_bundle, self._partner = index, mode, None, None
        source = self.source
        if index is None or source is None:
            self.compare_index = None
            self.compare_changed.emit(None, mode)
            self._set_running()
            return
        if not 0 <= index < self.count:
            raise TimelineError(f"snapshot {index} does not exist: this timeline has snapshots 0 to {self.last}")
        bundle = self._bundle(index)
        self.runner.submit(
            PARTNER_CHANNEL,
            lambda job: (index, bundle if bundle is not None else source.bundle_at(index)),
            on_done=self._on_partner,
            on_error=lambda text: self.message.emit(f"Snapshot {index} cannot be compared: {text}"),
            on_end=self._set_running,
        )
        self._set_running()

    def _on_partner(self, result: tuple[int, Bundle]) -> None:
        index, bundle = result
        self._keep(index, bundle)
        self.partner_bundle = bundle
        opened = self.explore.opened
        if self.mode == SIDE_BY_SIDE and opened is not None:
            self._beside = bundle
            name = f"{model_name(opened)}, {self.name(index)}"
            self.compare.set_model(bundle, name=name, like=opened, same_output=self.same_output)
        self.compare_changed.emit(index, self.mode)

    def _leave_comparison(self) -> None:
        """The snapshot put beside the explored one leaves the side-by-side view."""
        if self._beside is not None and self.compare.bundle is self._beside:
            self.compare.clear()
        self._beside = None

    @property
    def differing(self) -> bool:
        """Whether the focus and the grid show a difference of two snapshots."""
        return self.mode == DIFFERENCE and self.compare_index is not None

    def partner(self, trace: Trace | None) -> Trace | None:
        """The compared snapshot's trace of the explored decoding ``trace`` (forced along its tokens, so that the two
        compare cell by cell), while a difference is shown; None otherwise, or until its model is loaded."""
        bundle, explore = self.partner_bundle, self.explore
        if not self.differing or bundle is None or trace is None or explore.stepper is None:
            return None
        if self._partner is not None and self._partner[0] is trace:
            return self._partner[1]
        text, options, _step = explore.decoding_state()
        other: Trace | None = decode_forced(bundle, text, [int(token) for token in trace.chosen_ids], options)
        same = other is not None and all(other.has(k) and other.matrix(k).shape == trace.matrix(k).shape for k in trace.kinds)
        if not same:
            self.message.emit("The two snapshots read the sentence differently: no difference to show.")
            other = None
        self._partner = (trace, other)
        return other

    def describe_comparison(self) -> str:
        """'step 9,000 of 9,000 minus step 1,200': what the difference shows ("" when none is shown)."""
        if not self.differing or self.compare_index is None:
            return ""
        return f"{self.name(self.index)} minus {self.name(self.compare_index).split(' of ')[0]}"

    def kept(self) -> dict[int, Any]:
        """The snapshots' models kept loaded (for tests: how many are held)."""
        return dict(self._bundles)
