"""The Explore controller without a window (and without Qt): it decodes the sentence through the active model, steps,
jumps, forces a token, follows a beam hypothesis, samples with a seed, knocks heads out, says why it cannot decode, and
decodes the sentence again through another model. (The Explore tab's wiring: tests/explorer/test_explore.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from model.decoding.stepper import DecodingOptions, Stepper
from model.kinds import AttentionKind
from model.nn.masking import Head
from tests.explorer.controllers.recording import Recorder

SENTENCE = "a b c d e"  # what the Explore tab's tests type for the copy model


def reference_trace(bundle, text=SENTENCE, **options):
    """The trace of a Stepper run to its end, outside the controller."""
    stepper = Stepper(bundle, text, DecodingOptions(**options))
    stepper.run()
    return stepper.trace()


@pytest.fixture
def explored(controllers, copy_bundle):
    """The Explore controller with the copy model open and SENTENCE decoded to its end."""
    explore = controllers.explore
    explore.set_model(copy_bundle[0])
    assert explore.translate(SENTENCE)
    return explore


def test_no_qt_is_imported_by_the_controllers():
    code = "import sys, explorer.controllers.window; print(any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_explore_decodes_steps_forces_and_says_why(controllers, toy_fr_bundle):
    explore = controllers.explore
    events = Recorder(explore, "model_changed", "trace_changed", "message")
    explore.set_source("the small cat sees the dog")
    explore.set_model(toy_fr_bundle[0])
    assert events.of("model_changed") == [(toy_fr_bundle[0],)] and explore.trace is not None and explore.finished
    steps = explore.trace.n_steps
    assert explore.total_steps == steps == explore.current_step
    assert explore.step_back() and explore.current_step == steps - 1 and not explore.finished
    explore.go_to_step(1)
    assert explore.trace.n_steps == 1 and explore.total_steps == steps
    other = (
        next(int(i) for i in explore.trace.next_candidate_ids if int(i) != int(explore.trace.chosen_ids[0]))
        if len(explore.trace.next_candidate_ids)
        else int(explore.trace.candidate_ids[0][1])
    )
    explore.force(0, other)
    assert int(explore.trace.chosen_ids[0]) == other and explore.trace.forced[0]
    assert events.of("message")[-1][0].startswith("Step 1 forced to")
    assert not explore.translate("   ") and explore.trace is None and events.of("message")[-1] == ("Type a sentence to translate.",)


def test_the_trace_is_the_steppers_and_steps_back_forward_reset_and_jump(explored, copy_bundle):
    """Was test_explore.py's test_enter_translates_and_the_views_hold_the_trace (the trace) and
    test_stepping_back_forward_reset_and_the_slider (the steps)."""
    explore = explored
    expected = reference_trace(copy_bundle[0])
    assert explore.trace.target_tokens == expected.target_tokens and explore.trace.n_steps > 0
    assert explore.trace.source_tokens == expected.source_tokens
    total = explore.total_steps
    assert total == explore.trace.n_steps == explore.current_step and explore.finished
    assert explore.step_back()
    assert explore.trace.n_steps == total - 1 and explore.total_steps == total and not explore.finished
    explore.reset()
    assert explore.trace.n_steps == 0 and explore.total_steps == total  # the slider keeps its end
    assert explore.step_forward() and explore.step_forward()
    assert explore.trace.n_steps == 2 and explore.trace.target_tokens == expected.target_tokens[:2]
    explore.go_to_step(total - 1)  # the slider
    assert explore.trace.n_steps == total - 1
    explore.run_to_end()
    assert explore.trace.n_steps == total and explore.finished and not explore.step_forward()
    explore.go_to_step(1)  # a click on the first target token
    assert explore.trace.n_steps == 1 and explore.total_steps == total


def test_forcing_a_candidate_keeps_the_steps_before_it_and_decodes_to_the_end(explored):
    """Was test_explore.py's test_clicking_a_candidate_forces_it_and_decoding_continues (the decoding)."""
    explore = explored
    messages = Recorder(explore, "message")
    original = list(explore.trace.target_tokens)
    explore.go_to_step(2)  # step 2 shown: its candidates are the trace's last
    candidates = explore.trace.candidate_ids[1]
    forced_id = next(int(token) for token in candidates if token != explore.trace.chosen_ids[1])
    explore.force(1, forced_id)
    trace = explore.trace
    assert int(trace.chosen_ids[1]) == forced_id and trace.forced[1] and not trace.forced[0]
    assert trace.target_tokens[0] == original[0] and explore.finished
    piece = explore.bundle.target_tokenizer.piece(forced_id)
    assert messages.of("message") == [(f"Step 2 forced to “{piece}”; decoded on from there.",)]


