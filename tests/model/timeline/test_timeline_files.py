"""Timeline files that are damaged, of another model, of a newer format or not timelines at all: each is refused with
one clear line (a TimelineError), and the model beside it still opens; saving writes, replaces and tidies timelines;
the compact int8 storage restores within its rounding."""

from __future__ import annotations

import json
import random
import shutil
import struct

import pytest
import torch

from model.cli.commands import main
from model.io import checkpoint
from model.io.models import open_model
from model.io.snapshots import Recording, Snapshot, TimelineError
from model.io.timeline import find_timeline, load_timeline, save_timeline, timeline_from_recording, timeline_path
from tests.model.timeline.helpers import record


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(model path, its timeline's bytes, another model's timeline's bytes)."""
    folder = tmp_path_factory.mktemp("timelines")
    path = checkpoint.save(record(12, snapshots=4).bundle, folder / "model.safetensors")
    other = checkpoint.save(record(12, snapshots=4, seed=1).bundle, folder / "other.safetensors")
    return path, timeline_path(path).read_bytes(), timeline_path(other).read_bytes()


def _split(data: bytes) -> tuple[dict, bytes]:
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size]), data[8 + size :]


def _with_format(data: bytes, found: str) -> bytes:
    header, body = _split(data)
    header["__metadata__"]["format"] = found
    raw = json.dumps(header).encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw + body


def _flip(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1 :]


