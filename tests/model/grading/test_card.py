"""The report card: every registered column for every method, "—" with the reason where a column does not apply (a
family without the measure, a corpus without known positions), a NaN reported as a failure with its cause and never
averaged in nor marked best, the best of each column marked, the CSV, and the models it refuses."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from model.grading.card import MethodRow, ReportCard
from model.grading.cases import GradingError, grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.methods import MethodSettings
from model.grading.metrics import CONSTANT, METRICS, NOT_FINITE, DeletionAopc, PairEvidence
from model.io.models import open_model
from model.runtime import set_cpu_threads
from tests.conftest import tiny_bundle

FAST = MethodSettings(ig_points=33, lime_samples=16, shap_samples=16)


@pytest.fixture(scope="module")
def copy_card(copy_bundle):
    set_cpu_threads(1)  # before the function-scoped fixtures of conftest.py
    bundle = copy_bundle[0]
    corpus, pairs = grading_pairs(bundle, None, 4, 0)
    methods = ("attention", "alti", "ig", "leave-one-out", "occlusion", "lime", "kernel-shap", "random")
    return grade(bundle, pairs, CardSettings(methods, FAST, sanity_pairs=2), corpus=corpus, model_name="tiny copy")


def test_every_column_of_every_method(copy_card):
    assert copy_card.columns == list(METRICS) and copy_card.n_pairs == 4
    attention = copy_card.row("attention")
    for name in copy_card.columns:
        assert attention.cells[name].value is not None and not attention.cells[name].failed, name
    assert 0 <= attention.cells["accuracy"].value <= 1 and 0 <= attention.cells["aer"].value <= 1  # copy: positions known
    alti = copy_card.row("alti")  # no cross-attention reading: its source columns are "—" with the reason, not zeros
    assert alti.cells["deletion_aopc"].value is None and "ALTI has no cross-attention" in alti.cells["deletion_aopc"].reason
    assert alti.cells["tau_prefix"].value is not None  # its target-prefix map is graded
    loo = copy_card.row("leave-one-out")
    assert loo.cells["tau_loo"].text() == "ref." and loo.cells["deletion_aopc"].value is not None
    assert copy_card.row("random").sanity is None and "does not read the model" in copy_card.row("random").sanity_reason
    assert copy_card.row("lime").cells["tau_prefix"].value is None
    assert set(copy_card.timings) >= {"attention", "ig", "faithfulness", "sanity"}
    assert "integration converged at" in copy_card.row("ig").note


def test_the_best_of_each_column_is_marked(copy_card):
    for name in copy_card.columns:
        metric = METRICS[name]
        cells = [(row, row.cells[name]) for row in copy_card.rows if row.cells[name].value is not None]
        eligible = [c for row, c in cells if row.reads_model and not c.reference and not c.failed]
        if not eligible:
            continue
        values = [round(c.value, 3) for c in eligible]
        best = max(values) if metric.higher_is_better else min(values)
        assert all(c.best == (round(c.value, 3) == best) for c in eligible), name
        assert not copy_card.row("random").cells[name].best
        assert any(c.text().endswith("★") for c in eligible)


def test_the_deletion_curves_start_full_and_the_random_order_is_the_chance_level(copy_card):
    attention, random_order = copy_card.row("attention"), copy_card.row("random")
    assert attention.deletion_curve is not None and random_order.deletion_curve is not None
    assert attention.deletion_curve[0] == pytest.approx(random_order.deletion_curve[0])  # nothing hidden yet
    assert attention.insertion_curve[-1] == pytest.approx(random_order.insertion_curve[-1])  # everything shown


def test_the_csv(copy_card, tmp_path):
    path = tmp_path / "card.csv"
    copy_card.write_csv(path)
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["method"] for row in rows] == [row.name for row in copy_card.rows]
    alti = next(row for row in rows if row["method"] == "alti")
    assert alti["deletion_aopc"] == "" and "ALTI has no cross-attention" in alti["notes"]
    attention = next(row for row in rows if row["method"] == "attention")
    assert float(attention["comprehensiveness_10"]) >= 0 and attention["corpus"].startswith("copy")
    assert next(row for row in rows if row["method"] == "leave-one-out")["tau_loo"] == ""


def test_a_nan_is_a_failure_with_its_cause_never_averaged_in(copy_bundle, test_methods):
    bundle = copy_bundle[0]
    corpus, pairs = grading_pairs(bundle, None, 3, 0)
    card = grade(bundle, pairs, CardSettings(("broken", "leave-one-out"), FAST, sanity_pairs=0), corpus=corpus)
    broken, loo = card.row("broken"), card.row("leave-one-out")
    deletion = broken.cells["deletion_aopc"]
    assert deletion.failures == {NOT_FINITE: 3} and deletion.readings == card.n_steps
    assert deletion.text().endswith("✗") and not deletion.best and "failed at 3 of" in deletion.note()
    assert broken.cells["aer"].failures == {NOT_FINITE: 3}  # a pair with a NaN step has no alignment
    assert broken.cells["tau_loo"].failed
    assert loo.cells["deletion_aopc"].best  # the only eligible one
    assert broken.sanity is None and loo.sanity is None  # no sanity pairs asked for


def test_failures_are_counted_apart_from_the_mean():
    good = np.array([[0.8, 0.5, 0.2], [0.9, 0.1, 0.1]])
    evidence = PairEvidence(np.array([True, False]), deletion=good, insertion=good)
    cell = DeletionAopc().cell([evidence])
    assert cell.value == pytest.approx(np.mean(0.9 - good[1])) and cell.failures == {NOT_FINITE: 1} and cell.readings == 2
    assert CONSTANT.startswith("its map is constant")


def test_an_rnn_gets_its_attention_graded_and_every_other_measure_a_reason(copy_card):
    bundle, _ = tiny_bundle("copy", size=200, family="rnn")
    corpus, pairs = grading_pairs(bundle, None, 2, 0)
    card = grade(
        bundle, pairs, CardSettings(("attention", "norm", "leave-one-out", "occlusion"), FAST, sanity_pairs=1), corpus=corpus
    )
    attention = card.row("attention")
    assert attention.cells["aer"].value is not None and attention.cells["tau_loo"].value is not None
    assert "cannot hide a piece in place" in attention.cells["deletion_aopc"].reason
    norm = card.row("norm")
    assert all(cell.value is None and "no heads or value vectors" in cell.reason for cell in norm.cells.values())
    assert norm.sanity is None and attention.sanity is not None
    assert card.row("occlusion").cells["tau_loo"].value is None
    assert "removal: none (" in card.caption() and "hidden in place" not in card.caption()  # said as it is
    assert "removal: pieces hidden in place by the pad id" in copy_card.caption()


def test_models_it_cannot_grade():
    with pytest.raises(GradingError, match="none of the texts has a piece to grade"):
        grade(open_model("tagger"), [])  # the shipped tagger, given no text
    copy, _ = tiny_bundle("copy", size=100)
    with pytest.raises(GradingError, match="at least one sentence"):
        grading_pairs(copy, None, 0, 0)
    assert isinstance(ReportCard("m", "c", 0, 0, [], []).lines(), list)


def test_a_value_too_small_for_three_decimals_is_shown_with_significant_digits_and_ties_judged_as_shown():
    """A random model's probabilities of 1e-6: '0.000' for every method would hide them, and mark every one best."""
    from model.grading.metrics import Cell, shown_number

    assert [shown_number(v) for v in (0.412, 7.41e-6, -4e-5, 0.0, -0.0001234)] == [
        "0.412",
        "7.41e-06",
        "-4.00e-05",
        "0.000",
        "-1.23e-04",
    ]
    cells = [Cell(value=value) for value in (7.41e-6, 3.2e-6)]
    rows = [MethodRow(f"m{i}", f"M{i}", "", False, True, cells={"deletion_aopc": cell}) for i, cell in enumerate(cells)]
    card = ReportCard("m", "c", 1, 1, rows, ["deletion_aopc"])
    card.mark_best()
    assert [cell.best for cell in cells] == [True, False] and cells[0].text() == "7.41e-06 ★"
