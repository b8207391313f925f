"""The interventions of a given decoding (model/interventions/given.py): a forced token is read as it was decoded (the
lens's chosen token, the attribution's target, patching's clean run), not replaced by the greedy translation's."""

from __future__ import annotations

import numpy as np
import pytest

from model.decoding.stepper import Stepper
from model.interventions.given import given_decoder_lens, given_logit_attribution, given_logit_lens, given_patching
from model.interventions.hooked import InterventionError
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.tables import lens_rows

SENTENCE = "the cat sees the dog"


@pytest.fixture(scope="module")
def forced(default_bundle):
    """SENTENCE decoded with step 2 forced to the step's second candidate: (source ids, chosen ids, pieces)."""
    stepper = Stepper(default_bundle, SENTENCE)
    stepper.run()
    greedy = stepper.target_ids()
    stepper.jump(2)
    other = int(stepper.steps[1].candidate_ids[1])
    stepper.force(1, other)
    stepper.run()
    chosen = stepper.target_ids()
    assert chosen[1] == other != greedy[1]
    return list(stepper.source_ids), chosen, default_bundle.target_tokenizer.pieces(chosen)


def test_the_lens_and_the_attribution_read_the_forced_tokens(default_bundle, forced):
    source_ids, chosen, pieces = forced
    lens = given_logit_lens(default_bundle, source_ids, chosen)
    assert list(lens.chosen_ids) == chosen and lens.chosen_tokens == pieces
    assert lens.decoder_input_tokens[2] == pieces[1]  # the forced token is the next step's input
    assert int(lens.chosen_ranks[-1, 1]) > 0  # the model itself preferred another token there
    assert [row["chosen"] for row in lens_rows(lens) if row["reading"] == lens.readings[-1]] == pieces
    greedy = bundle_logit_lens(default_bundle, SENTENCE)
    assert not np.array_equal(greedy.chosen_ids, lens.chosen_ids)
    attribution = given_logit_attribution(default_bundle, source_ids, chosen)
    assert attribution.target_tokens == pieces and np.abs(attribution.remainder).max() < 1e-3
    assert len(given_decoder_lens(default_bundle, source_ids).layers) == 3  # it reads the source only


def test_patching_follows_the_given_output_and_nothing_decoded_is_refused(default_bundle, forced):
    source_ids, chosen, pieces = forced
    setup = given_patching(default_bundle, SENTENCE, "the cats see the dog", 1, chosen)  # the forced step
    assert setup.labels.target == ["<s>", pieces[0]] and setup.clean_id == chosen[1]
    assert setup.labels.clean_token == pieces[1]  # the forced token is the clean run's, not the greedy one
    with pytest.raises(InterventionError, match="decode a step first"):
        given_logit_lens(default_bundle, source_ids, [])
