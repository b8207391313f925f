"""Recording while training: the snapshot schedule is log-spaced and bounded, a snapshot restored from the timeline
file gives the same trace as a model trained to its step (same seed, same thread count), the last snapshot is the
final model itself, and every family records."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest
import torch

from model.decoding.stepper import DecodingOptions, Stepper
from model.io import checkpoint
from model.io.timeline import load_timeline, timeline_path
from model.training.evaluation import Scores
from model.training.recording import GROWTH, VALIDATION_WEIGHT, Recorder, TimelineOptions, thin
from model.training.trainer import Progress, TrainingOptionsError, Validation
from tests.model.timeline.helpers import FAMILY_RUNS, record

K = 20  # the step compared: a validation (valid_every) of the longer run, so it is recorded whatever the series


def _progress(step: int) -> Progress:
    return Progress(step, 1, 1.0 / step, 0.5, 1e-3, 100.0, 0.0, 0.5, step * 0.01)


def _validation(step: int, best: bool = False) -> Validation:
    return Validation(1, step, Scores(0.5, 10.0, 0.6, 1.5, 8), best)


def test_thinning_keeps_the_ends_and_spreads_the_rest_evenly_on_a_log_scale():
    steps = list(range(0, 10_001))
    kept = thin(steps, [step % 1000 == 0 and step > 0 for step in steps], 12)
    assert len(kept) == 12 and kept[0] == 0 and kept[-1] == 10_000
    gaps = np.diff(np.log1p([steps[i] for i in kept]))
    assert gaps.max() < 4 * gaps.min()  # no crowding: every gap within a small factor of the others
    assert thin([0, 5, 9], [False] * 3, 2) == [0, 2] and thin([3], [False], 5) == [0]


def test_thinning_removes_what_the_plain_greedy_search_removes():
    """The heap's order is the plain search's: every time the smallest weighted gap, the earliest of equals."""

    def by_hand(steps, validated, keep):
        kept = list(range(len(steps)))
        while len(kept) > max(keep, 2):
            costs = [
                (math.log1p(steps[kept[j + 1]]) - math.log1p(steps[kept[j - 1]])) * (VALIDATION_WEIGHT if validated[kept[j]] else 1)
                for j in range(1, len(kept) - 1)
            ]
            del kept[1 + costs.index(min(costs))]
        return kept

    generator = random.Random(1)
    for _ in range(200):
        steps = sorted(generator.sample(range(500), generator.randint(1, 60)))
        validated = [generator.random() < 0.3 for _ in steps]
        keep = generator.randint(2, 12)
        assert thin(steps, validated, keep) == by_hand(steps, validated, keep)
    assert thin([0, 10, 20, 30], [False] * 4, 3) == by_hand([0, 10, 20, 30], [False] * 4, 3)  # equal gaps: the earliest


def test_the_recorder_copies_at_a_geometric_series_holds_at_most_n_and_ends_with_the_model():
    weights = torch.zeros(6)
    recorder = Recorder(TimelineOptions(5), ["a", "b"])
    recorder.start(lambda: weights)
    copied = [0]
    for step in range(1, 401):
        weights.fill_(step)
        recorder.on_progress(_progress(step))
        if recorder.snapshots[-1].step == step:
            copied.append(step)
        if step % 100 == 0:
            recorder.on_validation(_validation(step, best=step == 200))
        assert len(recorder.weights) <= 5
    assert copied[:8] == [0, 1, 2, 3, 4, 5, 7, 9] and all(b >= a * GROWTH - 1 for a, b in zip(copied[1:], copied[2:]))
    assert len(copied) < 40  # a few dozen copies in 400 steps, not one per step
    recording = recorder.finish(kept_step=200)
    snapshots = recording.snapshots
    assert len(snapshots) <= 5 and snapshots[0].step == 0 and [s.index for s in snapshots] == list(range(len(snapshots)))
    final = snapshots[-1]
    assert final.final and final.from_model and final.step == 400 and final.kept_step == 200
    assert final.validation is not None and final.validation["best"] and final.label == "step 400 (final: the weights of step 200)"
    for snapshot, stored in zip(snapshots, recording.weights):
        assert (stored is None) == snapshot.from_model
        if stored is not None:  # each copy holds the weights of its own step
            assert stored.dtype == torch.float16 and float(stored[0]) == snapshot.step
    kept = [s for s in snapshots if s.step == 200]
    assert not kept or kept[0].from_model  # the kept validation's weights are the model's: not stored twice


def test_options_out_of_range_are_refused_with_the_setting_named():
    for options in (TimelineOptions(1), TimelineOptions(-3), TimelineOptions(4, "bfloat16")):
        with pytest.raises(TrainingOptionsError, match="timeline"):
            options.validate()
    TimelineOptions(0).validate()  # off


@pytest.fixture(scope="module")
def long_run():
    """A tiny copy model trained 40 steps, validated every K, every snapshot kept (none thinned)."""
    return record(2 * K, snapshots=100, valid_every=K).bundle


def _trace(bundle, text: str = "a b c d e f"):
    stepper = Stepper(bundle, text, DecodingOptions(max_steps=8))
    stepper.run()
    return stepper.trace()


def test_a_restored_snapshot_traces_as_the_model_trained_to_its_step(long_run, tmp_path):
    path = checkpoint.save(long_run, tmp_path / "long.safetensors")
    timeline = load_timeline(path, checkpoint.load(path))
    at_k = [s for s in timeline.snapshots if s.step == K]
    assert len(at_k) == 1 and at_k[0].validation is not None and not at_k[0].from_model
    restored = timeline.bundle_at(at_k[0].index)
    trained = record(K, snapshots=100, valid_every=K).bundle  # the same seed and thread count, stopped at K
    for (name, mine), theirs in zip(restored.model.named_parameters(), trained.model.parameters()):
        rounding = theirs.detach().abs() * 2**-11 + 1e-7  # half precision: 11 significant bits
        assert ((mine.detach() - theirs.detach()).abs() <= rounding).all(), name
    ours, reference = _trace(restored), _trace(trained)
    assert ours.target_tokens == reference.target_tokens
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_allclose(getattr(ours, kind), getattr(reference, kind), atol=2e-3, err_msg=kind)
    first = timeline.bundle_at(0)  # step 0: the weights before training, far from those of step K
    assert max((a - b).abs().max().item() for a, b in zip(first.model.parameters(), trained.model.parameters())) > 1e-2


def test_the_last_snapshot_is_the_final_model_itself(long_run, tmp_path):
    path = checkpoint.save(long_run, tmp_path / "final.safetensors")
    loaded = checkpoint.load(path)
    timeline = load_timeline(path, loaded)
    last = timeline.snapshots[-1]
    assert last.final and last.from_model and last.step == 2 * K and last.validation is not None
    final = timeline.bundle_at(-1)
    for mine, theirs in zip(final.model.parameters(), loaded.model.parameters()):
        assert torch.equal(mine, theirs)  # exact: read from the model file, not stored twice
    stored = sum(1 for s in timeline.snapshots if not s.from_model)
    parameters = sum(p.numel() for p in loaded.model.parameters())
    data = timeline_path(path).read_bytes()
    assert len(data) - 8 - struct.unpack("<Q", data[:8])[0] == stored * parameters * 2  # float16 weights, nothing more
    assert final.model is not loaded.model and timeline.bundle_at(-1).model is not final.model  # a new model each time


@pytest.mark.parametrize("family", sorted(FAMILY_RUNS))
def test_every_family_records_a_timeline_that_restores(family, tmp_path):
    bundle = record(12, snapshots=4, family=family).bundle
    assert bundle.recording is not None and len(bundle.recording.snapshots) == 4
    path = checkpoint.save(bundle, tmp_path / f"{family}.safetensors")
    loaded = checkpoint.load(path)
    timeline = load_timeline(path, loaded)
    assert [s.step for s in timeline.snapshots][0] == 0 and timeline.snapshots[-1].step == 12
    assert all(math.isfinite(s.train_loss) for s in timeline.snapshots[1:])
    start = timeline.bundle_at(0)
    assert start.family.name == family and start.source_tokenizer is loaded.source_tokenizer
    assert any(not torch.equal(a, b) for a, b in zip(start.model.parameters(), loaded.model.parameters()))
