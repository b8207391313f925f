"""A timeline of the analysis's own, kept in memory: a tiny Transformer trained on the copy corpus with copies of its
weights taken at log-spaced steps and at each validation (as the recorder keeps them), wrapped as a
``SnapshotSource``. Trained once per test session; seeded, so every run records the same snapshots."""

from __future__ import annotations

import copy
import functools
import math
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import Any
from unittest import mock

import torch

from model.data.corpora import CorpusSpec
from model.io.bundle import ModelBundle
from model.runtime import CoreFollower, set_cpu_threads
from model.training.pipeline import TokenizerOptions, prepare
from model.training.trainer import Progress, Trainer, TrainingOptions, Validation

# The shortest seeded run found in which the diagonal forms with a margin: one layer of two heads, 500 steps at twice
# the usual rate, on 2,000 copy pairs, on one core: the best head's AER ends at 0.013 (seeds 1 and 2: 0.005, 0.008).
# 400 steps end at 0.08 and 300 at 0.13; 1,000 pairs, or a rate of 1, did not learn to copy in 800 steps.
COPY_MODEL = dict(n_encoder_layers=1, n_decoder_layers=1, d_model=32, n_heads=2, d_ff=64, dropout=0.0, max_len=32)
COPY_STEPS = 500
COPY_OPTIONS = dict(
    epochs=1000,
    max_steps=COPY_STEPS,
    batch_size=32,
    warmup_steps=100,
    lr_factor=2.0,
    label_smoothing=0.0,
    valid_every=250,
    valid_decode_limit=10,
    n_samples=0,
    keep_best=False,
    average_steps=0,
    seed=0,
)


@dataclass(frozen=True)
class Record:
    index: int
    step: int
    elapsed_seconds: float
    train_loss: float
    validation: dict[str, Any] | None
    label: str


class MemoryTimeline:
    """Snapshots held as state dicts beside the final bundle; ``bundle_at`` loads one into a copy of its model."""

    def __init__(self, bundle: ModelBundle, records: list[Record], states: list[dict[str, torch.Tensor]]):
        self.bundle, self.records, self.states = bundle, records, states
        self.loaded = 0  # bundles made (tests check what is loaded)

    @property
    def snapshots(self) -> list[Record]:
        return self.records

    def bundle_at(self, index: int) -> ModelBundle:
        self.loaded += 1
        model = copy.deepcopy(self.bundle.model)
        model.load_state_dict(self.states[index])
        return replace(self.bundle, model=model.eval())


def log_steps(last: int, count: int) -> list[int]:
    """``count`` steps from 1 to ``last``, log-spaced (dense early)."""
    return sorted({max(1, round(last ** (k / (count - 1)))) for k in range(count)})


def record_run(model_options: dict, training: dict, corpus: CorpusSpec, count: int = 7) -> tuple[MemoryTimeline, float]:
    """Train on one core with snapshots at ``count`` log-spaced steps and at each validation; (the timeline, seconds it
    took). One core, however busy the machine: the trainer's thread count otherwise follows the load, and a different
    count sums in a different order (the same seed then gives the same model only to rounding)."""
    started = time.perf_counter()
    set_cpu_threads(1)
    bundle, splits = prepare(corpus, TokenizerOptions(vocab_size=40), model_options, seed=training["seed"])
    marks = set(log_steps(training["max_steps"], count)) | set(
        range(training["valid_every"], training["max_steps"] + 1, training["valid_every"])
    )
    kept: dict[int, tuple[float, float, dict[str, torch.Tensor]]] = {}
    scores: dict[int, dict[str, Any]] = {}

    def on_progress(progress: Progress) -> None:
        if progress.step in marks:
            state = {name: value.detach().clone() for name, value in bundle.model.state_dict().items()}
            kept[progress.step] = (progress.elapsed_seconds, progress.train_loss, state)

    def on_validation(validation: Validation) -> None:
        found = validation.scores
        scores[validation.step] = {"bleu": found.bleu, "exact_match": found.exact_match, "loss": found.loss}

    options = TrainingOptions(**training)
    one_core = partial(CoreFollower, most=1, sample=lambda: None)  # bit for bit: one thread, whatever the load
    with mock.patch("model.training.trainer.CoreFollower", one_core):
        Trainer(
            bundle.model,
            bundle.source_tokenizer,
            bundle.target_tokenizer,
            splits,
            options,
            torch.device("cpu"),
            on_progress,
            on_validation,
            history=bundle.history,
        ).run()
    bundle.model.eval()
    records, states = [], []
    for index, step in enumerate(sorted(kept)):
        elapsed, loss, state = kept[step]
        records.append(
            Record(index, step, elapsed, loss if math.isfinite(loss) else float("nan"), scores.get(step), f"step {step:,}")
        )
        states.append(state)
    set_cpu_threads()
    return MemoryTimeline(bundle, records, states), time.perf_counter() - started


@functools.lru_cache(maxsize=1)
def copy_timeline() -> tuple[MemoryTimeline, float]:
    """The copy run (shared by the model's and the command line's tests)."""
    return record_run(COPY_MODEL, COPY_OPTIONS, CorpusSpec("copy", size=2000, seed=1))
