"""Issue 28, "the best head disagrees across the app": one definition of the sentences AER is measured on
(``aer_pairs``: N pairs drawn with a seed from the held-out test split of the model's built-in corpus, 200 and 0 by
default) and of the best head, so that ``evaluate`` (text and --json), ``heads --aer-table`` and ``compare`` report
the same head and AER for the same settings, each with its count and seed. (The window: tests/explorer/test_one_aer_window.py.)"""

from __future__ import annotations

import csv
import json
import re

import pytest

from model.attribution import alignment_table as table_module
from model.attribution.alignment_table import alignment_table
from model.cli.commands import main
from model.data.corpora import load_corpus
from model.inspection.alignment import AER_PAIRS, AER_SEED, aer_pairs, cross_attention_aer, measured_aer
from model.inspection.comparison import best_alignment_head
from tests.conftest import saved_model

TEXT = "the small cat sees the dog"


@pytest.fixture(scope="module")
def models(toy_fr_bundle, toy_fr_rnn_bundle, tmp_path_factory):
    """(the toy-fr Transformer, its file, the toy-fr RNN's file)."""
    folder = tmp_path_factory.mktemp("one-aer")
    transformer = saved_model(toy_fr_bundle[0], folder, "toy.safetensors")
    rnn = saved_model(toy_fr_rnn_bundle[0], folder, "rnn.safetensors")
    return toy_fr_bundle[0], transformer, rnn


