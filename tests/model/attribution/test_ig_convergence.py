"""Integrated gradients converge, or say that they did not (issue 28).

* The adaptive rule (model/attribution/integration.py) on integrands with known integrals: a steep climb, a jump
  and a smooth part are integrated within the token tolerance, with more points than it started with; the
  completeness gap is |Σ − (F(1) − F(0))| / max(|F(1) − F(0)|, floor); a cap it cannot converge within is flagged.
* On a tiny model, and on one with its weight matrices tripled (steeper: the 128 points used before were 0.04 nats
  off there), each token's attribution agrees within 0.01 nats with an independent float64 integration (the midpoint
  rule with 8,192 equal steps, itself within 2e-3 of 4,096), and every gap is below 1%.
* With the cap at the 129 starting points, exactly the rows that needed more are flagged, through the measure's
  result, the measured trace and its caption.
* Against Captum's IntegratedGradients (when installed): the same objective (log p of step t's token from the
  source and target-prefix token embeddings, positions kept), the same all-zero baseline, on a float64 copy of the
  tiny model; Captum's midpoint rule ("riemann_middle") with 4,096 steps, the attributions summed over d_model per
  token, within 0.01 nats.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from model.attribution import gradients, integration
from model.attribution.gradients import prediction_scores, saliency
from model.attribution.integration import MIN_POINTS, integrate
from model.attribution.measures import compute_measure, integration_note, measured_trace
from model.attribution.transparent_pass import embed_tokens
from model.decoding.trace import Trace
from model.figures.attention import FigureOptions, trace_details
from tests.model.attribution.test_measures import CHOSEN, SOURCE, ids, tiny

STEPS = list(range(len(CHOSEN)))
TOLERANCE = 0.01  # nats: how far a converged token's attribution may be from a reference


def known(requests):
    """Three tokens: a climb of 3 nats within 1/50 of the path at α = 0.3, a jump of 0.5 at α = 0.47, and 2α; F is
    their antiderivatives' sum."""
    alpha = np.array([a for _, a in requests])  # [N]
    steep = 3 * 50 * np.exp(-50 * (alpha - 0.3)) / (1 + np.exp(-50 * (alpha - 0.3))) ** 2  # d/dα of 3σ(50(α − 0.3))
    jump = np.where(alpha < 0.47, 0.0, 0.5)
    values = 3 / (1 + np.exp(-50 * (alpha - 0.3))) + np.maximum(alpha - 0.47, 0.0) * 0.5 + alpha**2
    return values, np.stack([steep, jump, 2 * alpha], 1)  # [N], [N, 3]


def exact() -> np.ndarray:
    sigmoid = lambda a: 1 / (1 + np.exp(-50 * (a - 0.3)))  # noqa: E731
    return np.array([3 * (sigmoid(1.0) - sigmoid(0.0)), 0.5 * 0.53, 1.0])


def test_the_adaptive_rule_integrates_steep_and_jumping_integrands():
    found = integrate(known, 2, 4096, gap_tolerance=0.01, token_tolerance=1e-3, gap_floor=0.05)
    assert found.converged.all() and np.all(found.points > MIN_POINTS) and np.all(found.points <= 4096)
    np.testing.assert_allclose(found.integral, np.stack([exact()] * 2), atol=1e-3, rtol=0)
    values, _ = known([(0, 0.0), (0, 1.0)])
    change = values[1] - values[0]
    np.testing.assert_allclose(found.change, change)
    np.testing.assert_allclose(found.gap, np.abs(found.integral.sum(1) - change) / max(abs(change), 0.05))
    assert np.all(found.gap <= 0.01) and np.all(found.token_error <= 1e-3)


def test_a_cap_the_rule_cannot_converge_within_is_flagged():
    found = integrate(known, 1, MIN_POINTS + 7, gap_tolerance=0.01, token_tolerance=1e-6, gap_floor=0.05)
    assert not found.converged[0] and found.points[0] == MIN_POINTS + 4  # one more panel halved, then no room
    assert found.token_error[0] > 1e-6
    assert integration.integration_text(0.123, 136, False).startswith("completeness gap 12.3%: NOT CONVERGED within 136")
    assert integration.integration_text(0.004, 1153, True) == "completeness gap 0.4% (converged, 1,153 points)"
    assert integration.integration_text(0.0004, 129, True) == "completeness gap <0.1% (converged, 129 points)"


