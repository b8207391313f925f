"""Known answers on a model whose predictions depend on exactly one source piece (tests/model/grading/constructed.py):
leave-one-out, occlusion and integrated gradients put all their weight there; comprehensiveness of that one piece is
the whole drop and sufficiency is complete (nothing is lost with it alone); deletion and insertion of the true order
beat the random order's; the perturbed passes equal the model's own pass with those pieces padded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.grading import faithfulness
from model.grading.baselines import LeaveOneOut, Occlusion, RandomOrder
from model.grading.methods import METHODS, MethodSettings, Reading
from model.grading.scoring import PairScorer
from tests.model.grading.constructed import CHOSEN, SOURCE, STEPS, one_piece_case, one_piece_model


@pytest.fixture(scope="module")
def reading():
    model = one_piece_model()
    case = one_piece_case(model)
    return Reading(model, case, PairScorer(model, case), MethodSettings(ig_points=129, lime_samples=32, shap_samples=32))


def test_the_perturbed_passes_are_the_models_own(reading):
    keep = np.ones((1, len(SOURCE)), bool)
    keep[0, [0, CHOSEN]] = False
    source = torch.tensor([SOURCE + [3]])
    source[0, [0, CHOSEN]] = 0  # the pad id
    with torch.no_grad():
        logits = reading.model.logits(reading.model(source, torch.tensor([reading.case.decoder_inputs])))
        expected = torch.log_softmax(logits, -1)[0, torch.arange(STEPS), reading.case.references].double().numpy()
    np.testing.assert_allclose(reading.scorer.hidden_all(keep)[0], expected, atol=1e-6)
    np.testing.assert_allclose(reading.scorer.hidden(keep.repeat(STEPS, 0), np.arange(STEPS)), expected, atol=1e-6)


@pytest.mark.parametrize("method", [LeaveOneOut, Occlusion, METHODS["ig"]])
def test_all_the_weight_is_on_the_one_piece(reading, method):
    source = method().maps(reading).source  # [T, S]
    magnitude = np.abs(source)
    assert np.all(magnitude[:, CHOSEN] > 1e-3)
    np.testing.assert_allclose(magnitude[:, CHOSEN] / magnitude.sum(1), 1.0, atol=1e-4)


def test_comprehensiveness_is_the_whole_drop_and_sufficiency_complete(reading):
    source = LeaveOneOut().maps(reading).source
    deletion, insertion = faithfulness.curves(reading.scorer, {"loo": source})["loo"]
    full = np.exp(reading.scorer.full)
    empty = np.exp(reading.scorer.hidden_all(np.zeros((1, len(SOURCE)), bool))[0])
    assert np.all(full - empty > 0.2)  # a real drop to explain
    np.testing.assert_allclose(faithfulness.comprehensiveness(deletion), np.repeat((full - empty)[:, None], 3, 1), atol=1e-6)
    np.testing.assert_allclose(faithfulness.sufficiency(deletion, insertion), 0.0, atol=1e-6)
    assert faithfulness.pieces_at(0.1, 8) == 1 and faithfulness.pieces_at(0.5, 8) == 4 and faithfulness.pieces_at(0.2, 3) == 1


def test_the_true_order_beats_the_random_order(reading):
    true_order = Occlusion().maps(reading).source
    randoms = {f"random {seed}": RandomOrder().maps(Reading(**{**vars(reading), "index": seed})).source for seed in range(5)}
    found = faithfulness.curves(reading.scorer, {"true": true_order, **randoms})
    true_deletion, true_insertion = found.pop("true")
    random_deletion = np.mean([faithfulness.deletion_aopc(d).mean() for d, _ in found.values()])
    random_insertion = np.mean([faithfulness.insertion_aopc(i).mean() for _, i in found.values()])
    assert faithfulness.deletion_aopc(true_deletion).mean() > random_deletion + 0.05
    assert faithfulness.insertion_aopc(true_insertion).mean() > random_insertion + 0.05
    # the true order's deletion curve falls at once: D_k = p(empty) for every k >= 1
    np.testing.assert_allclose(true_deletion[:, 1:], true_deletion[:, -1:].repeat(len(SOURCE), 1), atol=1e-6)


def test_leave_one_out_of_the_prefix_is_the_shifted_pass(reading):
    table = reading.scorer.prefix_left_out()  # [T, T]
    assert np.isnan(table[:, 0]).all() and np.isnan(table[0]).all()
    inputs = torch.tensor([[reading.case.decoder_inputs[0], *reading.case.decoder_inputs[2:]]])  # input 1 left out
    with torch.no_grad():
        logits = reading.model.logits(reading.model(torch.tensor([SOURCE + [3]]), inputs))[0]  # [T - 1, V]
        expected = torch.log_softmax(logits, -1)[torch.arange(STEPS - 1), reading.case.references[1:]].numpy()
    np.testing.assert_allclose(table[1:, 1], expected, atol=1e-6)
