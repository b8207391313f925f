"""Issue 39, item 11: *Stop & keep* (and the first Ctrl-C of ``train``) after a validation that was the best so far.

The Train tab says of the best validation "these weights are kept"; before, a stop kept the last step's weights all the
same, the timeline's last snapshot read "step 14 (final)" and ``history.stopped`` only "cancelled". Now the weights kept
are the best validation's (as with any other end of training, unless --no-keep-best), the final snapshot says so
("final: the weights of step 10"), and the history says in words which weights were kept and why training stopped.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch

import model.training.trainer
from model.data.corpora import CorpusSpec
from model.kinds import StopReason
from model.runtime import CoreFollower
from model.training.pipeline import TokenizerOptions
from model.training.recording import TimelineOptions
from model.training.run import TrainingCallbacks, TrainingRequest, train
from model.training.trainer import TrainingControl, TrainingOptions
from tests.conftest import TINY_MODEL

VALID_EVERY, STOP_AT = 10, 14


def _stopped_run(keep_best: bool):
    """A tiny run validated at steps 10 and 20, stopped by the user after step 14; the weights at step 10 and 14."""
    control = TrainingControl()
    seen: dict[int, dict[str, torch.Tensor]] = {}
    holder: dict = {}

    def on_progress(progress) -> None:
        if progress.step in (VALID_EVERY, STOP_AT):
            seen[progress.step] = {k: v.detach().clone() for k, v in holder["model"].state_dict().items()}
        if progress.step == STOP_AT:
            control.cancel()  # Stop & keep

    original = model.training.trainer.Trainer.__init__

    def remember(self, network, *args, **kwargs):
        holder["model"] = network
        original(self, network, *args, **kwargs)

    request = TrainingRequest(
        CorpusSpec("copy", size=400, seed=1),
        TokenizerOptions(vocab_size=120),
        dict(TINY_MODEL),
        TrainingOptions(
            epochs=100,
            max_steps=40,
            batch_size=32,
            warmup_steps=30,
            valid_every=VALID_EVERY,
            valid_decode_limit=4,
            keep_best=keep_best,
            average_steps=0,
            seed=0,
        ),
        "cpu",
        timeline=TimelineOptions(12),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model.training.trainer, "CoreFollower", partial(CoreFollower, most=1, sample=lambda: None))
        patch.setattr(model.training.trainer.Trainer, "__init__", remember)
        outcome = train(request, TrainingCallbacks(on_progress=on_progress), control)
    return outcome, seen


def _same(state: dict[str, torch.Tensor], network) -> bool:
    return all(torch.equal(tensor, network.state_dict()[name]) for name, tensor in state.items())


def test_stop_and_keep_keeps_the_best_validation_and_every_record_says_so():
    outcome, seen = _stopped_run(keep_best=True)
    bundle = outcome.bundle
    assert outcome.stopped is StopReason.CANCELLED and bundle is not None
    assert bundle.history["kept_step"] == VALID_EVERY
    assert _same(seen[VALID_EVERY], bundle.model)  # the weights the Train tab said are kept
    final = bundle.recording.snapshots[-1]
    assert final.final and final.step == STOP_AT and final.kept_step == VALID_EVERY
    assert final.label == f"step {STOP_AT} (final: the weights of step {VALID_EVERY})"
    kept = bundle.history["kept"]
    assert f"the weights of step {VALID_EVERY}" in kept and "best validation" in kept and f"step {STOP_AT}" in kept
    assert "stopped by the user" in kept


def test_without_keep_best_a_stop_keeps_the_last_weights_and_says_so():
    outcome, seen = _stopped_run(keep_best=False)
    bundle = outcome.bundle
    assert "kept_step" not in bundle.history and _same(seen[STOP_AT], bundle.model)
    final = bundle.recording.snapshots[-1]
    assert final.step == STOP_AT and final.kept_step is None and final.label == f"step {STOP_AT} (final)"
    assert bundle.history["kept"] == f"the weights of step {STOP_AT}, the last; stopped by the user at step {STOP_AT}"
