"""The training controller without a window (and without Qt): a run says its stages, reports every step and each
validation, pauses (no step while paused), resumes, stops keeping or discarding what it learned, and ends with the
window's controllers; a bad corpus or configuration is a message; the Train form's corpus preview and step timing run
in jobs. (The Train tab's wiring: tests/explorer/test_window.py and test_training_presets.py.)"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from model.data.corpora import CorpusSpec
from model.device import describe_device, resolve_device
from model.kinds import AttentionKind, StopReason
from model.training.pipeline import TokenizerOptions
from model.training.run import TrainingRequest
from model.training.trainer import TrainingControl, TrainingOptions
from tests.explorer.controllers.recording import WAIT_S, Recorder, tiny_request

EVENTS = ("status", "prepared", "progress", "validation", "finished", "failed", "running_changed")
BAD_TSV = "hello\tbonjour\nno tab on this line\n"  # its second line has no tab


def steps(events: Recorder) -> list[int]:
    return [progress.step for (progress,) in events.of("progress")]


def test_training_reports_its_stages_and_keeps_the_model(controllers):
    """Also test_training_presets.py's test_preparation_is_shown_in_stages (the stages, in order)."""
    training = controllers.training
    events = Recorder(training, *EVENTS)
    assert training.start(tiny_request(3)) and training.running and not training.start(tiny_request(3))
    assert controllers.inbox.wait_until(lambda: not training.running, WAIT_S)
    [(prepared,)] = events.of("prepared")
    assert (prepared.train, prepared.valid, prepared.test, prepared.skipped_lines) == (186, 6, 8, 0)
    assert [stage for (stage,) in events.of("status")] == [
        "Generating 200 copy pairs…",
        "Training the tokenizer (60 pieces at most) on 186 pairs…",
        "Building the model…",
        "Encoding 186 training pairs…",
        f"Training on {describe_device(resolve_device('cpu'))}: the first step…",
    ]
    assert steps(events) == [1, 2, 3] and events.of("failed") == []
    [(outcome,)] = events.of("finished")
    assert outcome.bundle is not None and outcome.stopped is StopReason.MAX_STEPS
    assert events.of("running_changed") == [(True,), (False,)]
    assert [name for name, *_ in events.seen if name in ("status", "progress")][:6] == ["status"] * 5 + ["progress"]


def test_pausing_holds_the_steps_resuming_goes_on_and_stop_keeps_the_model(controllers, monkeypatch):
    """Was test_window.py's test_training_shows_progress_pauses_resumes_and_stops_keeping_the_model (the run)."""
    holding = threading.Event()  # set when the trainer waits while paused (before a step, or in a validation)
    wait_while_paused = TrainingControl.wait_while_paused

    def waiting(control):
        if control.paused:
            holding.set()
        return wait_while_paused(control)

    monkeypatch.setattr(TrainingControl, "wait_while_paused", waiting)
    training, inbox = controllers.training, controllers.inbox
    events = Recorder(training, *EVENTS)
    assert training.start(tiny_request(100_000))
    assert inbox.wait_until(lambda: len(steps(events)) >= 5, WAIT_S)
    losses = [progress.train_loss for (progress,) in events.of("progress")]
    assert np.all(np.isfinite(losses)) and losses[0] > 0
    assert steps(events) == list(range(1, len(losses) + 1))
    last = events.of("progress")[-1][0]
    assert 0 < last.fraction < 1

    training.pause()
    assert training.paused and training.running
    assert inbox.wait_until(lambda: holding.is_set(), WAIT_S)  # the trainer waits: no step can come any more
    inbox.drain()  # the steps it reported before it stopped
    paused_at = steps(events)[-1]
    holding.clear()
    inbox.drain()
    assert steps(events)[-1] == paused_at and training.paused and not holding.is_set()
    training.resume()
    assert not training.paused
    assert inbox.wait_until(lambda: steps(events)[-1] > paused_at + 3, WAIT_S)

    training.stop(keep=True)
    assert inbox.wait_until(lambda: not training.running, WAIT_S)
    [(outcome,)] = events.of("finished")
    assert outcome.stopped is StopReason.CANCELLED and outcome.bundle is not None
    assert outcome.steps == steps(events)[-1] and events.of("failed") == []
    assert events.of("running_changed") == [(True,), (False,)]