def test_beam_search_follows_a_chosen_hypothesis(explored, copy_bundle):
    """Was test_explore.py's test_beam_search_shows_the_tree_and_a_clicked_hypothesis (the decoding)."""
    explore = explored
    assert explore.translate(SENTENCE, DecodingOptions(strategy="beam", beam_width=3))
    beam = explore.stepper.beam
    assert beam is not None and len(beam.hypotheses) >= 2 and explore.hypothesis_rank == 0
    assert list(explore.trace.chosen_ids) == beam.token_ids(beam.hypotheses[0])
    explore.show_hypothesis(1)
    assert list(explore.trace.chosen_ids) == beam.token_ids(beam.hypotheses[1]) and explore.hypothesis_rank == 1


def test_sampling_is_repeatable_with_its_seed(explored, copy_bundle):
    """Was test_explore.py's test_sampling_is_repeatable_with_its_seed (the decoding)."""
    explore = explored
    options = DecodingOptions(strategy="sample", temperature=1.5, seed=7)
    assert explore.translate(SENTENCE, options)
    first = list(explore.trace.chosen_ids)
    assert explore.translate(SENTENCE)  # the options kept: the same seed, the same tokens
    assert list(explore.trace.chosen_ids) == first
    assert first == list(reference_trace(copy_bundle[0], strategy="sample", temperature=1.5, seed=7).chosen_ids)


@pytest.mark.parametrize("text", ["", "   ", "a b " * 600, "a b 🙂 \u0000 ∑ 漢字 c"], ids=["empty", "blank", "too-long", "unicode"])
def test_bad_input_gives_messages_not_crashes(explored, copy_bundle, text):
    """Was test_explore.py's test_bad_input_gives_messages_not_crashes (the messages and the trace)."""
    explore = explored
    messages = Recorder(explore, "message")
    decoded = explore.translate(text)
    if not text.strip():
        assert not decoded and explore.trace is None and messages.of("message") == [("Type a sentence to translate.",)]
        return
    assert decoded and explore.trace is not None
    assert explore.trace.target_tokens == reference_trace(copy_bundle[0], text).target_tokens
    _ids, n_pieces, kept = copy_bundle[0].source_ids(text)
    if len(text) > 1000:
        cut = f"The sentence has {n_pieces} pieces; this model reads at most {kept}, so it was cut after piece {kept}."
        assert n_pieces > kept and messages.of("message") == [(cut,)]
    else:  # the emoji, NUL, ∑ and 漢字 are pieces the copy model never saw: said in one line
        unknown = sum(piece_id == copy_bundle[0].source_tokenizer.unk_id for piece_id in _ids)
        note = (
            f"{unknown} of the sentence's {kept} pieces ({unknown / kept:.0%}) are unknown to this model (<unk>): it never "
            "saw them in training and reads each as the same unknown piece, so what they say is lost."
        )
        assert n_pieces <= kept and unknown > 0 and messages.of("message") == [(note,)]


def test_switching_the_model_mid_decode_decodes_the_sentence_again(explored, toy_fr_bundle):
    """Was test_explore.py's test_switching_the_model_mid_decode (the decoding)."""
    explore = explored
    assert explore.step_back() and not explore.finished
    events = Recorder(explore, "trace_changed", "model_changed")
    explore.set_model(toy_fr_bundle[0])
    tokenizer = toy_fr_bundle[0].source_tokenizer
    trace = explore.trace
    assert trace is not None and trace.source_tokens == tokenizer.pieces(tokenizer.encode(SENTENCE) + [3])
    assert trace.target_tokens == reference_trace(toy_fr_bundle[0]).target_tokens and explore.finished
    assert explore.total_steps == trace.n_steps and explore.text == SENTENCE
    assert events.seen == [("trace_changed", None), ("model_changed", toy_fr_bundle[0]), ("trace_changed", trace)]


def test_knocking_a_head_out_decodes_again_and_another_model_restores_them(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    explore = controllers.explore
    messages = Recorder(explore, "message")
    explore.set_model(toy_fr_bundle[0])
    assert explore.translate("the cat sleeps")
    explore.toggle_head(Head(AttentionKind.CROSS, 0, 1))
    assert explore.masked_heads == (Head(AttentionKind.CROSS, 0, 1),) and explore.trace.masked_heads == ["cross:1:2"]
    assert "knocked out" in messages.of("message")[-1][0]
    explore.restore_heads()
    assert explore.masked_heads == () and messages.of("message")[-1] == ("Every head is back.",)
    explore.toggle_head(Head(AttentionKind.CROSS, 0, 0))
    explore.set_model(toy_fr_rnn_bundle[0])
    assert explore.masked_heads == ()


def test_decoding_options_reach_the_stepper(controllers, toy_fr_bundle):
    explore = controllers.explore
    explore.set_model(toy_fr_bundle[0])
    assert explore.translate("the cat sleeps", DecodingOptions(strategy="beam", beam_width=3))
    assert explore.stepper.beam is not None and explore.hypothesis_rank == 0
