"""The interventions controller without a window (and without Qt): the sentence's logit lens, DecoderLens and logit
attribution computed only while the view is active and equal to the core's, a step only moving the highlighted step,
patching's preview then its exact grids, bad input and a model that cannot be patched refused with one line; a tiny
Hugging Face T5 gets the logit lens and patching, and one line on the rest. (The view:
tests/explorer/test_interventions_window.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.controllers.interventions import ATTRIBUTION, DECODER_LENS, LENS, PATCHING
from model.interventions.decoder_lens import bundle_decoder_lens
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import activation_patching, attribution_patching
from tests.explorer.controllers.recording import WAIT_S, Recorder

SENTENCE = "the cat sees the dog"
CORRUPTED = "the cats see the dog"  # a number minimal pair: as many pieces as SENTENCE
EVENTS = ("ready", "step_changed", "message", "running_changed", "progress")


@pytest.fixture
def opened(controllers, default_bundle):
    """The default model open with SENTENCE decoded, the interventions controller recorded."""
    controllers.explore.set_model(default_bundle)
    controllers.explore.translate(SENTENCE)
    return controllers.interventions, Recorder(controllers.interventions, *EVENTS)


def test_readings_follow_the_sentence_only_while_shown_and_a_step_moves_the_highlight(controllers, opened, default_bundle):
    interventions, events = opened
    assert not interventions.running and interventions.results == {}  # hidden: nothing computed
    interventions.set_active(True)
    assert interventions.running
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    assert [args[0] for args in events.of("ready")] == [LENS, DECODER_LENS, ATTRIBUTION]
    lens, expected_lens = interventions.results[LENS], bundle_logit_lens(default_bundle, SENTENCE, 5)
    assert lens.readings == expected_lens.readings and lens.readings[0] == "embeddings" and len(lens.readings) == 10
    assert np.allclose(lens.chosen_probabilities, expected_lens.chosen_probabilities, atol=1e-6)
    assert lens.candidate_tokens == expected_lens.candidate_tokens
    decoder = interventions.results[DECODER_LENS]
    assert decoder.translations == bundle_decoder_lens(default_bundle, SENTENCE).translations and len(decoder.layers) == 3
    attribution, expected = interventions.results[ATTRIBUTION], bundle_logit_attribution(default_bundle, SENTENCE)
    assert np.allclose(attribution.values, expected.values, atol=1e-5) and attribution.parts == expected.parts
    assert np.abs(attribution.remainder).max() < 1e-3
    # A step of the Explore tab moves the step, and computes nothing again.
    computed = dict(interventions.results)
    controllers.explore.go_to_step(2)
    assert events.of("step_changed")[-1] == (1,) and not interventions.running
    assert all(interventions.results[tool] is computed[tool] for tool in computed)
    # Hidden, a new sentence waits; shown again, it is computed.
    interventions.set_active(False)
    controllers.explore.translate("the dog sees the cat")
    assert not interventions.running and interventions.computed.text == SENTENCE
    interventions.set_active(True)
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    expected_translations = bundle_decoder_lens(default_bundle, "the dog sees the cat").translations
    assert interventions.results[DECODER_LENS].translations == expected_translations


def test_patching_shows_the_preview_then_the_exact_grids(controllers, opened, default_bundle):
    interventions, events = opened
    assert interventions.patch(SENTENCE, CORRUPTED, "noising")
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    shown = [args[1] for args in events.of("ready") if args[0] == PATCHING and args[1] is not None]
    assert [result.method for result in shown] == ["attribution", "exact"]
    preview, exact = shown
    expected_preview = attribution_patching(default_bundle, SENTENCE, CORRUPTED, direction="noising")
    expected_exact = activation_patching(default_bundle, SENTENCE, CORRUPTED, direction="noising")
    assert exact.direction == "noising" and exact.step == expected_exact.step
    labels = expected_exact.labels
    assert (exact.labels.clean_token, exact.labels.compared_token) == (labels.clean_token, labels.compared_token)
    for name, grid in expected_exact.grids.items():
        assert np.allclose(exact.grids[name].values, grid.values, atol=1e-4), name
        assert np.allclose(preview.grids[name].values, expected_preview.grids[name].values, atol=1e-4), name
    assert interventions.results[PATCHING] is exact


def test_bad_input_is_one_line_and_changes_nothing_else(controllers, opened):
    interventions, events = opened
    interventions.set_active(True)
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    readings = dict(interventions.results)
    assert not interventions.patch(SENTENCE, "  ")
    assert events.of("message")[-1] == ("Patching: the corrupted sentence is empty: type one",)
    assert interventions.patch(SENTENCE, "the cats see the dogs now")
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    assert events.of("message")[-1] == (
        "Patching could not be computed: the clean source has 6 pieces and the corrupted one 8: patching needs equal counts",
    )
    assert PATCHING not in interventions.results and interventions.results == readings
    assert controllers.explore.text == SENTENCE and controllers.explore.trace is not None


def test_a_model_that_cannot_be_patched_says_so(controllers, toy_fr_rnn_bundle):
    interventions = controllers.interventions
    events = Recorder(interventions, *EVENTS)
    controllers.explore.set_model(toy_fr_rnn_bundle[0])
    controllers.explore.translate(SENTENCE)
    why = interventions.unavailable()
    assert why.startswith("Interventions (logit lens, DecoderLens, logit attribution, patching): this model (RNN")
    assert "this model (RNN encoder-decoder with attention) has no" in why and "\n" not in why and interventions.tools() == ()
    interventions.set_active(True)
    assert events.of("message")[-1] == (why,) and not interventions.running
    assert not interventions.patch(SENTENCE, CORRUPTED) and events.of("message")[-1] == (why,)
    assert interventions.pairs("number") == [] and interventions.results == {}


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory):
    """A tiny Hugging Face T5 built here (model/pretrained/tiny.py)."""
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.loading import load_pretrained  # deferred: the hf extra may be absent (skipped above)
    from model.pretrained.tiny import build  # deferred: the hf extra may be absent (skipped above)

    return load_pretrained(str(build("t5", tmp_path_factory.mktemp("tiny-t5") / "t5")))


def test_a_pretrained_t5_gets_every_intervention(controllers, tiny_t5):
    interventions = controllers.interventions
    events = Recorder(interventions, *EVENTS)
    controllers.explore.set_model(tiny_t5)
    controllers.explore.translate("The house is small .")
    assert interventions.unavailable() == "" and set(interventions.tools()) == {LENS, DECODER_LENS, ATTRIBUTION, PATCHING}
    interventions.set_active(True)
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    assert set(interventions.results) == {LENS, DECODER_LENS, ATTRIBUTION}
    assert not any("not computed" in text for (text,) in events.of("message"))
    assert interventions.results[DECODER_LENS].token_ids == bundle_decoder_lens(tiny_t5, "The house is small .").token_ids
    expected = bundle_logit_lens(tiny_t5, "The house is small .", 5)
    assert np.allclose(interventions.results[LENS].chosen_probabilities, expected.chosen_probabilities, atol=1e-6)
    assert interventions.patch("The house is small .", "The cat is small .")
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    exact = activation_patching(tiny_t5, "The house is small .", "The cat is small .")
    assert interventions.results[PATCHING].method == "exact"
    assert np.allclose(interventions.results[PATCHING].grids["cross heads"].values, exact.grids["cross heads"].values, atol=1e-5)
