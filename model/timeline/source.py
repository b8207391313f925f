"""What the analysis needs of a timeline: a ``SnapshotSource`` (its records and a bundle per snapshot), the name of
each snapshot in titles and captions, and the choice of snapshots a user typed.

The recorder's loader (the ``NAME.timeline.safetensors`` file, or a folder of Hugging Face checkpoints) returns an
object with these attributes; this package never imports it. ``open_timeline`` is the one place the command line
asks for a model's timeline, ``timeline_for`` the one place the window does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from model.errors import UserError
from model.family import Bundle


class TimelineError(UserError):
    """A timeline that cannot be used, or a snapshot, head or option it does not have; the message says which."""


@runtime_checkable
class SnapshotRecord(Protocol):
    """What is known of one snapshot without loading its weights."""

    # Read-only properties, so that a frozen dataclass of the loader's satisfies this as well as a plain one.
    @property
    def index(self) -> int: ...  # its place in the timeline, from 0

    @property
    def step(self) -> int: ...  # optimizer steps taken when it was kept (0: the initial weights)

    @property
    def elapsed_seconds(self) -> float: ...

    @property
    def train_loss(self) -> float: ...  # NaN when none was measured yet

    @property
    def validation(self) -> dict[str, Any] | None: ...  # the validation scores then (bleu, exact_match, ...), or None

    @property
    def label(self) -> str: ...  # how people call it: "step 1,200"


@runtime_checkable
class SnapshotSource(Protocol):
    """A timeline: its snapshots in training order, and the model as it was at each."""

    @property
    def snapshots(self) -> Sequence[SnapshotRecord]: ...

    def bundle_at(self, index: int) -> Bundle: ...


def snapshot_name(source: SnapshotSource, index: int) -> str:
    """'step 1,200 of 9,000': the snapshot's label and the last snapshot's step, for titles and captions."""
    records = source.snapshots
    record = records[index]
    label = record.label or f"step {record.step:,}"
    return f"{label} of {records[-1].step:,}"


def check_index(source: SnapshotSource, index: int, what: str = "snapshot") -> int:
    """``index`` (from 0) when the timeline has it; a TimelineError naming the range (from 0) otherwise."""
    count = len(source.snapshots)
    if not 0 <= index < count:
        raise TimelineError(f"{what} {index} does not exist: this timeline has snapshots 0 to {count - 1}")
    return index


def choose_snapshots(source: SnapshotSource, indices: Sequence[int] | None = None) -> list[int]:
    """The snapshots to analyse in timeline order, each once (all of them when ``indices`` is None)."""
    count = len(source.snapshots)
    if count == 0:
        raise TimelineError("this timeline has no snapshots")
    if indices is None:
        return list(range(count))
    chosen = sorted({check_index(source, int(index)) for index in indices})
    if not chosen:
        raise TimelineError("no snapshots chosen")
    return chosen


def open_timeline(model_name: str, device: str = "cpu") -> SnapshotSource:
    """The timeline recorded beside a model. Until the recorder's loader lands every model is refused here, with one
    line; tests give the command a source of their own (model/cli/timeline.py)."""
    raise TimelineError(f"{model_name}: this model has no timeline (train it with a timeline recorded to watch it learn)")


def timeline_for(bundle: Bundle) -> SnapshotSource | None:
    """The timeline of a model the window has opened (or just trained), or None when it has none; a TimelineError of
    one line when it has one that cannot be used (the window then says so and shows the model without it).

    The window asks this once per model opened, in a job of its runner (it may read a file), and shows a timeline bar
    when it gets a source. Its last snapshot must be the model as opened: the window shows the opened model itself
    there. Until the recorder's loader lands (the ``NAME.timeline.safetensors`` beside ``bundle.path``, a just-trained
    bundle's recording, or a folder of Hugging Face ``checkpoint-N/`` folders) no model has one."""
    return None
