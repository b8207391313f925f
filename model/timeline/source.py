"""What the analysis needs of a timeline: a ``SnapshotSource`` (its records and a bundle per snapshot), the name of
each snapshot in titles and captions, and the choice of snapshots a user typed.

The recorder's loader (model/io/timeline.py: the ``NAME.timeline.safetensors`` file, or a folder of Hugging Face
checkpoints) returns an object with these attributes, and so can a test's fake. ``open_timeline`` is the one place the
command line and the window ask for a model's timeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from model.family import Bundle
from model.io.bundle import own_bundle
from model.io.models import model_source, open_model
from model.io.snapshots import TimelineError
from model.io.timeline import find_timeline, load_timeline, timeline_from_recording


@runtime_checkable
class SnapshotRecord(Protocol):
    """What is known of one snapshot without loading its weights."""

    # Read-only properties, so that a frozen dataclass of the loader's satisfies this as well as a plain one.
    @property
    def index(self) -> int: ...  # its place in the timeline, from 0

    @property
    def step(self) -> int: ...  # optimizer steps taken when it was kept (0: the initial weights)

    @property
    def elapsed_seconds(self) -> float | None: ...  # None where it was not recorded (a Hugging Face checkpoint)

    @property
    def train_loss(self) -> float | None: ...  # None (or NaN) when none was measured yet

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
    """'step 1,200 of 9,000' ('step 9,000 of 9,000 (final)'): the snapshot's step and the last one's, for titles and captions."""
    records = source.snapshots
    record = records[index]
    label = record.label or f"step {record.step:,}"
    step, bracket, note = label.partition(" (")  # "step 5,808 (final: the weights of step 3,000)"
    return f"{step} of {records[-1].step:,}" + (f" ({note}" if bracket else "")  # the note last: titles cut at " of "


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
    """The timeline recorded beside a model (``NAME.timeline.safetensors``), or a folder of Hugging Face Trainer
    checkpoints (``checkpoint-500/``, ...); a TimelineError of one line when there is none or it cannot be used."""
    path = model_source(model_name)
    if path is None:
        raise TimelineError(f"{model_name}: a model id has no timeline; open a model file or a folder of checkpoints")
    if path.is_dir():
        return load_timeline(path)
    return load_timeline(path, open_model(model_name, device))


def timeline_for(bundle: Bundle) -> SnapshotSource | None:
    """The timeline of a model the window has opened (or just trained), or None when it has none; a TimelineError of
    one line when it has one that cannot be used (the window then says so and shows the model without it).

    The window asks this once per model opened, in a job of its runner (it may read a file), and shows a timeline bar
    when it gets a source. Its last snapshot must be the model as opened: the window shows the opened model itself
    there: a just-trained bundle's recording (in memory, saved or not), the ``NAME.timeline.safetensors`` beside
    ``bundle.path``, or the folder of Hugging Face ``checkpoint-N/`` folders the opened checkpoint is in."""
    # A trainable family's model is the app's own, in its model file (a ModelBundle, with the recording of a model just
    # trained); any other (a pretrained folder) has at most a folder of checkpoints, read without its bundle.
    own = own_bundle(bundle)
    if own is not None and own.recording is not None:
        return timeline_from_recording(own.recording, own)
    path = bundle.path
    if not path or find_timeline(path) is None:
        return None
    return load_timeline(path, own)
