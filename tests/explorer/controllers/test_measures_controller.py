"""The measure controller without a window (and without Qt): which measures a model defines for each kind and why
not, the fast ones measured at once and the gradient ones in a job (saliency rows kept per prefix, so stepping back
needs no work), and the contrastive saliency of a candidate. (The Reading box and the views:
tests/explorer/test_measures_view.py.)"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import explorer.controllers.measures as measures_module
from explorer.controllers.runner import Cancelled
from model.attribution.measures import MEASURES, compute_measure
from model.kinds import AttentionKind
from tests.explorer.controllers.recording import WAIT_S, Recorder

SENTENCE = "the small cat sees the dog"
RNN_REASON = "reads each head's value vectors; this model's attention has no heads or value vectors"  # an RNN's refusal


@pytest.fixture
def measured(controllers, toy_fr_bundle):
    """(Explore controller, measure controller) with the toy-fr model open and SENTENCE decoded."""
    controllers.explore.set_model(toy_fr_bundle[0])
    assert controllers.explore.translate(SENTENCE)
    return controllers.explore, controllers.measures


def test_a_fast_measure_is_shown_at_once_and_a_gradient_one_when_its_job_ends(controllers, toy_fr_bundle):
    explore, measures = controllers.explore, controllers.measures
    events = Recorder(measures, "changed", "busy", "running_changed")
    explore.set_model(toy_fr_bundle[0])
    explore.translate(SENTENCE)
    measures.set_measure("norm")
    assert measures.shown(explore.trace).measure == "norm" and not measures.running
    measures.set_measure("attn-grad")
    assert measures.shown(explore.trace) is None and measures.running and events.of("busy")[-1][0].startswith("Computing")
    assert controllers.inbox.wait_until(lambda: not measures.running, WAIT_S)
    assert measures.shown(explore.trace).measure == "attn-grad" and events.of("busy")[-1] == ("",)
    assert events.of("running_changed") == [(True,), (False,)]


def test_value_zeroing_says_how_many_layers_it_has_run(controllers, measured):
    """A measure in parts (value zeroing's layers: seconds each on a 1.5 B model) says how far it has come."""
    explore, measures = measured
    events = Recorder(measures, "busy")
    measures.set_measure("value-zeroing")
    assert controllers.inbox.wait_until(lambda: not measures.running, WAIT_S)
    total = 3 * 2  # the tiny model's 2 layers of each kind: encoder, decoder and cross-attention
    label = MEASURES["value-zeroing"].label
    said = [event[0] for event in events.of("busy")]
    parts = [f"{label}: {done}/{total} layers…" for done in range(1, total + 1)]
    assert said == [f"Computing {label}…", *parts, ""]
    assert measures.shown(explore.trace).measure == "value-zeroing"


def test_value_zeroing_reports_each_layer_to_its_caller(toy_fr_bundle):
    from model.attribution.measures import compute_measure

    bundle = toy_fr_bundle[0]
    source = bundle.source_ids(SENTENCE)[0]
    seen: list[tuple[int, int]] = []
    plain = compute_measure(bundle.model, source, [5, 6, 7], "value-zeroing")
    followed = compute_measure(bundle.model, source, [5, 6, 7], "value-zeroing", progress=lambda *done: seen.append(done))
    assert seen == [(done, 6) for done in range(1, 7)]
    for kind in plain.values:
        np.testing.assert_array_equal(plain.values[kind], followed.values[kind])


def test_availability_names_why_a_measure_cannot_be_shown(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    """Also test_measures_view.py's test_a_measure_replaces_the_weights_in_every_view (which measures each kind and
    each model define, and the reasons)."""
    explore, measures = controllers.explore, controllers.measures
    assert set(measures.availability(AttentionKind.CROSS).values()) == {""}  # no model: nothing is refused yet
    explore.set_model(toy_fr_bundle[0])
    cross = measures.availability(AttentionKind.CROSS)
    alti = (
        "ALTI has no cross-attention (encoder-decoder): ALTI rolls out self-attention; "
        "ALTI+ adds what cross-attention brings from the source"
    )
    assert cross == {name: alti if name == "alti" else "" for name in MEASURES}
    encoder = measures.availability(AttentionKind.ENCODER)
    assert encoder["alti"] == "" and encoder["norm"] == "" and encoder["attention"] == ""
    explore.set_model(toy_fr_rnn_bundle[0])
    rnn = measures.availability(AttentionKind.CROSS)
    assert rnn == {name: "" if name == "attention" else f"{MEASURES[name].label} {RNN_REASON}" for name in MEASURES}


def test_norm_gives_shares_and_alti_plus_one_map_per_layer(measured):
    """Was test_measures_view.py's test_a_measure_replaces_the_weights_in_every_view (the measured traces)."""
    explore, measures = measured
    measures.set_measure("norm")
    shown = measures.shown(explore.trace)
    assert shown.measure == "norm" and not measures.running
    assert np.allclose(shown.cross.sum(-1), 1.0, atol=1e-5)  # each row as shares
    assert shown.cross.shape == explore.trace.cross.shape
    measures.set_measure("alti+")
    shown = measures.shown(explore.trace)
    n_layers, _heads, n_queries, n_keys = explore.trace.cross.shape
    assert shown.measure == "alti+" and shown.cross.shape == (n_layers, 1, n_queries, n_keys)  # one map per layer
    measures.set_measure("attention")
    assert measures.shown(explore.trace) is None  # the weights themselves


def test_integrated_gradients_come_from_a_job_and_stepping_back_reuses_their_rows(controllers, measured):
    """Was test_measures_view.py's test_a_measure_replaces_the_weights_in_every_view (the gradient part)."""
    explore, measures = measured
    events = Recorder(measures, "busy", "running_changed", "changed")
    measures.set_measure("ig")
    assert measures.running and events.of("busy") == [(f"Computing {MEASURES['ig'].label}…",)]
    assert controllers.inbox.wait_until(lambda: not measures.running, WAIT_S)
    shown = measures.shown(explore.trace)
    assert shown.measure == "ig" and not np.isnan(shown.source_share).any()
    assert events.of("busy")[-1] == ("",) and events.of("running_changed") == [(True,), (False,)]
    assert explore.step_back()
    shown = measures.shown(explore.trace)  # at once: every row of this prefix was computed
    assert shown.measure == "ig" and not np.isnan(shown.source_share).any() and not measures.running
    assert events.of("running_changed") == [(True,), (False,)]


def test_a_row_no_longer_wanted_stops_between_two_batches(controllers, measured, monkeypatch):
    """A row of integrated gradients takes seconds on a long sentence: another reading chosen meanwhile stops it
    between two batches of its passes (closing the window no longer waits for the row)."""
    explore, measures = measured
    in_row, go, raised = threading.Event(), threading.Event(), []
    real = measures_module.compute_measure

    def computed(*args, between_batches=None, **kwargs):
        def between() -> None:
            in_row.set()
            assert go.wait(WAIT_S)
            try:
                between_batches()
            except Cancelled:
                raised.append("cancelled")
                raise

        return real(*args, between_batches=None if between_batches is None else between, **kwargs)

    monkeypatch.setattr(measures_module, "compute_measure", computed)
    measures.set_measure("ig")
    assert in_row.wait(WAIT_S)  # the row's first batch is about to run
    measures.set_measure("norm")  # another reading: the row is no longer wanted
    go.set()
    assert controllers.inbox.wait_until(lambda: bool(raised), WAIT_S)  # stopped at that batch, not after the row
    assert raised == ["cancelled"] and measures.shown(explore.trace).measure == "norm" and not measures.running


def test_a_contrast_says_why_the_chosen_token_and_not_another(controllers, measured):
    """Was test_measures_view.py's test_ctrl_click_on_a_candidate_says_why_not_that_one (the contrast)."""
    explore, measures = measured
    events = Recorder(measures, "contrast_ready", "message")
    explore.go_to_step(2)
    trace = explore.trace
    before = list(trace.chosen_ids)
    chosen = int(trace.chosen_ids[1])
    other = next(int(token) for token in trace.candidate_ids[1] if int(token) != chosen)
    measures.request_contrast(1, chosen)
    assert events.seen == [("message", "Pick a token other than the chosen one to ask why it was not chosen.")]
    measures.request_contrast(1, other)
    assert controllers.inbox.wait_until(lambda: bool(events.of("contrast_ready")), WAIT_S)
    [(contrast,)] = events.of("contrast_ready")
    assert list(explore.trace.chosen_ids) == before  # nothing forced
    assert (contrast.step, contrast.chosen, contrast.method) == (1, trace.target_tokens[1], "grad-input")
    assert contrast.other == explore.bundle.target_tokenizer.piece(other)
    assert contrast.source_tokens == list(trace.source_tokens) and len(contrast.source_values) == len(contrast.source_tokens)
    assert contrast.prefix_tokens == list(trace.decoder_input_tokens[:2]) and len(contrast.prefix_values) == 2
    measures.clear_contrast()
    assert events.of("contrast_ready")[-1] == (None,)


def test_a_contrast_is_refused_for_a_model_without_gradients_of_its_own(controllers, toy_fr_rnn_bundle):
    explore, measures = controllers.explore, controllers.measures
    explore.set_model(toy_fr_rnn_bundle[0])
    assert explore.translate(SENTENCE)
    messages = Recorder(measures, "message")
    trace = explore.trace
    other = next(int(token) for token in trace.candidate_ids[0] if token != trace.chosen_ids[0])
    measures.request_contrast(0, other)
    reason = f"{MEASURES['grad-input'].label} {RNN_REASON}"
    assert messages.seen == [("message", f"Contrastive saliency: {reason}.")] and not measures.running


def test_an_encoder_only_model_s_text_is_measured_though_its_trace_has_no_steps(controllers, toy_fr_bundle):
    from model.io.bundle import ModelBundle
    from model.nn.classifier import ClassifierConfig, EncoderClassifier

    tokenizer = toy_fr_bundle[0].source_tokenizer
    tagger = ModelBundle(EncoderClassifier(ClassifierConfig(vocab_size=tokenizer.vocab_size)), tokenizer, tokenizer)
    explore, measures = controllers.explore, controllers.measures
    explore.set_model(tagger)
    assert explore.translate(SENTENCE) and explore.trace.n_steps == 0
    encoder = measures.availability(AttentionKind.ENCODER)
    assert encoder["alti"] == encoder["norm"] == encoder["value-zeroing"] == ""
    assert encoder["grad-input"] == encoder["ig"] == encoder["attn-grad"] == ""  # the head's decisions, as rows
    assert "cross-attention" in encoder["alti+"]
    measures.set_measure("alti")
    shown = measures.shown(explore.trace)
    assert shown.measure == "alti" and np.allclose(shown.encoder_self.sum(-1), 1.0, atol=1e-5)
    # A saliency has no steps here: every piece's row (the tag decided there) at once, in a job, as computed alone
    events = Recorder(measures, "busy")
    measures.set_measure("ig")
    assert controllers.inbox.wait_until(lambda: not measures.running, WAIT_S)
    shown = measures.shown(explore.trace)
    expected = compute_measure(tagger.model, list(explore.stepper.source_ids), [], "ig").shares[AttentionKind.ENCODER]
    assert shown is not None and np.allclose(shown.encoder_self.sum(-1), 1.0, atol=1e-5)
    assert np.allclose(shown.encoder_self, expected[0], atol=1e-6)
    assert any("pieces" in args[0] for args in events.of("busy"))  # told piece by piece
