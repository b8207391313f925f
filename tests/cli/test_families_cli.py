"""The seeds' other families from the command line: ``train --family rnn`` and a classifier on the labelled corpora
(built-in and users' files), then ``classify``, ``evaluate``, ``translate``, ``trace`` and ``export`` on them, and
the clear one-line refusals of options and corpora a family cannot take."""

from __future__ import annotations

import json

import numpy as np
import pytest

from model.cli.commands import main
from model.data.corpora import generate_builtin
from tests.conftest import assert_figure

TINY_CLASSIFIER = ["--layers", "1", "--d-model", "32", "--heads", "2", "--d-ff", "64", "--vocab-size", "100", "--quiet"]
TINY_RNN = ["--family", "rnn", "--d-embed", "16", "--hidden", "32", "--vocab-size", "60", "--quiet"]
SHORT = ["--max-steps", "30", "--corpus-size", "400", "--valid-decode", "5"]


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tagger.safetensors"
    assert main(["train", "--corpus", "toy-fr-tags", "--out", str(path), *TINY_CLASSIFIER, *SHORT]) == 0
    return path


def test_classify_prints_a_tag_for_every_word(tagger, tmp_path, capsys):
    assert main(["classify", "--model", str(tagger), "The small cat sleeps."]) == 0
    words = capsys.readouterr().out.split()
    assert [item.rpartition("/")[0] for item in words] == ["The", "small", "cat", "sleeps", "."]
    assert all(item.rpartition("/")[2] in ("DET", "PRON", "NOUN", "ADJ", "VERB", "AUX", "PART", "ADP", "PUNCT") for item in words)
    texts = tmp_path / "texts.txt"
    texts.write_text("the dog eats\n\nwe are happy .\n", encoding="utf-8")
    assert main(["classify", "--model", str(tagger), "--file", str(texts), "--json", "--probabilities"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["text"] for row in rows] == ["the dog eats", "we are happy ."]
    assert rows[0]["words"] == ["the", "dog", "eats"] and len(rows[0]["labels"]) == 3
    assert main(["classify", "--model", str(tagger)]) == 1
    assert "nothing to classify" in capsys.readouterr().err


def test_evaluate_reports_accuracy_and_the_f1_of_every_tag(tagger, tmp_path, capsys):
    assert main(["evaluate", "--model", str(tagger), "--corpus", "toy-fr-tags", "--n", "60", "--seed", "7", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert {"NOUN", "VERB", "DET"} <= set(scores["per_class_f1"]) and scores["n"] == 60
    # The same 60 fresh sentences tagged by `classify`, and scored here: accuracy over words, F1 per tag.
    pairs = generate_builtin("toy-fr-tags", 60, 7)
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(pair.source + "\n" for pair in pairs), encoding="utf-8")
    assert main(["classify", "--model", str(tagger), "--file", str(texts), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["words"] for row in rows] == [pair.source.split() for pair in pairs]
    gold = [tag for pair in pairs for tag in pair.target.split()]
    predicted = [tag for row in rows for tag in row["labels"]]
    assert scores["accuracy"] == pytest.approx(sum(g == p for g, p in zip(gold, predicted)) / len(gold), abs=1e-6)
    f1 = {}
    for tag in set(gold) | set(predicted):
        hits = sum(g == p == tag for g, p in zip(gold, predicted))
        f1[tag] = 2 * hits / (gold.count(tag) + predicted.count(tag))
    assert {tag: value for tag, value in scores["per_class_f1"].items() if value is not None} == pytest.approx(f1, abs=1e-6)
    assert scores["macro_f1"] == pytest.approx(sum(f1.values()) / len(f1), abs=1e-6)
    assert main(["evaluate", "--model", str(tagger), "--corpus", "toy-fr-tags", "--n", "60"]) == 0
    printed = capsys.readouterr().out
    assert "accuracy" in printed and "macro-F1" in printed and "NOUN" in printed


def test_users_labelled_files_train_a_classifier(tmp_path, capsys):
    tagged = tmp_path / "tags.txt"
    tagged.write_text("".join(f"the/DET cat{i}/NOUN sleeps/VERB\n" for i in range(80)), encoding="utf-8")
    out = tmp_path / "file-tagger.safetensors"
    code = main(["train", "--corpus", str(tagged), "--task", "tagging", "--out", str(out), *TINY_CLASSIFIER, "--max-steps", "5"])
    assert code == 0 and out.exists()
    labelled = tmp_path / "labels.tsv"
    labelled.write_text("".join(f"text number {i}\t{'odd' if i % 2 else 'even'}\n" for i in range(80)), encoding="utf-8")
    out = tmp_path / "classifier.safetensors"
    code = main(
        ["train", "--corpus", str(labelled), "--task", "classification", "--out", str(out), *TINY_CLASSIFIER, "--max-steps", "5"]
    )
    assert code == 0
    capsys.readouterr()
    assert main(["classify", "--model", str(out), "text number 3"]) == 0
    assert capsys.readouterr().out.split("\t")[0].strip() in ("odd", "even")


def test_an_rnn_trains_and_every_command_reads_its_one_head(tmp_path, capsys):
    model = tmp_path / "rnn.safetensors"
    args = ["train", "--corpus", "copy", "--out", str(model), *TINY_RNN, "--attention", "luong-dot", "--local-window", "2"]
    assert main([*args, *SHORT]) == 0
    assert main(["translate", "--model", str(model), "a b c"]) == 0
    trace_file = tmp_path / "trace.npz"
    assert main(["trace", "--model", str(model), "--text", "a b c", "--out", str(trace_file)]) == 0
    with np.load(trace_file, allow_pickle=False) as arrays:
        assert arrays["cross"].shape[:2] == (1, 1) and "encoder_self" not in arrays
    figure = tmp_path / "focus.png"
    assert main(["export", "--model", str(model), "--text", "a b c", "--kind", "cross", "--out", str(figure)]) == 0
    assert_figure(figure)
    written = figure.read_bytes()
    capsys.readouterr()
    assert main(["export", "--model", str(model), "--text", "a b c", "--kind", "encoder", "--out", str(figure)]) == 1
    assert "encoder" in capsys.readouterr().err and figure.read_bytes() == written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corpus", "toy-fr", "--attention", "bahdanau"], "--attention is not an option of the transformer family"),
        (["--corpus", "toy-fr", "--family", "rnn", "--heads", "4"], "--heads is not an option of the rnn family"),
        (["--corpus", "toy-fr-tags", "--family", "transformer"], "cannot learn"),
        (["--corpus", "copy", "--family", "classifier"], "cannot learn"),
        (["--corpus", "toy-fr", "--family", "rnn", "--hidden", "33"], "d_hidden must be even"),
    ],
)
def test_options_a_family_cannot_take_are_refused_in_one_line(args, message, tmp_path, capsys):
    out = tmp_path / "model.safetensors"
    assert main(["train", *args, "--out", str(out), "--quiet", "--max-steps", "1"]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0] and not out.exists()


def test_a_translation_file_read_as_tags_names_its_line(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the cat\tle chat\n", encoding="utf-8")
    assert main(["train", "--corpus", str(pairs), "--task", "tagging", "--out", str(tmp_path / "m"), "--quiet"]) != 0
    assert "pairs.tsv:1: 'the' is not word/TAG" in capsys.readouterr().err
