"""Issue 39: two "layer average" AERs. ``heads --aer-table`` printed "layer average 0.466" (the mean over layers of each
layer's AER) while ``evaluate --json`` gave ``aer_layer_average`` 0.123 (the best layer's). One definition now: the AER
of the best layer's mean over heads (the heads' weights averaged, then read: not the mean of the heads' AERs), which
both print for the same pairs and seed, and which the mean of the heads' AERs is not."""

from __future__ import annotations

import json
import re

import numpy as np

from model.cli.commands import main
from model.inspection.alignment import measured_aer
from tests.conftest import saved_model

PAIRS = ("--aer-pairs", "12", "--aer-seed", "3")


def test_heads_and_evaluate_give_one_best_layer_mean(toy_fr_bundle, tmp_path, capsys):
    bundle = toy_fr_bundle[0]
    model = saved_model(bundle, tmp_path)
    table = ["heads", "--model", str(model), "--corpus", "toy-fr", "--aer-table", str(tmp_path / "aer.csv")]
    assert main([*table, "--measures", "attention", "--quiet", *PAIRS]) == 0
    printed = capsys.readouterr().out
    match = re.search(r"best layer's mean over heads ([\d.]+) \(L(\d+)\)", printed)
    assert match, printed
    assert "layer average" not in printed
    assert main(["evaluate", "--model", str(model), "--corpus", "toy-fr", "--n", "3", "--json", *PAIRS]) == 0
    scores = json.loads(capsys.readouterr().out)
    report = measured_aer(bundle, 12, 3)
    aer, layer = report.best_layer
    assert (float(match[1]), int(match[2])) == (round(aer, 3), layer + 1)
    assert scores["aer_layer_average"] == round(aer, 6) == round(float(report.layer_aer[0].min()), 6)
    heads_mean = report.head_aer[0].mean(axis=1)  # [layers]: the mean of each layer's heads' AERs, another number
    assert not np.allclose(heads_mean, report.layer_aer[0])
