"""A folder of Hugging Face Trainer checkpoints (``checkpoint-500/``, ``checkpoint-1000/``, …) opens as a model (its
newest checkpoint) and as a timeline: one snapshot per checkpoint by step, with the losses and evaluations of each
checkpoint's trainer_state.json. Built here from a tiny pretrained-layout T5; nothing is downloaded."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from model.io.models import open_model
from model.io.timeline import find_timeline, load_timeline

pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')

STEPS = (5, 20, 100)  # written out of order below: the timeline sorts by step


def _state(step: int) -> dict:
    """A trainer_state.json as the Trainer writes it: a loss every 5 steps, an evaluation at each checkpoint."""
    history: list[dict] = []
    for logged in range(5, step + 1, 5):
        history.append({"epoch": logged / 50, "loss": 10.0 / logged, "learning_rate": 1e-4, "step": logged})
        if logged in STEPS:
            history.append({"epoch": logged / 50, "eval_loss": 5.0 / logged, "eval_bleu": float(logged), "step": logged})
    return {"global_step": step, "log_history": history}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """run/checkpoint-{5,20,100}: the same tiny T5 with its weights scaled by the step (checkpoint-20 has no state)."""
    from safetensors.torch import load_file, save_file

    from model.pretrained.tiny import build

    run = tmp_path_factory.mktemp("run")
    first = build("t5", run / "checkpoint-100")
    weights = load_file(first / "model.safetensors")
    for step in (20, 5):
        folder = run / f"checkpoint-{step}"
        shutil.copytree(first, folder)
        save_file({k: v * (step / 100) for k, v in weights.items()}, folder / "model.safetensors", metadata={"format": "pt"})
    for step in (5, 100):
        (run / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps(_state(step)))
    (run / "checkpoint-7").mkdir()  # not a pretrained folder (no config.json): not a checkpoint
    (run / "runs").mkdir()
    return run


def test_a_folder_of_checkpoints_is_a_timeline_ordered_by_step(checkpoints):
    assert find_timeline(checkpoints) == checkpoints == find_timeline(checkpoints / "checkpoint-20")
    timeline = load_timeline(checkpoints)
    assert [s.step for s in timeline.snapshots] == list(STEPS) and timeline.storage == "checkpoints"
    assert [s.final for s in timeline.snapshots] == [False, False, True] and timeline.snapshots[-1].label == "step 100 (final)"
    early, middle, last = timeline.snapshots
    assert early.train_loss == pytest.approx(2.0) and early.validation == {"loss": 1.0, "bleu": 5.0}
    # checkpoint-20 has no trainer_state.json: its records come from the newest checkpoint's history
    assert middle.train_loss == pytest.approx(0.5) and middle.validation == {"loss": 0.25, "bleu": 20.0}
    assert last.validation == {"loss": 0.05, "bleu": 100.0} and last.elapsed_seconds is None
    first, newest = timeline.bundle_at(0), timeline.bundle_at(-1)
    assert first.path.endswith("checkpoint-5") and newest.path.endswith("checkpoint-100")
    for small, large in zip(first.model.parameters(), newest.model.parameters()):
        assert torch.allclose(small * 20, large, atol=1e-5)  # checkpoint-5 holds the weights scaled by 5/100


def test_the_folder_opens_as_its_newest_checkpoint(checkpoints):
    bundle = open_model(str(checkpoints))
    assert bundle.path.endswith("checkpoint-100") and bundle.family.name == "pretrained-encoder-decoder"
