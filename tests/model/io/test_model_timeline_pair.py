"""Issue 39, item 11: a model file and its timeline are written as a pair, both or neither (model/io/pair.py).

Before, the model was renamed into place and its timeline written after it: a file-size limit that the model fitted and
its timeline did not (``ulimit -f``) saved the model beside the old model's timeline and exited 1; a kill just after the
model's rename did the same. Now a failure while either is written leaves the old pair byte for byte; a failure or a
kill between the two renames is finished by the next reader (the old pair back, or the new one completed); no backup,
journal or temporary file stays behind.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import model.files
import model.io.pair as pair
from model.io import checkpoint
from model.io.checkpoint import CheckpointError
from model.io.shipped import resolve_model
from model.io.timeline import find_timeline, load_timeline, timeline_path
from tests.model.timeline.helpers import record

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 1_000_000  # bytes: the tiny model below (~0.6 MB) fits, its timeline (~1.9 MB) does not
TRAIN = (
    "--corpus copy --layers 1 --d-model 64 --heads 2 --d-ff 128 --vocab-size 40 --corpus-size 300 --max-steps 40 "
    "--valid-decode 5 --quiet --timeline 12"
).split()


@pytest.fixture
def old_pair(tmp_path) -> tuple[Path, bytes, bytes]:
    """A model and its timeline in a folder of their own: (the model's path, its bytes, its timeline's bytes)."""
    path = tmp_path / "m.safetensors"
    shutil.copyfile(resolve_model("copy"), path)
    shutil.copyfile(resolve_model("copy").with_name("copy.timeline.safetensors"), timeline_path(path))
    return path, path.read_bytes(), timeline_path(path).read_bytes()


def _same_pair(path: Path, model_bytes: bytes, timeline_bytes: bytes) -> None:
    assert path.read_bytes() == model_bytes and timeline_path(path).read_bytes() == timeline_bytes
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, timeline_path(path).name]  # nothing left over


def _limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_size_limit_the_model_fits_and_its_timeline_does_not_keeps_the_model_alone(old_pair):
    """The pair is not written; the trained model is then saved alone and the old model's timeline removed, so no
    model stands beside another's timeline and the training run is not lost."""
    path, model_bytes, timeline_bytes = old_pair
    done = subprocess.run(
        [sys.executable, "-m", "model", "train", *TRAIN, "--out", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "larger than this system allows" in done.stderr
    assert "saved the model without its timeline" in done.stderr
    assert path.read_bytes() != model_bytes and path.stat().st_size > 0  # the new model
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no timeline of another model, nothing left over


def test_a_failure_while_the_timeline_is_written_saves_neither(old_pair, monkeypatch):
    path, model_bytes, timeline_bytes = old_pair
    bundle = record(6, snapshots=3).bundle
    original = pair._write

    def failing(temporary: Path, data: bytes) -> None:
        if ".timeline." in temporary.name:
            raise OSError(28, "No space left on device")
        original(temporary, data)

    monkeypatch.setattr(pair, "_write", failing)
    with pytest.raises(CheckpointError, match="the disk is full.*m.safetensors was not saved either"):
        checkpoint.save(bundle, path)
    _same_pair(path, model_bytes, timeline_bytes)


def fail_the_models_rename(monkeypatch, path: Path) -> None:
    """The rename onto the model file ``path`` fails (an I/O error); every other rename happens."""
    replace = os.replace

    def failing_for_the_model(source, destination):
        if Path(destination) == path:
            raise OSError(5, "Input/output error")
        replace(source, destination)

    monkeypatch.setattr(model.files.os, "replace", failing_for_the_model)


def test_a_failure_between_the_two_renames_puts_the_old_pair_back(old_pair, monkeypatch):
    path, model_bytes, timeline_bytes = old_pair
    bundle = record(6, snapshots=3).bundle
    fail_the_models_rename(monkeypatch, path)
    with pytest.raises(CheckpointError, match="m.safetensors: cannot be written"):
        checkpoint.save(bundle, path)
    monkeypatch.undo()
    _same_pair(path, model_bytes, timeline_bytes)
    checkpoint.save(bundle, path)  # and then it saves, the pair together
    assert len(load_timeline(path, checkpoint.load(path))) == 3


KILLED_SAVE = """
import os, sys
from pathlib import Path
import model.files
from model.io import checkpoint
from tests.model.timeline.helpers import record

path, when = Path(sys.argv[1]), sys.argv[2]
replace = os.replace

def killed(source, destination):
    if when == "before" and Path(destination) == path:
        os._exit(9)  # killed between the timeline's rename and the model's
    replace(source, destination)
    if when == "after" and Path(destination) == path:
        os._exit(9)  # killed just after the model's rename, before the backup and the journal go

model.files.os.replace = killed
checkpoint.save(record(6, snapshots=3).bundle, path)
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_kill_between_or_after_the_renames_is_finished_by_the_next_reader(old_pair, when):
    path, model_bytes, timeline_bytes = old_pair
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_SAVE), str(path), when], cwd=ROOT, timeout=300)
    assert done.returncode == 9
    assert pair.journal_of(path).is_file()  # the journal marks the save that did not finish
    assert find_timeline(path) == timeline_path(path)  # a reader finishes it first
    assert not pair.journal_of(path).exists() and not pair.backup_of(path).exists()
    if when == "before":
        _same_pair(path, model_bytes, timeline_bytes)  # the old model with its own timeline
    else:
        bundle = checkpoint.load(path)  # the new model with its new timeline
        assert path.read_bytes() != model_bytes and len(load_timeline(path, bundle)) == 3
    checkpoint.save(checkpoint.load(path), path)  # the next save tidies the killed writer's temporary files
    assert not [p.name for p in path.parent.iterdir() if p.name.startswith(".")]


def test_a_model_with_no_timeline_replacing_one_that_had_it_leaves_no_timeline_of_another(old_pair, monkeypatch):
    """Saving a model with no timeline over one that had a timeline removes it, as a pair too: a failure of the model's
    rename puts it back."""
    path, model_bytes, timeline_bytes = old_pair
    bundle = record(6, snapshots=3).bundle
    bundle.recording = None
    fail_the_models_rename(monkeypatch, path)
    with pytest.raises(CheckpointError):
        checkpoint.save(bundle, path)
    monkeypatch.undo()
    _same_pair(path, model_bytes, timeline_bytes)
    checkpoint.save(bundle, path)
    assert find_timeline(path) is None and sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_journal_of_a_live_writer_is_left_alone(old_pair):
    path, _, _ = old_pair
    journal = pair.journal_of(path)
    journal.write_text('{"pid": 1, "new_model": "x", "backup": null}')  # process 1 runs: a save in progress
    pair.settle(path)
    assert journal.exists()
    journal.write_text("not json")  # not one the app wrote: removed
    pair.settle(path)
    assert not journal.exists()