def _bad_files(good: bytes, other: bytes, model_file: bytes) -> dict[str, tuple[bytes, str]]:
    (header_size,) = struct.unpack("<Q", good[:8])
    loss = good.index(b"train_loss") + len(b'train_loss\\": ') + 2  # a digit of a record's training loss
    return {
        "truncated": (good[:-100], "truncated"),
        "cut in half": (good[: len(good) // 2], "truncated"),
        "too short": (good[:5], "too short"),
        "empty": (b"", "empty"),
        "a flipped weight byte": (_flip(good, 8 + header_size + (len(good) - header_size) // 2), "checksum"),
        "a flipped record byte": (good[:loss] + (b"7" if good[loss : loss + 1] != b"7" else b"6") + good[loss + 1 :], "checksum"),
        "another model's": (other, "another model"),
        "a newer version": (_with_format(good, "transformer-explorer-timeline/2"), "newer version"),
        "a model file": (model_file, "a model file, not a timeline"),
        "not safetensors": (b"step,loss\n1,2.5\n" * 20, "not a timeline file"),
        "another safetensors file": (_with_format(good, "pt"), "not a Transformer Explorer timeline"),
    }


def test_every_bad_timeline_is_one_clear_line_and_the_model_still_opens(saved, tmp_path, capsys):
    path, good, other = saved
    model = tmp_path / "model.safetensors"
    shutil.copyfile(path, model)
    for what, (data, expected) in _bad_files(good, other, path.read_bytes()).items():
        timeline_path(model).write_bytes(data)
        assert find_timeline(model) == timeline_path(model)
        bundle = checkpoint.load(model)  # the model opens whatever lies beside it
        with pytest.raises(TimelineError) as refused:
            load_timeline(model, bundle)
        message = str(refused.value)
        assert expected in message and "\n" not in message and message.startswith(str(timeline_path(model))), (what, message)
        assert open_model(str(model)).model.parameter_count() == bundle.model.parameter_count()
    assert main(["translate", "--model", str(model), "a b c"]) == 0  # the command line opens it too
    capsys.readouterr()
    timeline_path(model).unlink()
    timeline_path(model).mkdir()
    with pytest.raises(TimelineError, match="is a folder"):
        load_timeline(model, checkpoint.load(model))
    with pytest.raises(TimelineError, match="has no timeline"):
        load_timeline(tmp_path / "other.safetensors", checkpoint.load(model))


def test_any_flipped_byte_is_refused(saved, tmp_path):
    path, good, _ = saved
    model = tmp_path / "model.safetensors"
    shutil.copyfile(path, model)
    bundle = checkpoint.load(model)
    for position in random.Random(0).sample(range(len(good)), 60) + list(range(8)):
        timeline_path(model).write_bytes(_flip(good, position))
        with pytest.raises(TimelineError):
            load_timeline(model, bundle)


def test_saving_writes_replaces_and_tidies_the_timeline_beside(saved, tmp_path):
    path, _, other = saved
    bundle = checkpoint.load(path)
    target = tmp_path / "m.safetensors"
    timeline_path(target).write_bytes(other)  # left by the model the file held before
    checkpoint.save(bundle, target)  # the other model's timeline is replaced by this model's own (Save as keeps it)
    assert timeline_path(target).read_bytes() == timeline_path(path).read_bytes()
    timeline_path(target).write_bytes(other)
    bundle.path = None  # a model with no timeline anywhere: the other model's timeline goes
    checkpoint.save(bundle, target)
    assert not timeline_path(target).exists()
    shutil.copyfile(timeline_path(path), timeline_path(target))
    checkpoint.save(bundle, target)  # the same weights again: their timeline stays
    assert len(load_timeline(target, checkpoint.load(target))) == 4
    trained = record(6, snapshots=3).bundle
    assert [s.step for s in timeline_from_recording(trained.recording, trained).snapshots] == [0, 1, 6]  # before saving
    timeline_path(target).unlink()
    timeline_path(target).mkdir()  # the timeline cannot be written: nor is the model (a pair: both or neither)
    before = target.read_bytes()
    with pytest.raises(checkpoint.CheckpointError, match="is a folder; .*m.safetensors was not saved either"):
        checkpoint.save(trained, target)
    assert target.read_bytes() == before


def test_int8_storage_halves_the_file_and_restores_within_its_rounding(tmp_path):
    half = record(12, snapshots=4).bundle
    compact = record(12, snapshots=4, storage="int8").bundle  # the same run (seed, threads): the same weights
    sizes = {}
    for name, bundle in (("half", half), ("compact", compact)):
        sizes[name] = timeline_path(checkpoint.save(bundle, tmp_path / f"{name}.safetensors")).stat().st_size
    assert sizes["compact"] < 0.75 * sizes["half"]
    timeline = load_timeline(tmp_path / "compact.safetensors", checkpoint.load(tmp_path / "compact.safetensors"))
    assert timeline.storage == "int8"
    shapes = {name: p.shape for name, p in compact.model.named_parameters()}
    for snapshot in timeline.snapshots[:-1]:
        original = compact.recording.named_weights(snapshot.index, shapes)
        restored = dict(timeline.bundle_at(snapshot.index).model.named_parameters())
        for name, weights in original.items():
            rows = weights.float().reshape(-1, weights.shape[-1]) if weights.dim() > 1 else weights.float()[None]
            step = rows.abs().amax(dim=1, keepdim=True) / 127 * 0.51 + 1e-6  # half an int8 step of its row
            error = (restored[name].detach().reshape(rows.shape) - rows).abs()
            assert (error <= step).all(), name
    assert torch.equal(next(timeline.bundle_at(-1).model.parameters()), next(compact.model.parameters()))


def test_records_that_contradict_themselves_are_refused_even_with_a_valid_checksum(saved, tmp_path):
    path, _, _ = saved
    bundle = checkpoint.load(path)
    model = tmp_path / "model.safetensors"
    shutil.copyfile(path, model)
    size = sum(p.numel() for p in bundle.model.parameters())
    names = [name for name, _ in bundle.model.named_parameters()]
    for steps, finals, message in (
        ((0, 9, 5), (False, False, True), "snapshot 2's record is malformed"),  # steps going back
        ((0, 5, 9), (False, True, True), "snapshot 1's record is malformed"),  # two final models
    ):
        snapshots = [Snapshot(i, step, 0.0, 1.0, final=last, from_model=last) for i, (step, last) in enumerate(zip(steps, finals))]
        weights = [None if s.from_model else torch.zeros(size, dtype=torch.float16) for s in snapshots]
        save_timeline(Recording(snapshots, weights, names), bundle, timeline_path(model))
        with pytest.raises(TimelineError, match=message):
            load_timeline(model, checkpoint.load(model))


def test_save_as_keeps_the_timeline_of_the_file_the_model_came_from(saved, tmp_path):
    """A model opened with its timeline and saved under another name (the window's Save as) takes its timeline along;
    the original stays as it was. Saved again after its weights changed, the copy is not made (it would not match)."""
    path, original, _other = saved
    assert timeline_path(path).read_bytes() == original
    bundle = checkpoint.load(path)
    copy = checkpoint.save(bundle, tmp_path / "renamed.safetensors")
    assert timeline_path(copy).read_bytes() == original == timeline_path(path).read_bytes()
    assert len(load_timeline(copy, checkpoint.load(copy))) == len(load_timeline(path, checkpoint.load(path)))
    with torch.no_grad():
        next(bundle.model.parameters()).add_(1.0)
    changed = checkpoint.save(bundle, tmp_path / "changed.safetensors")
    assert find_timeline(changed) is None
