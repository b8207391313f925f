"""Every family through the one training path, checkpoints and the stepper: seed 002's RNN with attention on a
translation corpus, seed 004's encoder-only tagger and sentence classifier on the toy-fr labelled corpora. Tiny
models, a few dozen steps: what is checked is the plumbing (and that the loss falls), not quality."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.data.corpora import CorpusError, CorpusSpec
from model.decoding.stepper import DecodingOptions, Stepper, full_pass_trace
from model.io import checkpoint
from model.training.pipeline import TokenizerOptions
from model.training.run import TrainingRequest, train
from model.training.trainer import TrainingOptions

RNN_OPTIONS = dict(cell="gru", attention="bahdanau", local_window=0, d_embed=16, d_hidden=32, dropout=0.0)
CLASSIFIER_OPTIONS = dict(n_layers=1, d_model=32, n_heads=4, d_ff=64, dropout=0.0)


def _train(corpus: str, family: str, model_options: dict, steps: int = 40, size: int = 600, vocab: int = 120):
    request = TrainingRequest(
        CorpusSpec(corpus, size=size),
        TokenizerOptions(vocab_size=vocab),
        model_options,
        TrainingOptions(epochs=50, max_steps=steps, batch_size=32, warmup_steps=10, valid_decode_limit=8, keep_best=False),
        "cpu",
        family=family,
    )
    outcome = train(request)
    assert outcome.bundle is not None, outcome.why
    return outcome.bundle


@pytest.fixture(scope="module")
def rnn_bundle():
    return _train("copy", "rnn", RNN_OPTIONS)


@pytest.fixture(scope="module")
def tagger_bundle():
    return _train("toy-fr-tags", "classifier", CLASSIFIER_OPTIONS, steps=80)


def test_the_rnn_trains_saves_and_decodes_like_its_full_pass(rnn_bundle, tmp_path):
    losses = [row[1] for row in rnn_bundle.history["steps"]]
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    path = checkpoint.save(rnn_bundle, tmp_path / "rnn.safetensors")
    loaded = checkpoint.load(path)
    assert loaded.family.name == "rnn" and loaded.config.to_dict() == rnn_bundle.config.to_dict()
    stepper = Stepper(loaded, "a b c d", DecodingOptions(max_steps=6))
    stepper.run()
    trace = stepper.trace()
    assert trace.encoder_self is None and trace.decoder_self is None
    assert trace.cross is not None and trace.cross.shape[:2] == (1, 1)  # one layer, one head
    np.testing.assert_allclose(trace.cross.sum(-1), 1.0, atol=1e-5)
    full = full_pass_trace(loaded, stepper.source_ids, stepper.target_ids())
    assert full.cross is not None
    assert np.abs(full.cross - trace.cross).max() <= 1e-5
    # Beam search and stepping back run through the RNN's cache too.
    beam = Stepper(loaded, "a b c d", DecodingOptions(strategy="beam", beam_width=3, max_steps=6))
    beam.run()
    assert beam.beam is not None and beam.steps
    stepper.jump(2)
    again = stepper.trace()
    assert np.abs(again.cross - trace.cross[:, :, :2]).max() <= 1e-6


def test_the_tagger_learns_tags_and_its_trace_is_one_full_pass(tagger_bundle, tmp_path):
    from model.training.evaluation import score
    from model.training.labelling import predict

    assert tagger_bundle.family.name == "classifier" and tagger_bundle.config.task == "tagging"
    assert "NOUN" in tagger_bundle.config.class_names
    losses = [row[1] for row in tagger_bundle.history["steps"]]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
    loaded = checkpoint.load(checkpoint.save(tagger_bundle, tmp_path / "tagger.safetensors"))
    stepper = Stepper(loaded, "The small cat sleeps.")
    trace = stepper.trace()
    assert trace.n_steps == 0 and trace.cross is None and trace.decoder_self is None
    assert trace.class_probabilities.shape == (len(stepper.source_ids), loaded.config.n_classes)
    full = full_pass_trace(loaded, stepper.source_ids, [])
    assert full.encoder_self is not None and trace.encoder_self is not None
    assert np.abs(full.encoder_self - trace.encoder_self).max() <= 1e-6
    words = trace.word_level()
    assert words.source_tokens[:4] == ["The", "small", "cat", "sleeps"] and len(words.class_probabilities) == len(
        words.source_tokens
    )
    labelled = predict(loaded.model, loaded.source_tokenizer, ["The small cat sleeps."], torch.device("cpu"))[0]
    assert labelled.words == ["The", "small", "cat", "sleeps", "."] and len(labelled.labels) == 5
    scores = score(loaded.model, loaded.source_tokenizer, loaded.target_tokenizer, [], torch.device("cpu"))
    assert scores.is_labelling


def test_a_sentence_classifier_trains_on_a_labelled_corpus():
    bundle = _train("toy-fr-negation", "classifier", CLASSIFIER_OPTIONS, steps=30)
    assert bundle.config.task == "sentence" and bundle.config.class_names == ["affirmative", "negated"]
    trace = Stepper(bundle, "The cat does not sleep.").trace()
    assert trace.class_probabilities.shape == (2,) and abs(float(trace.class_probabilities.sum()) - 1) < 1e-5
    assert bundle.history["validations"] and "macro_f1" in bundle.history["validations"][-1]


@pytest.mark.parametrize(
    ("corpus", "family", "options"),
    [("toy-fr-tags", "transformer", {}), ("toy-fr-tags", "rnn", RNN_OPTIONS), ("copy", "classifier", CLASSIFIER_OPTIONS)],
)
def test_a_family_that_cannot_learn_the_corpus_is_refused(corpus, family, options):
    with pytest.raises(CorpusError, match="cannot learn"):
        _train(corpus, family, options, steps=1, size=200)
