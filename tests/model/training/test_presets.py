"""Presets (what a run uses unless the user says otherwise), the recipe's parts (keeping the best
validated weights, early stopping, weight averaging, batches by pieces, the linear schedule) and how
long a run will take, said before it starts."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

from model.data.batching import length_batches
from model.data.corpora import CorpusSpec, Pair, Splits
from model.training.pipeline import TokenizerOptions, prepare
from model.training.presets import (
    BUILTIN_PRESETS,
    NO_EPOCH_LIMIT,
    builtin_preset,
    expected_duration,
    file_preset,
    measure_step_seconds,
    planned_steps,
)
from model.training.trainer import Trainer, TrainingControl, TrainingOptions, WeightAverage, format_duration, learning_rate
from tests.conftest import TINY_MODEL


def test_every_builtin_corpus_has_a_preset_of_minutes():
    for name, preset in BUILTIN_PRESETS.items():
        assert preset.minutes and preset.minutes <= 10, name
        TrainingOptions.from_dict(preset.training).validate()
    assert builtin_preset("copy").minutes == builtin_preset("reverse").minutes == 2.0
    assert builtin_preset("toy-fr").minutes == 10.0


def _splits(n_pairs: int, words: int, distinct: int) -> Splits:
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(distinct)]
    pairs = [
        Pair(" ".join(rng.choice(vocabulary) for _ in range(words)), " ".join(rng.choice(vocabulary) for _ in range(words)))
        for _ in range(n_pairs)
    ]
    return Splits(pairs, [], [])


def test_a_file_preset_is_sized_from_the_corpus():
    small = file_preset(_splits(2_000, 8, 3_000))
    assert small.tokenizer["vocab_size"] == 1_000 and small.model["d_model"] == 128
    assert small.minutes == 10.0 and small.training["patience"] and small.training["valid_every"]
    assert small.sized_from == {"pairs": 2_000, "mean_words": 8.0, "longest_words": 8, "distinct_words": 3_000}
    large = file_preset(_splits(60_000, 30, 40_000))
    assert large.tokenizer["vocab_size"] == 8_000 and large.model["d_model"] == 256 and large.model["n_heads"] == 8
    assert large.minutes == 16.0 and large.model["max_len"] == 64  # at least 64
    assert file_preset(_splits(300, 100, 500)).model["max_len"] == 152  # 1.5 pieces a word, plus BOS and EOS
    assert file_preset(_splits(100, 3, 50)).tokenizer["vocab_size"] == 500
    # A real-sized small corpus (27,000 pairs, 33,000 distinct words): 4,000 pieces for the width-128 model, whose
    # output layer over 8,000 would be half its work (test BLEU 25.0 against 21.3 in the same 12 minutes).
    assert file_preset(_splits(27_000, 6, 33_000)).tokenizer["vocab_size"] == 4_000
    assert "2,000 pairs" in small.why


def test_durations_never_read_sixty_seconds():
    assert format_duration(479.4) == "7m59s"
    assert format_duration(479.6) == "8m00s"
    assert format_duration(59.7) == "1m00s"
    assert format_duration(3725) == "1h02m"
    assert format_duration(float("inf")) == "unknown"


def test_the_expected_duration_is_said_before_start():
    budget = TrainingOptions.from_dict(builtin_preset("copy").training)
    assert expected_duration(budget, 18_000, None) == "Expected duration: 2m00s (the time budget)"
    text = expected_duration(budget, 18_000, 0.05)
    assert text.startswith("Expected duration: 2m00s (the time budget; about 2,400 steps at 50 ms a step")
    epochs = TrainingOptions(epochs=10, batch_size=64)
    assert planned_steps(epochs, 6_400) == 1_000
    assert expected_duration(epochs, 6_400, 0.2) == (
        "Expected duration: about 3m20s (1,000 steps at 200 ms a step on this machine)"
    )
    endless = TrainingOptions(epochs=NO_EPOCH_LIMIT)
    assert "until you stop it" in expected_duration(endless, 6_400, 0.1)
    early = TrainingOptions(epochs=NO_EPOCH_LIMIT, max_minutes=5, patience=3)
    assert expected_duration(early, 100, None).endswith("early stopping may end it sooner")


def test_a_step_is_timed_on_this_machine():
    seconds = measure_step_seconds(dict(TINY_MODEL), 100, 8, 6, steps=2)
    assert 0 < seconds < 5


def test_linear_schedule_warms_up_then_falls_to_zero_at_the_end():
    peak = 128**-0.5 * 100**-0.5
    assert learning_rate(50, 128, 100, decay="linear", fraction=0.1) == pytest.approx(peak * 0.5 * 0.9)
    assert learning_rate(100, 128, 100, decay="linear", fraction=0.5) == pytest.approx(peak * 0.5)
    assert learning_rate(500, 128, 100, decay="linear", fraction=1.0) == 0.0


def test_batches_by_pieces_hold_what_fits():
    examples = [([1] * length, [1] * (length + 1)) for length in [3] * 50 + [20] * 50]
    batches = length_batches(examples, 64, random.Random(0), batch_tokens=100)
    assert sorted(i for batch in batches for i in batch) == list(range(100))
    for batch in batches:
        longest = max(len(examples[i][1]) for i in batch)
        assert len(batch) * longest <= 100 or len(batch) == 1
    assert max(len(b) for b in batches) == 25  # 4 pieces each: 25 fit in 100


def _trainer(**options):
    bundle, splits = prepare(CorpusSpec("copy", size=500, seed=1), TokenizerOptions(vocab_size=100), TINY_MODEL)
    defaults = dict(epochs=50, batch_size=32, warmup_steps=30, valid_decode_limit=10)
    trainer = Trainer(
        bundle.model,
        bundle.source_tokenizer,
        bundle.target_tokenizer,
        splits,
        TrainingOptions(**{**defaults, **options}),
        torch.device("cpu"),
    )
    return trainer, bundle


def test_the_best_validated_weights_are_kept():
    trainer, bundle = _trainer(max_steps=60, valid_every=20)
    result = trainer.run()
    validations = result.history["validations"]
    best = max(validations, key=lambda v: (round(v["bleu"], 2), v["exact_match"], -v["loss"]))
    assert [v["best"] for v in validations].count(True) >= 1
    assert result.history["kept_step"] == best["step"]
    assert torch.equal(trainer.optimizer.flat_parameters, trainer.best[2])


def _never_better_after_the_first(trainer) -> list[int]:
    """Validations that find the first one best and none after it; returns the steps validated."""
    validated: list[int] = []

    def validate(epoch, step):
        validated.append(step)
        return SimpleNamespace(best=len(validated) == 1)

    trainer.validate = validate
    return validated


def test_early_stop_after_validations_without_a_better_bleu():
    trainer, _ = _trainer(max_steps=400, valid_every=5, patience=2)
    validated = _never_better_after_the_first(trainer)
    result = trainer.run()
    assert result.stopped == "early stop" and validated == [5, 10, 15] and result.steps == 15
    assert result.detail == "no better validation BLEU in the last 2 validations"


def test_a_classifiers_early_stop_names_its_own_measure():
    bundle, splits = prepare(
        CorpusSpec("toy-fr-negation", size=200, seed=1),
        TokenizerOptions(vocab_size=100),
        dict(n_layers=1, d_model=32, n_heads=4, d_ff=64, dropout=0.0),
        family="classifier",
    )
    options = TrainingOptions(epochs=50, max_steps=400, batch_size=32, warmup_steps=30, valid_every=5, patience=3)
    trainer = Trainer(bundle.model, bundle.source_tokenizer, bundle.target_tokenizer, splits, options, torch.device("cpu"))
    _never_better_after_the_first(trainer)
    result = trainer.run()
    assert result.stopped == "early stop" and result.steps == 20
    assert result.detail == "no better validation macro-F1 in the last 3 validations"


def test_weight_average_follows_the_weights():
    weights = torch.zeros(4)
    average = WeightAverage(weights, horizon=10)
    for step in range(1, 200):
        weights.fill_(float(step))
        average.update(step)
    assert 180 < float(average.averaged[0]) < 199  # behind the last weights by about the horizon
    with average.applied():
        assert torch.equal(weights, average.averaged)
    assert float(weights[0]) == 199.0
    assert WeightAverage(weights, 0).averaged is None


def test_cancel_during_a_validation_stops_it():
    control = TrainingControl()
    trainer, _ = _trainer(max_steps=30, valid_every=10, valid_decode_limit=400)
    trainer.control = control
    original = trainer.validate

    def validate(epoch, step):
        control.cancel()  # the user presses Stop while the validation runs
        return original(epoch, step)

    trainer.validate = validate
    result = trainer.run()
    assert result.stopped == "cancelled" and result.steps == 10
    assert result.history["validations"] == []  # it stopped inside the validation, at its first batch


def test_progress_says_how_many_cores_a_step_ran_on():
    seen = []
    trainer, _ = _trainer(max_steps=3)
    trainer.on_progress = seen.append
    trainer.run()
    assert all(p.cpu_threads >= 1 for p in seen)