def test_training_to_the_end_validates_each_epoch_and_keeps_the_model(controllers):
    """Was test_window.py's test_training_to_the_end_makes_the_model_active_and_cancel_discards (the run)."""
    training = controllers.training
    events = Recorder(training, *EVENTS)
    assert training.start(tiny_request(None, corpus=CorpusSpec("copy", size=400, seed=0), epochs=2))
    assert controllers.inbox.wait_until(lambda: not training.running, WAIT_S)
    validations = [validation for (validation,) in events.of("validation")]
    assert [validation.epoch for validation in validations] == [1, 2]
    assert all(validation.scores.samples for validation in validations)
    [(outcome,)] = events.of("finished")
    assert outcome.stopped is StopReason.FINISHED and outcome.bundle is not None
    assert len(outcome.bundle.history["validations"]) == 2 and events.of("progress")[-1][0].fraction == 1.0


RNN = dict(cell="gru", attention="bahdanau", local_window=0, d_embed=16, d_hidden=32, dropout=0.0)
TAGGER = dict(n_layers=1, d_model=32, n_heads=2, d_ff=64, dropout=0.0)


@pytest.mark.parametrize(
    "corpus, family, options, sentence",
    [("copy", "rnn", RNN, "a b c"), ("toy-fr-tags", "classifier", TAGGER, "The small cat sleeps.")],
    ids=["rnn", "tagger"],
)
def test_every_family_trains_and_is_explored_through_what_it_has(controllers, corpus, family, options, sentence):
    """Was test_training_families.py's test_an_rnn_trained_in_the_window_is_explored_through_its_one_head (the trace)
    and test_a_tagger_trained_in_the_window_shows_a_tag_for_every_word (what its trace holds)."""
    training, explore = controllers.training, controllers.explore
    events = Recorder(training, *EVENTS)
    steps_only = TrainingOptions(epochs=1000, max_steps=8, batch_size=16, warmup_steps=10, valid_every=None)
    request = TrainingRequest(CorpusSpec(corpus, size=400, seed=0), TokenizerOptions(vocab_size=100), options, steps_only, "cpu")
    request.family = family
    assert training.start(request)
    assert controllers.inbox.wait_until(lambda: not training.running, WAIT_S)
    [(outcome,)] = events.of("finished")
    assert outcome.bundle.family.name == family and outcome.stopped is StopReason.MAX_STEPS
    explore.set_model(outcome.bundle, trained=True)
    assert explore.translate(sentence) and explore.has_unsaved_training()
    trace = explore.trace
    if family == "rnn":  # one cross-attention head, nothing else
        assert trace.kinds == (AttentionKind.CROSS,) and trace.cross.shape[:2] == (1, 1) and trace.encoder_self is None
    else:  # the encoder's self-attention and a tag for every piece
        assert trace.kinds == (AttentionKind.ENCODER,) and trace.encoder_self is not None and trace.target_tokens == []
        assert trace.class_probabilities.shape == (len(trace.source_tokens), len(trace.class_names))


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


def test_closing_mid_training_stops_the_job_and_drops_its_reports(controllers):
    """Was test_window.py's test_closing_mid_training_stops_the_worker (the job)."""
    training = controllers.training
    events = Recorder(training, *EVENTS)
    training.start(tiny_request(100_000))
    assert controllers.inbox.wait_until(lambda: bool(events.of("progress")), WAIT_S)
    thread = controllers.runner.current("training").thread
    assert controllers.close(WAIT_S)
    assert not thread.is_alive() and not training.running
    controllers.inbox.drain()  # what the job had sent before it ended is dropped: the window has closed
    assert events.of("finished") == [] and events.of("failed") == [] and events.of("running_changed") == [(True,)]


