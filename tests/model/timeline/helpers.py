"""Tiny runs that record a timeline, shared by the timeline tests (seconds each, on one thread)."""

from __future__ import annotations

from functools import partial

import pytest

import model.training.trainer
from model.data.corpora import CorpusSpec
from model.runtime import CoreFollower
from model.training.pipeline import TokenizerOptions
from model.training.recording import TimelineOptions
from model.training.run import TrainingOutcome, TrainingRequest, train
from model.training.trainer import TrainingOptions
from tests.conftest import TINY_MODEL, TINY_RNN

CLASSIFIER = dict(n_layers=1, d_model=32, n_heads=4, d_ff=64, dropout=0.0)
FAMILY_RUNS = {  # family -> (corpus, model options)
    "transformer": ("copy", TINY_MODEL),
    "rnn": ("copy", TINY_RNN),
    "classifier": ("toy-fr-tags", CLASSIFIER),
}


def record(
    steps: int, snapshots: int = 12, family: str = "transformer", seed: int = 0, storage: str = "float16", **training
) -> TrainingOutcome:
    """A tiny run of ``steps`` steps recording at most ``snapshots``: the paper's rsqrt schedule (the rate at a step does
    not depend on the run's length), no averaging, the last weights kept, on one thread (the same sums every time)."""
    corpus, options = FAMILY_RUNS[family]
    settings = dict(
        epochs=100,
        max_steps=steps,
        batch_size=32,
        warmup_steps=30,
        valid_decode_limit=8,
        lr_decay="rsqrt",
        keep_best=False,
        seed=seed,
    )
    request = TrainingRequest(
        CorpusSpec(corpus, size=400, seed=1),
        TokenizerOptions(vocab_size=120),
        dict(options),
        TrainingOptions(**{**settings, **training}),
        "cpu",
        family=family,
        timeline=TimelineOptions(snapshots, storage),
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model.training.trainer, "CoreFollower", partial(CoreFollower, most=1, sample=lambda: None))
        outcome = train(request)
    assert outcome.bundle is not None, outcome.why
    return outcome
