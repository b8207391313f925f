"""Training never spoils work, in the core (model/training/trainer.py): options that cannot train are refused
before anything runs, and a loss that turns NaN stops the run with the last good weights kept (the command
line's side of it, what reaches the disk, is in tests/cli/test_train_safety.py)."""

import math

import pytest
import torch

import model.training.step
import model.training.trainer
from model.training.trainer import TrainingOptions, TrainingOptionsError, weights_are_finite
from tests.model.training.test_trainer import make_trainer


def test_training_options_refuse_what_cannot_train():
    for bad, message in [
        (dict(lr_factor=float("nan")), "lr_factor"),
        (dict(lr_factor=0.0), "lr_factor"),
        (dict(label_smoothing=1.0), "label_smoothing"),
        (dict(clip_norm=float("nan")), "clip_norm"),
        (dict(clip_norm=-1.0), "clip_norm"),
        (dict(epochs=0), "epochs"),
    ]:
        with pytest.raises(TrainingOptionsError, match=message):
            TrainingOptions(**bad).validate()
    TrainingOptions(clip_norm=0.0, label_smoothing=0.0).validate()  # both off: fine


# --- a loss that turns NaN ------------------------------------------------------------------------


def nan_from_call(monkeypatch, first_bad_call: int) -> None:
    original, calls = model.training.step.smoothed_cross_entropy, []

    def smoothed_cross_entropy(logits, gold, smoothing):
        loss, correct = original(logits, gold, smoothing)
        calls.append(1)
        return (loss * math.nan if len(calls) >= first_bad_call else loss), correct

    monkeypatch.setattr(model.training.step, "smoothed_cross_entropy", smoothed_cross_entropy)


def test_a_nan_loss_stops_training_and_keeps_the_last_good_weights(monkeypatch):
    snapshots = {}
    trainer = make_trainer(
        steps=20, on_progress=lambda p: snapshots.__setitem__(p.step, [t.detach().clone() for t in trainer.model.parameters()])
    )
    nan_from_call(monkeypatch, 4)
    result = trainer.run()
    assert (result.stopped, result.steps) == ("diverged", 3)
    assert "nan" in result.detail and "step 4" in result.detail
    assert result.usable and result.finite_weights and weights_are_finite(trainer.model)
    assert [row[0] for row in result.history["steps"]] == [1, 2, 3]
    assert result.history["validations"] == []
    for kept, after_step_3 in zip(trainer.model.parameters(), snapshots[3]):
        assert torch.equal(kept, after_step_3)
    assert float(trainer.optimizer.steps) == 3  # the NaN step was not taken


def test_a_nan_loss_on_the_first_step_leaves_nothing_usable(monkeypatch):
    trainer = make_trainer(steps=20)
    before = [t.detach().clone() for t in trainer.model.parameters()]
    nan_from_call(monkeypatch, 1)
    result = trainer.run()
    assert (result.stopped, result.steps, result.usable) == ("diverged", 0, False)
    assert all(torch.equal(a, b) for a, b in zip(trainer.model.parameters(), before))