def test_a_bad_corpus_file_gets_a_message_from_the_preview_and_from_training(controllers, tmp_path):
    """Was test_window.py's test_a_bad_corpus_and_a_bad_config_get_messages (the corpus's messages)."""
    training = controllers.training
    bad = tmp_path / "pairs.tsv"
    bad.write_text(BAD_TSV, encoding="utf-8")
    events = Recorder(training, "corpus_read", "corpus_failed", *EVENTS)
    training.read_corpus(CorpusSpec(str(bad)))
    assert controllers.inbox.wait_until(lambda: bool(events.seen), WAIT_S)
    why = f"{bad}:2: expected source<TAB>target, found no tab"
    assert events.seen == [("corpus_failed", why)]
    assert training.start(tiny_request(3, corpus=CorpusSpec(str(bad))))  # started anyway: the job says the same
    assert controllers.inbox.wait_until(lambda: not training.running, WAIT_S)
    assert events.of("failed") == [(why,)] and events.of("finished") == []
    assert events.of("running_changed") == [(True,), (False,)]


def test_a_configuration_the_model_refuses_gets_its_reason(controllers):
    """The training job's side of test_window.py's bad configuration (the Train form refuses it before Start)."""
    training = controllers.training
    events = Recorder(training, *EVENTS)
    assert training.start(tiny_request(3, n_heads=3))  # d_model 32 is not a multiple of 3
    assert controllers.inbox.wait_until(lambda: not training.running, WAIT_S)
    assert events.of("failed") == [("d_model (32) must be divisible by the number of heads (3): a multiple of it",)]
    assert events.of("finished") == [] and events.of("progress") == []


def test_a_corpus_file_is_read_for_its_preview(controllers, tmp_path):
    """Was test_window.py's test_choosing_a_corpus_file_and_cancelling_the_dialog (what is read)."""
    training = controllers.training
    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("".join(f"the cat {i}\tle chat {i}\n" for i in range(40)), encoding="utf-8")
    events = Recorder(training, "corpus_read", "corpus_failed")
    spec = CorpusSpec(str(corpus))
    training.read_corpus(spec)
    assert controllers.inbox.wait_until(lambda: bool(events.seen), WAIT_S)
    [(read_spec, splits)] = events.of("corpus_read")
    pairs = splits.train + splits.valid + splits.test
    assert read_spec is spec and splits.skipped_lines == 0 and events.of("corpus_failed") == []
    assert sorted((pair.source, pair.target) for pair in pairs) == sorted((f"the cat {i}", f"le chat {i}") for i in range(40))


def test_a_newer_corpus_choice_drops_the_file_being_read(controllers, tmp_path):
    training = controllers.training
    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("the cat\tle chat\n", encoding="utf-8")
    events = Recorder(training, "corpus_read", "corpus_failed")
    training.read_corpus(CorpusSpec(str(corpus)))
    thread = controllers.runner.current("corpus-preview").thread
    training.drop_corpus_reading()  # a built-in corpus was chosen meanwhile
    assert not controllers.runner.is_running("corpus-preview")
    thread.join(WAIT_S)
    controllers.inbox.drain()  # its end is delivered, and dropped
    assert events.seen == []


def test_a_training_step_is_timed_for_the_expected_duration(controllers):
    """The job behind test_training_presets.py's test_the_expected_duration_shows_before_start."""
    training = controllers.training
    measured = Recorder(training, "step_measured")
    model = dict(n_encoder_layers=1, n_decoder_layers=1, d_model=32, n_heads=2, d_ff=64, dropout=0.0)
    key = ("shape", 100, 16, 8, "transformer")
    assert training.measure_step(key, model, 100, 16, 8, "transformer")
    assert not training.measure_step(key, model, 100, 16, 8, "transformer")  # one is timed now
    assert controllers.inbox.wait_until(lambda: bool(measured.seen), WAIT_S)
    [(measured_key, seconds)] = measured.of("step_measured")
    assert measured_key == key and isinstance(seconds, float) and seconds > 0