def midpoint_float64(model, step: int, n: int) -> np.ndarray:
    """An independent integration: the midpoint rule with ``n`` equal steps on a float64 copy of the model, per token
    (the source's, then the target prefix's up to the step)."""
    source_ids, input_ids = ids()
    source = embed_tokens(model, source_ids, "source").detach()  # [1, S, d_model]
    target = embed_tokens(model, input_ids, "target")[:, : step + 1].detach()  # [1, step + 1, d_model]
    alpha = torch.tensor((np.arange(n) + 0.5) / n, dtype=torch.float64)[:, None, None]  # [n, 1, 1]
    scaled_source, scaled_target = (source * alpha).requires_grad_(), (target * alpha).requires_grad_()
    scores = prediction_scores(model, scaled_source, scaled_target, torch.full((n,), step), torch.full((n,), CHOSEN[step]))
    source_gradient, target_gradient = torch.autograd.grad(scores.sum(), (scaled_source, scaled_target))
    per_token = torch.cat([(source_gradient * source).sum(-1), (target_gradient * target).sum(-1)], 1)  # [n, tokens]
    return per_token.mean(0).numpy()


@pytest.mark.parametrize("factor", [1.0, 3.0])
def test_converged_attributions_agree_with_an_independent_float64_integration(factor):
    model = tiny()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(factor if parameter.dim() == 2 else 1.0)  # weight matrices and embeddings
    found = saliency(model, *ids(), STEPS, CHOSEN, method="ig")
    reference_model = copy.deepcopy(model).double()
    for step in STEPS:
        reference = midpoint_float64(reference_model, step, 8192)
        assert np.abs(reference - midpoint_float64(reference_model, step, 4096)).max() < 2e-3  # the reference converged
        mine = np.concatenate([found.source[step], found.target[step, : step + 1]])
        assert np.abs(mine - reference).max() <= TOLERANCE
    assert np.all(found.completeness_gap < 0.01) and found.converged.all()


def a_trace() -> Trace:
    n, s = len(CHOSEN), len(SOURCE)
    tokens = [f"▁t{i}" for i in CHOSEN]
    return Trace(
        None,
        np.zeros((1, 1, n, n), np.float32),
        np.zeros((1, 1, n, s), np.float32),
        [f"▁s{i}" for i in SOURCE],
        tokens,
        ["<s>"] + tokens[:-1],
        chosen_ids=np.array(CHOSEN),
    )


def test_rows_that_need_more_than_the_cap_are_flagged_all_the_way_to_the_caption(monkeypatch):
    model = tiny()
    needed_more = saliency(model, *ids(), STEPS, CHOSEN, method="ig").points > MIN_POINTS
    monkeypatch.setattr(gradients, "IG_MAX_POINTS", MIN_POINTS)  # the cap: the starting points, no refinement
    result = compute_measure(model, SOURCE, CHOSEN, "ig")
    assert np.all(result.integration_points == MIN_POINTS)
    assert needed_more.any() and not needed_more[-1]  # the fact this test reads (a seed-4 tiny model's)
    assert np.array_equal(result.integration_converged, ~needed_more)
    assert np.all(result.completeness_gap[result.integration_converged] <= 0.01)
    failed = np.flatnonzero(needed_more)
    shown = measured_trace(a_trace(), result)
    gaps = shown.completeness_gap
    listed = ", ".join(str(step + 1) for step in failed)
    assert integration_note(shown) == (
        f"step {len(CHOSEN)}: completeness gap {gaps[-1]:.1%} (converged, {MIN_POINTS} points); "
        f"NOT CONVERGED at step{'s' if len(failed) > 1 else ''} {listed} (gap up to {gaps[failed].max():.1%}): approximate"
    )
    first = shown.at_step(int(failed[0]) + 1)  # the view at the first step that did not converge
    assert integration_note(first).startswith(f"step {failed[0] + 1}: completeness gap {gaps[failed[0]]:.1%}: NOT CONVERGED")
    assert "Integrated gradients, step" in "\n".join(trace_details(shown, FigureOptions()))
    # Rows not computed yet (the window computes a few at a time) say nothing.
    partial = measured_trace(a_trace(), compute_measure(model, SOURCE, CHOSEN, "ig", steps=[0]))
    assert list(partial.integration_points[1:]) == [0] * (len(CHOSEN) - 1) and np.isnan(partial.completeness_gap[1:]).all()
    assert integration_note(partial).startswith("step 1: ") and integration_note(a_trace()) == ""


