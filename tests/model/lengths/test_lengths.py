"""The length experiment (model/lengths/, issue 42): every scheme trained alike and read at every length, its table and
figure, the command; bad settings in one line each.

A tiny run (a few steps) checks the mechanics, not the findings: those are benchmarks/lengths.py's (six schemes on
copy, trained to 20 and read to 60).
"""

from __future__ import annotations

import csv

import pytest

from model.cli import main
from model.data.corpora import Pair
from model.figures.lengths import save_lengths
from model.io import checkpoint
from model.lengths.experiment import LengthError, LengthSettings, _scored, check_settings, experiment_pairs, run_lengths
from tests.conftest import assert_figure

TINY = LengthSettings(train_max=4, test_max=7, schemes=("sinusoidal", "alibi"), steps=20, train_pairs=200, per_length=3)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return run_lengths(TINY, tmp_path_factory.mktemp("lengths"))


def test_every_scheme_is_read_at_every_length_and_saved(result):
    assert [(row.scheme, row.length) for row in result.rows] == [(s, n) for s in TINY.schemes for n in range(1, 8)]
    assert all(row.trained == (row.length <= 4) and row.n == 3 for row in result.rows)
    for scheme in TINY.schemes:
        reopened = checkpoint.load(result.models[scheme])
        assert reopened.config.positional_encoding == scheme and reopened.config.max_len == 7 + 12
    assert set(result.seconds) == set(TINY.schemes)


def test_the_data_is_the_same_for_every_scheme_and_the_tests_have_their_length():
    splits, tests = experiment_pairs(TINY)
    again, _ = experiment_pairs(TINY)
    assert splits.train == again.train and all(1 <= len(pair.source.split()) <= 4 for pair in splits.train)
    assert all(len(pair.source.split()) == length for length, pairs in tests.items() for pair in pairs)


def test_exact_match_and_token_accuracy_are_counted_as_said():
    pairs = [Pair("a b c", "a b c"), Pair("d e f", "d e f")]
    row = _scored("rope", 3, True, pairs, ["a b c", "d x f g"])
    assert (row.exact_match, row.token_accuracy) == (0.5, 5 / 6) and (row.example, row.output, row.wrong) == (
        "d e f",
        "d x f g",
        True,
    )
    right = _scored("rope", 3, True, pairs, ["a b c", "d e f"])
    assert (right.exact_match, right.example, right.wrong) == (1.0, "a b c", False)


@pytest.mark.parametrize("suffix", [".csv", ".png", ".svg", ".pdf"])
def test_the_table_and_the_figure(result, tmp_path, suffix):
    path = save_lengths(result, tmp_path / f"lengths{suffix}")
    if suffix == ".csv":
        with open(path, encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == 14 and rows[0]["scheme"] == "sinusoidal" and rows[0]["model"].endswith("sinusoidal.safetensors")
    else:
        assert_figure(path, width=7.0, texts=("Reading longer sentences than trained on", "Exact match"))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(test_max=3), "--test-max 3 is below --train-max 4"),
        (dict(schemes=("rope", "absolute")), "not absolute"),
        (dict(corpus="wmt"), "--corpus must be one of copy, reverse, sort, toy-fr"),
        (dict(max_len=5), "--max-len 5 cannot hold a test sentence of 7 pieces"),
        (dict(train_min=6), "--train-min 6 is above --train-max 4"),
        (dict(steps=0), "--steps must be at least 1"),
    ],
)
def test_bad_settings_are_one_line(change, message):
    with pytest.raises(LengthError, match=message) as error:
        check_settings(LengthSettings(**(TINY.__dict__ | change)))
    assert "\n" not in str(error.value)


def test_the_command_writes_its_table_and_models_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    arguments = ["--train-max", "3", "--test-max", "5", "--positions", "none", "--steps", "10", "--train-pairs", "100"]
    assert main(["lengths", *arguments, "--per-length", "2", "--out", str(tmp_path / "l.csv"), "--quiet"]) == 0
    assert (tmp_path / "l.csv").is_file() and (tmp_path / "l_models" / "none.safetensors").is_file()
    assert "none" in capsys.readouterr().out
    assert main(["lengths", "--positions", "rope,nope", "--out", str(tmp_path / "x.pdf")]) != 0
    err = capsys.readouterr().err
    assert "not nope" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "x.pdf").exists()
    assert (
        main(["train", "--family", "rnn", "--corpus", "copy", "--positions", "rope", "--out", str(tmp_path / "r.safetensors")]) != 0
    )
    assert "--positions is not an option of the rnn family" in capsys.readouterr().err
