"""Direct logit attribution (model/interventions/logit_attribution.py):

* the logit it decomposes is the model's own (its inspection pass), for a token and for a difference of two;
* pre-norm, tied or untied (an output bias): the parts sum to the logit within 1e-5;
* post-norm: the parts plus the reported remainder are the logit, and the remainder is rounding; on the shipped
  default model as well;
* a part checked on its own: the last feed-forward block's share is its output through the one norm after it, with
  that norm's scale taken from the model's own activations (pre-norm: the final norm; post-norm: the layer's last).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.interventions.hooked import run_hooked
from model.interventions.logit_attribution import PART_KINDS, bundle_logit_attribution, logit_attribution
from tests.model.interventions.models import tiny

SOURCE = [5, 6, 7, 8, 9, 3]
CHOSEN = [13, 14, 15, 16, 3]
COMPARED = [17, 17, 18, -1, 19]
INPUTS = torch.tensor([[2] + CHOSEN[:-1]])


def model_logits(model, compared=None) -> np.ndarray:
    """The chosen tokens' logits (minus the compared ones') from the model's inspection pass: [T]."""
    with torch.no_grad():
        logits = model.inspect(torch.tensor([SOURCE]), INPUTS)[0][0]  # [T, V]
    values = logits[torch.arange(5), torch.tensor(CHOSEN)].numpy()  # [T]
    for step, other in enumerate(compared or []):
        values[step] -= float(logits[step, other]) if other >= 0 else 0.0
    return values


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("compared", [None, COMPARED])
def test_the_parts_sum_to_the_models_logit(norm, tied, compared):
    model = tiny(norm, tied=tied)
    result = logit_attribution(model, SOURCE, CHOSEN, compared)
    np.testing.assert_allclose(result.logits, model_logits(model, compared), atol=1e-5)
    np.testing.assert_allclose(result.values.sum(1) + result.remainder, result.logits, atol=1e-6)
    np.testing.assert_allclose(result.values.sum(1), result.logits, atol=1e-5)  # the remainder is rounding
    assert result.values.shape == (5, len(result.parts)) and set(result.part_kinds) <= set(PART_KINDS)
    assert ("output bias" in result.parts) == (not tied)
    assert ("final norm bias" in result.parts) == (norm == "pre") and ("L2 norm biases" in result.parts) == (norm == "post")
    assert result.parts[:3] == ["token embedding", "positions", "L1 self H1"] and "L2 cross H4" in result.parts


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_last_feed_forward_part_is_its_output_through_the_norm_after_it(norm):
    model = tiny(norm)
    result = logit_attribution(model, SOURCE, CHOSEN)
    with torch.no_grad():
        run = run_hooked(model, torch.tensor([SOURCE]), INPUTS, capture=["decoder.1.mlp_out", "decoder.1.cross.resid"])
        output = run.activations["decoder.1.mlp_out"][0]  # [T, d_model]
        stream = run.activations["decoder.1.cross.resid"][0] + output  # [T, d_model] what the norm after it reads
        norm_after = model.decoder_norm if norm == "pre" else model.decoder_stack[1].norms[2]
        scale = torch.sqrt(stream.var(-1, unbiased=False, keepdim=True) + norm_after.eps)  # [T, 1]
        through = norm_after.weight * (output - output.mean(-1, keepdim=True)) / scale  # [T, d_model]
        expected = (through * model.target_embedding.weight[torch.tensor(CHOSEN)]).sum(-1)  # [T]
    np.testing.assert_allclose(result.values[:, result.parts.index("L2 feed-forward")], expected.numpy(), atol=1e-5)


def test_the_default_models_remainder_is_rounding(default_bundle):
    result = bundle_logit_attribution(default_bundle, "the cat sees the dog")
    assert result.target_tokens[:3] == ["▁le", "▁chat", "▁voit"]
    assert np.abs(result.remainder).max() < 1e-4 * max(1.0, float(np.abs(result.logits).max()))
    np.testing.assert_allclose(result.values.sum(1) + result.remainder, result.logits, atol=1e-5)
