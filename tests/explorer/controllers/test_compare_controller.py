"""The side-by-side controller without a window (and without Qt): a second model decodes the explored sentence and
steps with it, each side shows its best-aligning head (or the one chosen), a toy-fr sentence brings each side's AER,
model files open in a job, and a model without cross-attention is refused. (The view: tests/explorer/test_side_by_side.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.controllers.compare import GOLD_NOTE, NO_GOLD_NOTE, can_compare
from model.io import checkpoint
from model.io.shipped import shipped_models
from tests.explorer.controllers.recording import WAIT_S, Recorder

SENTENCE = "the small cat sees the dog"
CHOOSE = (
    "Choose a model to put beside it (e.g. the RNN with Bahdanau attention, rnn-bahdanau, beside the "
    "Transformer, default): both decode the sentence and step together."
)


def tagger_of(toy_fr_bundle):
    """An encoder-only classifier: no cross-attention."""
    from model.io.bundle import ModelBundle
    from model.nn.classifier import ClassifierConfig, EncoderClassifier

    tokenizer = toy_fr_bundle[0].source_tokenizer
    return ModelBundle(EncoderClassifier(ClassifierConfig(vocab_size=tokenizer.vocab_size)), tokenizer, tokenizer)


@pytest.fixture
def side_by_side(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    """(Explore controller, compare controller, its `changed` events): the Transformer explored with SENTENCE decoded,
    the RNN beside it, both best heads measured."""
    explore, compare = controllers.explore, controllers.compare
    explore.set_model(toy_fr_bundle[0])
    assert explore.translate(SENTENCE)
    changed = Recorder(compare, "changed")
    assert compare.set_model(toy_fr_rnn_bundle[0])
    assert controllers.inbox.wait_until(lambda: not compare.running, WAIT_S)
    return explore, compare, changed


def shown(changed: Recorder) -> list:
    return changed.of("changed")[-1][0]


def test_side_by_side_follows_the_decoding_with_each_best_head(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    explore, compare = controllers.explore, controllers.compare
    changed = Recorder(compare, "changed")
    explore.set_model(toy_fr_bundle[0])
    assert compare.unavailable() == CHOOSE
    explore.set_source(compare.fresh_sentence())
    explore.translate(explore.text)
    assert compare.set_model(toy_fr_rnn_bundle[0])
    assert controllers.inbox.wait_until(lambda: not compare.running, WAIT_S)
    panels, note = changed.of("changed")[-1]
    assert len(panels) == 2 and all(panel.choice.corpus_aer is not None for panel in panels)
    assert all(panel.sentence_aer is not None for panel in panels) and note == GOLD_NOTE
    explore.step_back()
    panels, _ = changed.of("changed")[-1]
    assert panels[0].trace.n_steps == explore.current_step  # the second ends where its own decoding ends
    assert panels[1].trace.n_steps == min(explore.current_step, len(compare.stepper.steps))
    compare.clear()
    assert changed.of("changed")[-1] == ([], CHOOSE) and compare.bundle is None


def test_two_models_step_together_and_any_head_can_be_shown(side_by_side):
    """Was test_side_by_side.py's test_two_models_step_together_with_their_best_heads (the panels)."""
    explore, compare, changed = side_by_side
    left, right = shown(changed)
    assert (right.choice.layer, right.choice.head) == (0, 0)  # the RNN's one attention
    # Named as the user knows them: a file's stem, else the corpus (a session's bundle may have been saved by then).
    expected = [Path(b.path).stem if b.path else "toy-fr" for b in (explore.bundle, compare.bundle)]
    assert [left.name, right.name] == expected
    assert right.choice.corpus_aer is not None and left.choice.corpus_aer is not None
    assert left.trace.source_tokens == right.trace.source_tokens  # the same source pieces on both sides
    assert changed.of("changed")[-1][1] == NO_GOLD_NOTE  # a typed sentence: no gold alignment
    explore.reset()
    assert [panel.trace.n_steps for panel in shown(changed)] == [0, 0]
    explore.step_forward()
    explore.step_forward()
    assert [panel.trace.n_steps for panel in shown(changed)] == [2, 2]
    explore.step_back()
    assert [panel.trace.n_steps for panel in shown(changed)] == [1, 1]
    explore.run_to_end()
    assert shown(changed)[1].trace.n_steps == len(compare.stepper.steps) and compare.stepper.finished
    assert shown(changed)[0].trace.n_steps == explore.trace.n_steps
    # Any head can be shown instead of the best-aligning one, and back.
    compare.set_head(0, (0, 1))
    chosen = shown(changed)[0].choice
    assert (chosen.layer, chosen.head, chosen.corpus_aer) == (0, 1, None)
    compare.set_head(0, None)
    assert shown(changed)[0].choice == left.choice


def test_a_toy_fr_sentence_brings_each_sides_aer(side_by_side):
    """Was test_side_by_side.py's test_a_toy_fr_sentence_brings_each_side_s_aer_and_the_pair_exports (the AER)."""
    explore, compare, changed = side_by_side
    assert compare.gold(SENTENCE) is None
    sentence = compare.fresh_sentence()
    assert explore.translate(sentence)
    assert compare.gold(sentence) is not None and compare.gold(sentence).source == sentence
    panels, note = changed.of("changed")[-1]
    assert all(panel.sentence_aer is not None for panel in panels) and note == GOLD_NOTE


def test_a_model_without_cross_attention_is_refused_and_files_open_in_a_job(
    controllers, side_by_side, toy_fr_bundle, toy_fr_rnn_bundle, tmp_path
):
    """Was test_side_by_side.py's test_a_model_without_cross_attention_is_refused_and_files_open_in_a_worker (the
    controller's part)."""
    _explore, compare, changed = side_by_side
    messages = Recorder(compare, "message")
    compare.clear()
    assert not compare.set_model(tagger_of(toy_fr_bundle))
    assert messages.seen == [("message", "unknown corpus has no cross-attention to compare (it is encoder-only).")]
    path = checkpoint.save(toy_fr_rnn_bundle[0], tmp_path / "rnn.safetensors")
    compare.open(str(path))
    assert compare.running
    assert controllers.inbox.wait_until(lambda: not compare.running, WAIT_S)
    explored = _explore.bundle.path  # the session's Transformer: its corpus's name, or a file's if a test saved it
    assert [panel.name for panel in shown(changed)] == [Path(explored).stem if explored else "toy-fr", "rnn"]
    missing = tmp_path / "missing.safetensors"
    compare.open(str(missing))
    assert controllers.inbox.wait_until(lambda: len(messages.seen) == 2, WAIT_S)
    shipped = ", ".join(shipped_models()) or "none"
    why = f"{missing}: no such file, and no shipped model of that name (shipped: {shipped})"
    assert messages.seen[-1] == ("message", f"Could not open {missing}: {why}")
    assert len(shown(changed)) == 2 and compare.bundle is not None  # the model beside it is still there
    compare.clear()
    assert changed.of("changed")[-1] == ([], CHOOSE)


def test_a_model_without_cross_attention_cannot_be_compared(toy_fr_bundle):
    assert "has no cross-attention to compare (it is encoder-only)" in can_compare(tagger_of(toy_fr_bundle))
