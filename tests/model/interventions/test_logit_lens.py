"""The logit lens (model/interventions/logit_lens.py) against independent readings:

* its last reading is the model's own prediction: the Stepper's candidates and probabilities on the shipped default
  model (post-norm), and a pre-norm model's inspection pass through its final norm, within 1e-5;
* its first reading is the embeddings (token and position) through the final norm and the output projection;
* the chosen token's rank counts the tokens each reading scores higher, and its probability is the reading's own.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from model.decoding.stepper import Stepper
from model.interventions.logit_lens import bundle_logit_lens, logit_lens
from tests.model.interventions.models import tiny

SOURCE = [5, 6, 7, 8, 9, 3]
CHOSEN = [13, 14, 15, 16, 3]


def test_the_last_reading_is_the_steppers_prediction(default_bundle):
    stepper = Stepper(default_bundle, "the cat sees the dog")
    stepper.run()
    trace = stepper.trace()
    k = trace.candidate_ids.shape[1]
    pieces = default_bundle.target_tokenizer.pieces
    lens = logit_lens(default_bundle.model, stepper.source_ids, trace.chosen_ids.tolist(), k, pieces)
    assert not lens.final_norm and len(lens.readings) == 1 + 3 * 3 and lens.readings[-1] == "L3 feed-forward"
    np.testing.assert_array_equal(lens.candidate_ids[-1], trace.candidate_ids)
    np.testing.assert_allclose(lens.candidate_probabilities[-1], trace.candidate_probabilities, atol=1e-5)
    np.testing.assert_allclose(np.log(lens.chosen_probabilities[-1]), trace.log_probabilities, atol=1e-4)
    assert (lens.chosen_ranks[-1] == 0).all() and lens.candidate_tokens[-1] == trace.candidate_tokens
    assert lens.decoder_input_tokens == trace.decoder_input_tokens
    again = bundle_logit_lens(default_bundle, "the cat sees the dog", k)
    np.testing.assert_array_equal(again.chosen_ids, trace.chosen_ids)


def test_a_pre_norm_models_readings_pass_its_final_norm():
    model = tiny("pre")
    lens = logit_lens(model, SOURCE, CHOSEN, k=4)
    inputs = torch.tensor([[2] + CHOSEN[:-1]])
    with torch.no_grad():
        last = torch.softmax(model.inspect(torch.tensor([SOURCE]), inputs)[0][0], -1)  # [T, V]
        embedded = model.target_embedding(inputs[0]) * math.sqrt(model.config.d_model) + model.positional_table[:5]
        first = torch.softmax(model.logits(model.decoder_norm(embedded)), -1)  # [T, V]
    assert lens.final_norm
    for reading, expected in ((-1, last), (0, first)):
        top = expected.topk(4, -1)
        np.testing.assert_array_equal(lens.candidate_ids[reading], top.indices.numpy())
        np.testing.assert_allclose(lens.candidate_probabilities[reading], top.values.numpy(), atol=1e-5)
        chosen = expected[torch.arange(5), torch.tensor(CHOSEN)]  # [T]
        np.testing.assert_allclose(lens.chosen_probabilities[reading], chosen.numpy(), atol=1e-5)
        ranks = (expected > chosen[:, None]).sum(-1)  # [T]
        np.testing.assert_array_equal(lens.chosen_ranks[reading], ranks.numpy())
    assert lens.candidate_tokens[0][0] == [str(i) for i in lens.candidate_ids[0, 0]]
