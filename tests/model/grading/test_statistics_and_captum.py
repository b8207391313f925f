"""The rank statistics agree with SciPy's; the project's integrated gradients agree with Captum's IntegratedGradients
within 1e-4.

The IG comparison: a float64 copy of the tiny model of tests/model/attribution/ with its feed-forward layers made
constant (their ReLUs would make the integrand jump, and no rule with a fixed set of points agrees with another one
within 1e-4 across a jump); the same objective (log p of step t's token from the source and target-prefix token
embeddings, positions kept), the same all-zero baseline, the same number of points: the project's adaptive Simpson
rule on its first 129 equally spaced points against Captum's Gauss-Legendre rule with 129 steps.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from model.attribution.gradients import saliency
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