def run(capsys, *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_the_aer_pairs_are_a_seeded_draw_of_the_held_out_test_split(toy_fr_bundle):
    spec = toy_fr_bundle[0].corpus
    splits = load_corpus(spec)
    test = [pair for pair in splits.test if pair.alignment]
    assert (AER_PAIRS, AER_SEED) == (200, 0)
    drawn = aer_pairs(spec, 10, 3)
    assert len(drawn) == 10 and drawn == aer_pairs(spec, 10, 3) and drawn != aer_pairs(spec, 10, 4)
    assert all(pair in test and pair.alignment for pair in drawn)
    assert not {pair.source for pair in drawn} & {pair.source for pair in splits.train}  # never trained on
    assert sorted(aer_pairs(spec), key=test.index) == test  # 200 asked, the split has fewer: every one of them
    with pytest.raises(ValueError):
        aer_pairs(spec, 0)


def test_the_core_surfaces_give_exactly_one_best_head(models):
    """What evaluate (measured_aer), compare and side by side (best_alignment_head) and heads and the AER tab
    (alignment_table) compute for the same settings: the same floats."""
    bundle, _, _ = models
    report = measured_aer(bundle, 12, 5)
    aer, layer, head, reading = report.best
    assert report.n_pairs == 12 and report.where() == "12 toy-fr test pairs, seed 5" and reading == "predicting"
    assert aer == float(report.head_aer[0].min()) and (layer, head) == report.ranking()[0][:2]
    choice = best_alignment_head(bundle, 12, 5)
    assert (choice.layer, choice.head, choice.corpus_aer, choice.n_pairs, choice.seed) == (layer, head, aer, 12, 5)
    table = alignment_table(bundle, aer_pairs(bundle.corpus, 12, 5), ("attention", "shift-att"), corpus="toy-fr", seed=5)
    assert table.report is not None and table.report.best == report.best and table.n_pairs == 12
    assert table.measures[0].head_aer[layer, head] == aer and table.measures[0].head_aer.min() == aer
    assert (table.measures[1].head_aer == report.head_aer[1]).all()  # Shift-Att: the rows where the word is the input
    assert table.best_head() == f"layer {layer + 1}, head {head + 1}: AER {aer:.3f} on 12 toy-fr test pairs, seed 5"
    assert cross_attention_aer(bundle, aer_pairs(bundle.corpus, 12, 5)).best == report.best


def cli_reports(capsys, tmp_path, transformer, rnn, *aer: str) -> dict[str, tuple[int, int, str, str]]:
    """(layer, head, AER as printed, 'N toy-fr test pairs, seed S') of each command's best head, from its output."""
    evaluate = ["evaluate", "--model", str(transformer), "--corpus", "toy-fr", "--n", "5", "--seed", "9", *aer]
    scores = json.loads(run(capsys, *evaluate, "--json"))
    line = run(capsys, *evaluate)
    csv_path = tmp_path / "aer.csv"
    heads = run(
        capsys,
        "heads",
        "--model",
        str(transformer),
        "--corpus",
        "toy-fr",
        "--aer-table",
        str(csv_path),
        "--measures",
        "attention",
        "--quiet",
        *aer,
    )
    compare = run(
        capsys,
        "compare",
        "--model",
        str(transformer),
        "--with",
        str(rnn),
        "--text",
        TEXT,
        "--out",
        str(tmp_path / "pair.svg"),
        *aer,
    )
    where = f"{scores['aer_pairs']} {scores['aer_corpus']} test pairs, seed {scores['aer_seed']}"
    found = {"evaluate --json": (scores["aer_head"]["layer"], scores["aer_head"]["head"], f"{scores['aer']:.3f}", where)}
    patterns = {
        "evaluate": (line, r"best cross-attention head layer (\d+) head (\d+): AER ([\d.]+) on (.+)$"),
        "heads": (heads, r"^best cross-attention head: layer (\d+), head (\d+): AER ([\d.]+) on (.+)$"),
        "compare": (compare, r"^toy: layer (\d+), head (\d+), the best-aligning head: AER ([\d.]+) on ([^;\n]+)"),
    }
    for surface, (output, pattern) in patterns.items():
        match = re.search(pattern, output, re.MULTILINE)
        assert match, f"{surface} printed no best head with its pairs and seed:\n{output}"
        found[surface] = (int(match[1]), int(match[2]), match[3], match[4].strip())
    svg = (tmp_path / "pair.svg").read_text(encoding="utf-8")
    found["compare figure"] = found["compare"] if where.split(", ")[1] in svg and "toy-fr test pairs" in svg else ()
    with open(csv_path, encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if re.fullmatch(r"L\d+ H\d+", row["reading"])]
    best = min(rows, key=lambda row: float(row["aer"]))
    layer, head = (int(n) for n in re.findall(r"\d+", best["reading"]))
    found["heads csv"] = (layer, head, f"{float(best['aer']):.3f}", f"{best['pairs']} toy-fr test pairs, seed {best['seed']}")
    return found


def test_every_command_reports_the_same_best_head_at_the_defaults(models, capsys, tmp_path):
    bundle, transformer, rnn = models
    found = cli_reports(capsys, tmp_path, transformer, rnn)
    aer, layer, head, _ = measured_aer(bundle).best
    n_pairs = measured_aer(bundle).n_pairs
    expected = (layer + 1, head + 1, f"{aer:.3f}", f"{n_pairs} toy-fr test pairs, seed 0")
    assert found == dict.fromkeys(found, expected)


def test_every_command_takes_the_same_count_and_seed(models, capsys, tmp_path):
    bundle, transformer, rnn = models
    found = cli_reports(capsys, tmp_path, transformer, rnn, "--aer-pairs", "12", "--aer-seed", "5")
    aer, layer, head, _ = measured_aer(bundle, 12, 5).best
    assert found == dict.fromkeys(found, (layer + 1, head + 1, f"{aer:.3f}", "12 toy-fr test pairs, seed 5"))
    scores = json.loads(
        run(capsys, "evaluate", "--model", str(transformer), "--corpus", "toy-fr", "--aer-pairs", "12", "--aer-seed", "5", "--json")
    )
    assert (scores["aer"], scores["aer_pairs"], scores["aer_seed"]) == (round(aer, 6), 12, 5)  # the same float, rounded


def test_a_count_below_one_and_an_unused_n_are_refused(models, capsys, tmp_path):
    _, transformer, rnn = models
    table = ["heads", "--model", str(transformer), "--corpus", "toy-fr", "--aer-table", str(tmp_path / "a.csv")]
    pair = ["compare", "--model", str(transformer), "--with", str(rnn), "--text", TEXT, "--out", str(tmp_path / "p.png")]
    for args, said in [
        ([*table, "--aer-pairs", "0"], "--aer-pairs must be at least 1, got 0"),
        ([*pair, "--aer-pairs", "0"], "--aer-pairs must be at least 1, got 0"),
        ([*table, "--n", "30"], "--aer-table is measured on --aer-pairs held-out pairs drawn with --aer-seed"),
    ]:
        assert main(args) == 1
        assert said in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_the_table_caps_integrated_gradients_and_says_how_many_converged(toy_fr_bundle, monkeypatch):
    """Converged integrated gradients take 1,600-3,200 gradient points a prediction (hours for 200 pairs): the table
    caps each prediction and its IG column says how many predictions converged and the median completeness gap."""
    monkeypatch.setattr(table_module, "TABLE_IG_POINTS", 16)
    bundle = toy_fr_bundle[0]
    table = alignment_table(bundle, aer_pairs(bundle.corpus, 2, 0), ("attention", "ig"), corpus="toy-fr", seed=0)
    attention, ig = table.measures
    assert attention.note == ""
    match = re.fullmatch(r"at most 16 points a prediction: (\d+) of (\d+) converged, median completeness gap (\S+)%", ig.note)
    assert match and int(match[1]) <= int(match[2]) and int(match[2]) >= 2  # every prediction of both pairs counted
    assert ig.note in table.summary()[1]
