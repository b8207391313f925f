"""The one training path, ``train(request, callbacks, control)``: typed objects reach the callbacks in order,
the outcome's bundle is trained and finished (on the CPU, its settings and why it stopped recorded), a
run cancelled before its first step hands back nothing, and a bad request is a UserError before any work."""

from __future__ import annotations

import pytest

from model.data.corpora import CorpusSpec
from model.kinds import StopReason
from model.training.pipeline import TokenizerOptions
from model.training.run import Prepared, TrainingCallbacks, TrainingRequest, train
from model.training.trainer import Progress, TrainingControl, TrainingOptions, TrainingOptionsError, Validation
from tests.conftest import TINY_MODEL


def _request(**training) -> TrainingRequest:
    options = TrainingOptions(**{"epochs": 100, "max_steps": 6, "batch_size": 16, "valid_decode_limit": 5, **training})
    return TrainingRequest(
        CorpusSpec("copy", size=200, seed=3), TokenizerOptions(vocab_size=40), dict(TINY_MODEL), options, device="cpu"
    )


def test_train_reports_typed_objects_and_finishes_the_bundle():
    heard: list[object] = []
    callbacks = TrainingCallbacks(
        on_stage=heard.append, on_prepared=heard.append, on_progress=heard.append, on_validation=heard.append
    )
    outcome = train(_request(), callbacks)
    stages = [item for item in heard if isinstance(item, str)]
    assert stages[0].startswith("Generating") and stages[-1].startswith("Training on")
    prepared = [item for item in heard if isinstance(item, Prepared)]
    progress = [item for item in heard if isinstance(item, Progress)]
    validations = [item for item in heard if isinstance(item, Validation)]
    assert len(prepared) == 1 and prepared[0].train > 0 and "parameters" in prepared[0].model
    assert heard.index(prepared[0]) < heard.index(progress[0])
    assert [p.step for p in progress] == [1, 2, 3, 4, 5, 6] and len(validations) == 1
    assert outcome.stopped is StopReason.MAX_STEPS and outcome.steps == 6 and outcome.why == "max steps"
    bundle = outcome.bundle
    assert bundle is not None and bundle.history["stopped"] == "max steps"
    assert bundle.training["max_steps"] == 6 and next(bundle.model.parameters()).device.type == "cpu"
    assert not bundle.model.training  # ready to decode


def test_a_run_cancelled_before_its_first_step_hands_back_nothing():
    control = TrainingControl()
    control.cancel()
    outcome = train(_request(), control=control)
    assert outcome.stopped is StopReason.CANCELLED and outcome.bundle is None and outcome.steps == 0


def test_a_bad_request_is_refused_before_any_work():
    heard: list[object] = []
    with pytest.raises(TrainingOptionsError, match="lr_factor"):
        train(_request(lr_factor=float("nan")), TrainingCallbacks(on_stage=heard.append))
    assert heard == []
