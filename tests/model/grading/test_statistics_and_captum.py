"""The rank statistics agree with SciPy's; the project's integrated gradients agree with Captum's IntegratedGradients
within 1e-4.

Two IG comparisons. On the model as trained, Captum evaluated on the project's own points and weights (the same
quadrature) agrees within 1e-6. Across rules: a float64 copy of the tiny model of tests/model/attribution/ with its
feed-forward layers made constant (their ReLUs would make the integrand jump, and no rule with a fixed set of points
agrees with another one within 1e-4 across a jump); the same objective (log p of step t's token from the source and
target-prefix token embeddings, positions kept), the same all-zero baseline, the same number of points: the
project's adaptive Simpson rule on its first 129 equally spaced points against Captum's Gauss-Legendre rule with 129
steps.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from model.attribution.gradients import prediction_scores, saliency
from model.attribution.transparent_pass import embed_tokens
from model.grading.statistics import average_ranks, kendall_tau_b, spearman
from tests.model.attribution.test_ig_convergence import captum_attributions
from tests.model.attribution.test_measures import CHOSEN, ids, tiny


@pytest.mark.parametrize("seed", range(6))
def test_kendall_and_spearman_are_scipys(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 9).astype(float)  # ties on purpose
    b = a + rng.integers(-2, 3, 9)
    assert kendall_tau_b(a, b) == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)
    assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    np.testing.assert_allclose(average_ranks(a), stats.rankdata(a))


def test_undefined_statistics_are_nan_and_identical_maps_are_one():
    assert np.isnan(kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])) and np.isnan(kendall_tau_b([1.0], [2.0]))
    assert spearman(np.ones(5), np.ones(5)) == 1.0  # a map that does not change at all
    assert np.isnan(spearman(np.ones(5), np.arange(5.0)))


def smooth_tiny() -> torch.nn.Module:
    model = copy.deepcopy(tiny()).double()
    with torch.no_grad():
        for layer in [*model.encoder_layers, *model.decoder_layers]:
            layer.feed_forward.expand.weight.zero_()  # relu(b1) is a constant: no kinks
    return model


@pytest.mark.parametrize("step", [0, 2, 4])
def test_integrated_gradients_agree_with_captums_within_1e_4(step):
    model = smooth_tiny()
    theirs = captum_attributions(model, step, 129, "gausslegendre")
    found = saliency(model, *ids(), [step], [CHOSEN[step]], method="ig", max_points=129)
    assert found.points[0] == 129
    np.testing.assert_allclose(found.source[0], theirs[0], atol=1e-4, rtol=0)
    np.testing.assert_allclose(found.target[0, : step + 1], theirs[1], atol=1e-4, rtol=0)


@pytest.mark.parametrize("step", [0, 3])
def test_on_the_same_points_and_weights_captum_gives_the_same_integrated_gradients_with_relus(step):
    """The model as trained (its ReLU kinks kept): Captum's IntegratedGradients evaluated on the project's own
    quadrature — its first round's 129 equally spaced α with composite Simpson weights (model/attribution/
    integration.py), passed to Captum's ``_attribute`` as ``step_sizes_and_alphas`` — gives the project's attributions
    within 1e-6 (measured: under 1e-8)."""
    captum_attr = pytest.importorskip("captum.attr")
    model = copy.deepcopy(tiny()).double()
    alphas = np.linspace(0.0, 1.0, 129)
    weights = np.ones(129)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    weights /= 3 * 128  # composite Simpson, spacing 1/128
    source_ids, input_ids = ids()
    source = embed_tokens(model, source_ids, "source").detach()  # [1, S, d_model]
    target = embed_tokens(model, input_ids, "target")[:, : step + 1].detach()  # [1, step + 1, d_model]

    def objective(source_embeddings, target_embeddings):  # [n, S, d_model], [n, step + 1, d_model] -> [n]
        n = source_embeddings.shape[0]
        return prediction_scores(
            model, source_embeddings, target_embeddings, torch.full((n,), step), torch.full((n,), CHOSEN[step])
        )

    theirs = captum_attr.IntegratedGradients(objective)._attribute(
        (source, target), (source * 0, target * 0), n_steps=129, step_sizes_and_alphas=(weights.tolist(), alphas.tolist())
    )
    found = saliency(model, *ids(), [step], [CHOSEN[step]], method="ig", max_points=129)
    assert found.points[0] == 129
    np.testing.assert_allclose(found.source[0], theirs[0].sum(-1)[0].numpy(), atol=1e-6, rtol=0)
    np.testing.assert_allclose(found.target[0, : step + 1], theirs[1].sum(-1)[0].numpy(), atol=1e-6, rtol=0)
