"""The train command's settings (model/cli/train.py): with no options a run is the corpus's preset; options
given replace the preset's values, and a length given (epochs, steps, minutes) replaces its time budget."""

from __future__ import annotations

from model.cli.commands import build_parser
from model.cli.train import settings_from
from model.training.presets import NO_EPOCH_LIMIT, builtin_preset


def _args(*options: str):
    return build_parser().parse_args(["train", "--corpus", "copy", "--out", "x.model", *options])


def test_no_options_means_the_corpus_preset():
    preset = builtin_preset("copy")
    model, tokenizer, training = settings_from(_args(), preset)
    assert {k: model[k] for k in preset.model} == preset.model
    assert tokenizer.vocab_size == preset.tokenizer["vocab_size"]
    assert training.max_minutes == 2.0 and training.lr_decay == "linear" and training.keep_best
    assert training.epochs == NO_EPOCH_LIMIT and training.average_steps == preset.training["average_steps"]


def test_given_options_replace_the_preset_and_a_length_replaces_its_budget():
    preset = builtin_preset("toy-fr")
    model, _, training = settings_from(_args("--d-model", "64", "--heads", "2", "--lr-decay", "rsqrt"), preset)
    assert model["d_model"] == 64 and model["n_heads"] == 2 and model["d_ff"] == preset.model["d_ff"]
    assert training.lr_decay == "rsqrt" and training.max_minutes == preset.minutes
    assert settings_from(_args("--epochs", "3"), preset)[2].max_minutes is None
    _, _, training = settings_from(_args("--max-steps", "50", "--max-minutes", "1"), preset)
    assert training.max_steps == 50 and training.max_minutes == 1.0
