"""The neuron controller without a window (and without Qt): computed in a job only while shown, the row of the head and
query chosen equal to the core's, the query following the decoding step until one is chosen, a step back reading the
first rows of what was computed, every head's term shares, the row saved, and a family without queries and keys (or no
model) said in one line. (The view: tests/explorer/test_neuron_window.py.)"""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest

from model.kinds import AttentionKind
from model.neuron.tables import read_sentence
from model.neuron.terms import head_terms, neuron_row
from model.nn.registry import build_network
from model.nn.rnn_config import RNNConfig
from tests.conftest import assert_figure
from tests.explorer.controllers.recording import WAIT_S, Recorder

SENTENCE = "the cat sees the dog"


@pytest.fixture
def opened(controllers, default_bundle):
    controllers.explore.set_model(default_bundle)
    controllers.explore.translate(SENTENCE)
    return controllers.neuron, Recorder(controllers.neuron, "changed", "queries_changed", "message", "terms_ready")


def test_the_row_follows_the_head_and_the_step_and_equals_the_cores(controllers, opened, default_bundle):
    neuron, events = opened
    assert not neuron.running and neuron.vectors is None  # hidden: nothing computed
    neuron.follow(AttentionKind.CROSS, 2, 1)
    neuron.set_active(True)
    assert neuron.running
    assert controllers.inbox.wait_until(lambda: not neuron.running, WAIT_S)
    assert events.of("terms_ready") == [()]
    trace, vectors = read_sentence(default_bundle, SENTENCE)
    row = neuron.row
    assert row is not None and (row.kind, row.layer, row.head, row.query) == (AttentionKind.CROSS, 2, 1, trace.n_steps - 1)
    expected = neuron_row(vectors, "cross", 2, 1, trace.n_steps - 1, trace.axis_labels("cross"))
    np.testing.assert_allclose(row.weights, expected.weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(row.terms, expected.terms, rtol=0, atol=1e-12)
    np.testing.assert_allclose(row.weights, controllers.explore.trace.matrix("cross")[2, 1, -1], rtol=0, atol=5e-6)
    assert events.of("queries_changed")[-1] == (["le", "chat", "voit", "le", "chien", "</s>"], 5)
    # A step back: the first rows of what was computed, nothing computed again.
    controllers.explore.go_to_step(2)
    assert not neuron.running and neuron.row is not None and neuron.row.query == 1
    np.testing.assert_allclose(neuron.row.weights, expected.head_weights[1], rtol=0, atol=1e-12)
    neuron.set_query(0)  # a chosen query stays when the step moves on
    controllers.explore.go_to_step(4)
    assert neuron.row.query == 0 and not neuron.running
    neuron.follow(AttentionKind.DECODER, 0, "mean")  # an aggregate: head 1, said so
    assert neuron.row.head == 0 and neuron.row.kind is AttentionKind.DECODER and "showing head 1" in events.of("message")[-1][0]
    terms = neuron.head_terms(AttentionKind.ENCODER)
    assert terms is not None
    np.testing.assert_allclose(terms.shares, head_terms(vectors.of("encoder")).shares, rtol=0, atol=1e-12)


def test_the_row_is_saved_as_a_figure_and_a_csv(controllers, opened, tmp_path):
    neuron, _ = opened
    neuron.set_active(True)
    assert controllers.inbox.wait_until(lambda: not neuron.running, WAIT_S)
    written = neuron.save(tmp_path / "row.csv")
    with open(written, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert (
        len(rows) == 6
        and [r["key_token"] for r in rows[-2:]] == ["▁dog", "</s>"]
        and float(rows[0]["weight"]) == pytest.approx(neuron.row.weights[0])
    )
    assert_figure(neuron.save(tmp_path / "row.svg"), texts=("Neuron view: cross-attention",))
    with pytest.raises(Exception, match="save as .png, .svg, .pdf"):
        neuron.save(tmp_path / "row.txt")


def rnn_bundle(bundle):
    """``bundle``'s tokenizers with an untrained RNN (seed 002's family: attention without queries and keys)."""
    vocabulary = bundle.config.source_vocab_size
    rnn = build_network(RNNConfig(source_vocab_size=vocabulary, target_vocab_size=vocabulary, d_embed=16, d_hidden=32))
    return dataclasses.replace(bundle, model=rnn.eval())


def test_a_model_without_queries_and_keys_and_no_model_say_why(controllers, default_bundle):
    neuron, events = controllers.neuron, Recorder(controllers.neuron, "changed", "message")
    assert neuron.unavailable().startswith("Open or train a model first")
    controllers.explore.set_model(rnn_bundle(default_bundle))
    controllers.explore.translate("the cat")
    neuron.set_active(True)
    assert not neuron.running and neuron.row is None and not neuron.splits()
    assert events.of("message")[-1] == (
        "The neuron view is not available for this family (RNN encoder-decoder with attention): it has no queries and keys.",
    )
