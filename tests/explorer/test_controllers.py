"""The window's controllers without a window (and without Qt): what the views show is decided here, so it is tested
here, fast. Background work goes through a runner whose reports the test drains (``Inbox``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from explorer.controllers.alignment import NO_GOLD
from explorer.controllers.compare import can_compare
from explorer.controllers.runner import Inbox, Runner
from explorer.controllers.window import WindowControllers
from model.data.corpora import CorpusSpec
from model.decoding.stepper import DecodingOptions
from model.kinds import AttentionKind, StopReason
from model.nn.masking import Head
from model.training.pipeline import TokenizerOptions
from model.training.run import TrainingRequest
from model.training.trainer import TrainingOptions
from tests.conftest import tiny_bundle

WAIT_S = 120  # a bound on waiting for a state, not a timing claim


class Recorder:
    """Every emission of the events named, in order: (event name, *args)."""

    def __init__(self, controller, *names: str) -> None:
        self.seen: list[tuple] = []
        for name in names:
            getattr(controller, name).connect(lambda *args, name=name: self.seen.append((name, *args)))

    def of(self, name: str) -> list[tuple]:
        return [args[1:] for args in self.seen if args[0] == name]


@pytest.fixture
def controllers():
    inbox = Inbox()
    built = WindowControllers.build(Runner(inbox))
    built.inbox = inbox
    yield built
    assert built.close(WAIT_S), "a job outlived its test"


def test_no_qt_is_imported_by_the_controllers():
    code = "import sys, explorer.controllers.window; print(any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# --- Explore ---------------------------------------------------------------------------------------------
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


def test_an_unreadable_sentence_is_replaced_by_an_example_the_model_reads(controllers, toy_fr_bundle):
    explore = controllers.explore
    replaced = Recorder(explore, "text_replaced")
    explore.set_source("абв где жзи")
    explore.set_model(toy_fr_bundle[0])
    [(sentence, why)] = replaced.of("text_replaced")
    assert explore.text == sentence and explore.can_read(sentence) and "unknown (<unk>)" in why and "instead" in why


# --- measures --------------------------------------------------------------------------------------------
def test_a_fast_measure_is_shown_at_once_and_a_gradient_one_when_its_job_ends(controllers, toy_fr_bundle):
    explore, measures = controllers.explore, controllers.measures
    events = Recorder(measures, "changed", "busy", "running_changed")
    explore.set_model(toy_fr_bundle[0])
    explore.translate("the small cat sees the dog")
    measures.set_measure("norm")
    assert measures.shown(explore.trace).measure == "norm" and not measures.running
    measures.set_measure("attn-grad")
    assert measures.shown(explore.trace) is None and measures.running and events.of("busy")[-1][0].startswith("Computing")
    assert controllers.inbox.wait_until(lambda: not measures.running, WAIT_S)
    assert measures.shown(explore.trace).measure == "attn-grad" and events.of("busy")[-1] == ("",)
    assert events.of("running_changed") == [(True,), (False,)]


def test_availability_names_why_a_measure_cannot_be_shown(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    explore, measures = controllers.explore, controllers.measures
    assert set(measures.availability(AttentionKind.CROSS).values()) == {""}  # no model: nothing is refused yet
    explore.set_model(toy_fr_bundle[0])
    cross = measures.availability(AttentionKind.CROSS)
    assert cross["attention"] == "" and cross["norm"] == "" and "no cross-attention" in cross["alti"]
    explore.set_model(toy_fr_rnn_bundle[0])
    rnn = measures.availability(AttentionKind.CROSS)
    assert rnn["attention"] == "" and all(rnn[name] for name in rnn if name != "attention")


# --- the alignment table ---------------------------------------------------------------------------------
def test_the_alignment_table_scores_and_another_model_clears_it(controllers, toy_fr_bundle):
    explore, alignment = controllers.explore, controllers.alignment
    events = Recorder(alignment, "ready", "progress", "running_changed", "message")
    explore.set_model(toy_fr_bundle[0])
    assert alignment.compute(5, ("attention", "norm"))
    assert controllers.inbox.wait_until(lambda: not alignment.running, WAIT_S)
    [(cleared,), (table,)] = events.of("ready")  # the model opened clears the table first
    assert cleared is None and table is alignment.table and [m.measure for m in table.measures] == ["attention", "norm"]
    assert events.of("progress")[-1] == (5, 5) and alignment.done_pairs == 5
    assert events.of("running_changed") == [(True,), (False,)]
    copy_model, _ = tiny_bundle("copy", size=100)
    explore.set_model(copy_model)
    assert alignment.table is None and events.of("ready")[-1] == (None,)
    assert not alignment.compute(5) and events.of("message")[-1] == (NO_GOLD,)


# --- head importance -------------------------------------------------------------------------------------
def test_importance_then_the_curve_and_an_rnn_is_refused(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    explore, importance = controllers.explore, controllers.importance
    events = Recorder(importance, "importance_ready", "curve_ready", "running_changed", "message")
    explore.set_model(toy_fr_bundle[0])
    assert not importance.compute(0) and events.of("message")[-1] == ("Head importance needs at least one sentence.",)
    assert importance.compute(6)
    assert controllers.inbox.wait_until(lambda: not importance.running, WAIT_S)
    assert importance.importance is not None and importance.curve is not None
    assert importance.importance_table(AttentionKind.CROSS).shape == (2, 4)
    assert events.of("running_changed") == [(True,), (False,)]
    explore.set_model(toy_fr_rnn_bundle[0])
    assert importance.importance is None and events.of("curve_ready")[-1] == (None,)
    assert not importance.compute(6) and "(rnn)" in events.of("message")[-1][0]


# --- side by side ----------------------------------------------------------------------------------------
def test_side_by_side_follows_the_decoding_with_each_best_head(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    explore, compare = controllers.explore, controllers.compare
    changed = Recorder(compare, "changed")
    explore.set_model(toy_fr_bundle[0])
    assert "Choose a model to put beside it" in compare.unavailable()
    explore.set_source(compare.fresh_sentence())
    explore.translate(explore.text)
    assert compare.set_model(toy_fr_rnn_bundle[0])
    assert controllers.inbox.wait_until(lambda: not compare.running, WAIT_S)
    panels, note = changed.of("changed")[-1]
    assert len(panels) == 2 and all(panel.choice.corpus_aer is not None for panel in panels)
    assert all(panel.sentence_aer is not None for panel in panels) and note.startswith("Gold alignment known")
    explore.step_back()
    panels, _ = changed.of("changed")[-1]
    assert panels[0].trace.n_steps == explore.current_step  # the second ends where its own decoding ends
    assert panels[1].trace.n_steps == min(explore.current_step, len(compare.stepper.steps))
    compare.clear()
    assert changed.of("changed")[-1][0] == [] and compare.bundle is None


def test_a_model_without_cross_attention_cannot_be_compared(toy_fr_bundle):
    from model.io.bundle import ModelBundle
    from model.nn.classifier import ClassifierConfig, EncoderClassifier

    tokenizer = toy_fr_bundle[0].source_tokenizer
    tagger = ModelBundle(EncoderClassifier(ClassifierConfig(vocab_size=tokenizer.vocab_size)), tokenizer, tokenizer)
    assert "has no cross-attention to compare (it is encoder-only)" in can_compare(tagger)


# --- training --------------------------------------------------------------------------------------------
def tiny_request(steps: int) -> TrainingRequest:
    model = dict(n_encoder_layers=1, n_decoder_layers=1, d_model=32, n_heads=2, d_ff=64, dropout=0.0)
    training = TrainingOptions(epochs=1000, max_steps=steps, batch_size=16, warmup_steps=10, valid_every=None)
    return TrainingRequest(CorpusSpec("copy", size=200, seed=0), TokenizerOptions(vocab_size=60), model, training, "cpu")


def test_training_reports_its_stages_and_keeps_the_model(controllers):
    training = controllers.training
    events = Recorder(training, "status", "prepared", "progress", "finished", "running_changed")
    assert training.start(tiny_request(3)) and training.running and not training.start(tiny_request(3))
    assert controllers.inbox.wait_until(lambda: not training.running, WAIT_S)
    stages = [args[0] for args in events.of("status")]
    assert any("tokenizer" in stage for stage in stages) and len(events.of("progress")) == 3
    [(outcome,)] = events.of("finished")
    assert outcome.bundle is not None and outcome.stopped is not StopReason.CANCELLED
    assert events.of("running_changed") == [(True,), (False,)]


def test_stopping_without_keeping_discards_the_model(controllers):
    training = controllers.training
    events = Recorder(training, "progress", "finished")
    training.start(tiny_request(100_000))
    assert controllers.inbox.wait_until(lambda: bool(events.of("progress")), WAIT_S)
    training.pause()
    assert training.paused
    training.stop(keep=False)  # a paused run is woken to stop
    assert controllers.inbox.wait_until(lambda: not training.running, WAIT_S)
    [(outcome,)] = events.of("finished")
    assert outcome.stopped is StopReason.CANCELLED and outcome.bundle is None


def test_decoding_options_reach_the_stepper(controllers, toy_fr_bundle):
    explore = controllers.explore
    explore.set_model(toy_fr_bundle[0])
    assert explore.translate("the cat sleeps", DecodingOptions(strategy="beam", beam_width=3))
    assert explore.stepper.beam is not None and explore.hypothesis_rank == 0
