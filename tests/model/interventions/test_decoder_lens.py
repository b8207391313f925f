"""DecoderLens (model/interventions/decoder_lens.py):

* reading the last encoder layer is the model's own greedy translation: the Stepper's tokens, text and log
  probabilities on the shipped default model (post-norm: no final norm);
* reading an earlier layer of a pre-norm model (through its final norm) gives tokens that a full teacher-forced pass
  over that layer's normalised output also chooses, with the same log probabilities.
"""

from __future__ import annotations

import numpy as np
import torch

from model.decoding.stepper import Stepper
from model.interventions.decoder_lens import bundle_decoder_lens, decoder_lens
from model.interventions.hooked import greedy_output, run_hooked
from tests.model.interventions.models import tiny

SOURCE = [5, 6, 7, 8, 9, 3]


def test_the_last_layer_is_the_steppers_translation(default_bundle):
    text = "the cats see the dog"
    stepper = Stepper(default_bundle, text)
    stepper.run()
    trace = stepper.trace()
    lens = bundle_decoder_lens(default_bundle, text)
    assert lens.layers == ["L1", "L2", "L3"] and not lens.final_norm
    assert lens.token_ids[-1] == trace.chosen_ids.tolist() and lens.tokens[-1] == trace.target_tokens
    assert lens.translations[-1] == stepper.translation() == "les chats voient le chien"
    np.testing.assert_allclose(lens.log_probabilities[-1], trace.log_probabilities, atol=1e-4)
    assert lens.total_log_probabilities[-1] == np.float32(lens.log_probabilities[-1].sum())


def test_an_earlier_layer_is_read_through_the_final_norm():
    model = tiny("pre", seed=5)
    lens = decoder_lens(model, SOURCE)
    assert lens.final_norm and lens.token_ids[-1] == greedy_output(model, torch.tensor([SOURCE]))
    tokens = lens.token_ids[0]
    with torch.no_grad():
        source = torch.tensor([SOURCE])
        first = run_hooked(model, source, torch.tensor([[2]]), capture=["encoder.0.resid_post"]).activations["encoder.0.resid_post"]
        inputs = torch.tensor([[2] + tokens[:-1]])
        logits = run_hooked(model, source, inputs, memory=model.encoder_norm(first)).logits(model)[0]  # [T, V]
    log_probabilities = torch.log_softmax(logits, -1)
    assert log_probabilities.argmax(-1).tolist() == tokens
    chosen = log_probabilities[torch.arange(len(tokens)), torch.tensor(tokens)].numpy()
    np.testing.assert_allclose(lens.log_probabilities[0], chosen, atol=1e-5)
    assert lens.translations[0] == " ".join(str(token) for token in tokens)
