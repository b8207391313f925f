"""A measure is one registered class: ``Uniform`` (tests/uniform_measure.py, that one file and nothing else) reaches
``attribute --measure``, the AER table and the report card's methods while it is registered, and none of them once
it is unregistered. The window's Reading box: tests/explorer/test_measure_registry_window.py."""

from __future__ import annotations

import numpy as np
import pytest

from model.attribution.alignment_table import alignment_table
from model.attribution.measures import CONTRIBUTIONS, MEASURES, NAMES, measure_names
from model.cli.commands import main
from model.data.batching import encode_pairs
from model.grading.cases import grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.methods import METHODS, MethodSettings, method_names
from model.inspection.alignment import aer_pairs, gold_word_groups
from model.io import checkpoint
from model.runtime import set_cpu_threads
from tests.uniform_measure import Uniform, registered_uniform


@pytest.fixture
def uniform():
    with registered_uniform() as measure:
        yield measure


@pytest.fixture(scope="module")
def model_file(toy_fr_bundle, tmp_path_factory):
    return checkpoint.save(toy_fr_bundle[0], tmp_path_factory.mktemp("models") / "model.safetensors")


def attribute(model_file, out) -> int:
    return main(["attribute", "--model", str(model_file), "--text", "the cat sleeps", "--measure", "uniform", "--out", str(out)])


def test_the_command_line_computes_a_registered_measure_and_refuses_it_once_unregistered(model_file, tmp_path, capsys):
    with registered_uniform():
        assert MEASURES["uniform"] is Uniform and "uniform" in NAMES and "uniform" in CONTRIBUTIONS
        assert attribute(model_file, tmp_path / "uniform.npz") == 0
        with np.load(tmp_path / "uniform.npz", allow_pickle=False) as arrays:
            cross, decoder = arrays["cross_uniform"], arrays["decoder_uniform"]
            assert str(arrays["measure"]) == "uniform"
            np.testing.assert_allclose(arrays["cross"], cross)  # the trace's shares are the measure's
        n_steps, n_source = cross.shape[-2:]
        np.testing.assert_allclose(cross, 1 / n_source)
        np.testing.assert_allclose(decoder[0, 0].sum(-1), 1.0, rtol=1e-6)
        assert decoder[0, 0, 0, 0] == 1 and not np.triu(decoder[0, 0], 1).any()
    assert "uniform" not in measure_names() and "uniform" not in NAMES
    capsys.readouterr()
    assert attribute(model_file, tmp_path / "again.npz") == 2  # argparse: not one of the choices
    assert "invalid choice: 'uniform'" in capsys.readouterr().err and not (tmp_path / "again.npz").exists()


def uniform_aer(bundle, pairs) -> float:
    """The corpus AER of linking every target word to the source word with the most pieces (the first on a tie): what
    equal shares over every source piece align, once a word's pieces are summed."""
    hits = predicted = gold_total = 0
    examples = encode_pairs(pairs, bundle.source_tokenizer, bundle.target_tokenizer, bundle.config)
    for pair, (source_ids, target_ids) in zip(pairs, examples):
        groups = gold_word_groups(bundle, pair, source_ids[:-1], target_ids[1:-1])
        if groups is None:
            continue
        source_groups, target_groups = groups
        widest = int(np.argmax(np.bincount(source_groups)))
        links = {(widest, target) for target in range(int(target_groups.max()) + 1)}
        gold = set(pair.alignment)
        hits, predicted, gold_total = hits + len(links & gold), predicted + len(links), gold_total + len(gold)
    return 1 - 2 * hits / (predicted + gold_total)


def test_the_aer_table_reads_a_registered_measure(uniform, toy_fr_bundle):
    bundle = toy_fr_bundle[0]
    pairs = aer_pairs(bundle.corpus, 6, 0)
    table = alignment_table(bundle, pairs, ("attention", "uniform"), corpus="toy-fr", seed=0)
    assert [m.measure for m in table.measures] == ["attention", "uniform"]
    row = table.measures[1]
    assert row.head_aer.shape == (1, 1) and row.places() == [("L1 all heads", pytest.approx(uniform_aer(bundle, pairs)))]
    assert table.summary()[1].startswith(Uniform.label)


def test_the_report_card_grades_a_registered_measure(uniform, copy_bundle):
    set_cpu_threads(1)
    assert "uniform" in METHODS and method_names().index("uniform") < method_names().index("leave-one-out")
    bundle = copy_bundle[0]
    corpus, pairs = grading_pairs(bundle, None, 3, 0)
    settings = CardSettings(("uniform", "attention"), MethodSettings(ig_points=33, lime_samples=16, shap_samples=16), 2)
    card = grade(bundle, pairs, settings, corpus=corpus, model_name="tiny copy")
    row = card.row("uniform")
    assert row.label == Uniform.label and row.reads_model
    assert 0 <= row.cells["aer"].value <= 1 and row.cells["deletion_aopc"].value is not None  # graded as any measure
    for column in ("tau_loo", "tau_prefix"):  # equal shares rank nothing: said, not averaged in
        assert row.cells[column].value is None and set(row.cells[column].failures) == {"its map is constant: it ranks nothing"}
    # Equal shares do not depend on the model: randomising its layers leaves the maps as they were.
    assert row.sanity is not None and row.sanity.cascade == pytest.approx([1.0] * len(row.sanity.cascade))
    assert card.row("attention").sanity.cascade[-1] < 0.5


def test_unregistered_it_is_no_method_of_the_report_card():
    assert "uniform" not in METHODS and "uniform" not in method_names()