def captum_attributions(model, step: int, n_steps: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Captum's IntegratedGradients of the objective saliency explains (log p of step ``step``'s token from the source
    and target-prefix token embeddings, positions kept) from the all-zero baseline, summed over d_model per token:
    (source [S], target prefix [step + 1])."""
    captum_attr = pytest.importorskip("captum.attr")
    source_ids, input_ids = ids()
    source = embed_tokens(model, source_ids, "source").detach()  # [1, S, d_model]
    target = embed_tokens(model, input_ids, "target")[:, : step + 1].detach()  # [1, step + 1, d_model]

    def objective(source_embeddings, target_embeddings):  # [n, S, d_model], [n, step + 1, d_model] -> [n]
        n = source_embeddings.shape[0]
        return prediction_scores(
            model, source_embeddings, target_embeddings, torch.full((n,), step), torch.full((n,), CHOSEN[step])
        )

    ig = captum_attr.IntegratedGradients(objective)
    theirs = ig.attribute(
        (source, target), baselines=(source * 0, target * 0), n_steps=n_steps, method=method, internal_batch_size=4096
    )
    return theirs[0].sum(-1)[0].numpy(), theirs[1].sum(-1)[0].numpy()


def test_the_same_as_captums_integrated_gradients():
    model = copy.deepcopy(tiny()).double()
    step = 3
    theirs = captum_attributions(model, step, 4096, "riemann_middle")
    found = saliency(model, *ids(), [step], [CHOSEN[step]], method="ig")
    np.testing.assert_allclose(found.source[0], theirs[0], atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(found.target[0, : step + 1], theirs[1], atol=TOLERANCE, rtol=0)


def test_a_cap_below_the_starting_points_starts_with_fewer_panels():
    assert [integration.start_panels(cap) for cap in (1, 5, 33, 128, 129, 4096)] == [1, 1, 8, 31, 32, 32]
    found = integrate(known, 1, 33, gap_tolerance=0.01, token_tolerance=1e-6, gap_floor=0.05)
    assert found.points[0] == 33 and not found.converged[0]  # 8 panels, no room to halve one
    np.testing.assert_allclose(found.integral[0, 2], 1.0, atol=1e-9)  # Simpson is exact on 2α


def test_a_measure_can_be_stopped_between_two_batches_of_its_gradient_passes():
    """A row of integrated gradients takes seconds on a long sentence: the window stops one that is no longer wanted
    between two batches of its passes (``between_batches`` raises), not after the row."""
    model = tiny()
    calls: list[int] = []

    class Stop(Exception):
        pass

    def count() -> None:
        calls.append(1)

    whole = compute_measure(model, SOURCE, CHOSEN, "ig", steps=[len(CHOSEN) - 1], between_batches=count)
    batches = len(calls)
    assert batches > 2  # the first 129 points, then each refinement's
    plain = compute_measure(model, SOURCE, CHOSEN, "ig", steps=[len(CHOSEN) - 1])  # told or not, the same result
    assert all(np.array_equal(whole.values[kind], plain.values[kind]) for kind in plain.values)

    def stop_at_the_second() -> None:
        calls.append(1)
        if len(calls) > batches + 1:
            raise Stop

    with pytest.raises(Stop):
        compute_measure(model, SOURCE, CHOSEN, "ig", steps=[len(CHOSEN) - 1], between_batches=stop_at_the_second)
    assert len(calls) == batches + 2  # nothing ran after the batch that was stopped
