"""The neuron view's core (model/neuron/): every head's softmax row is the traced attention, the four positional terms
sum to the score, known answers on patched models, and the families without queries and keys refused in one line."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from model.decoding.stepper import Stepper
from model.errors import UserError
from model.io import checkpoint
from model.io.shipped import resolve_model
from model.kinds import AttentionKind
from model.neuron.splits import ABSOLUTE_TERMS, TERM_NAMES
from model.neuron.tables import read_sentence, row_rows, share_rows
from model.neuron.terms import classify, head_terms, neuron_row
from model.neuron.vectors import NeuronError, sentence_vectors
from model.nn.config import TransformerConfig
from model.nn.registry import build_network
from model.nn.rnn_config import RNNConfig
from model.nn.transformer import Transformer

TEXT = "the black cat sees the small dog"


@pytest.fixture(scope="module")
def default():
    return checkpoint.load(resolve_model("default"))


@pytest.fixture(scope="module")
def default_read(default):
    """The default model's trace of TEXT (decoded as the Explore tab decodes it) and its vectors."""
    return read_sentence(default, TEXT)


def every_row(vectors):
    """(kind, layer, head, query) of every query row of every head."""
    for kind, kind_vectors in vectors.kinds.items():
        layers, heads, n_queries, _ = kind_vectors.shape
        for layer in range(layers):
            for head in range(heads):
                for query in range(n_queries):
                    yield kind, layer, head, query


def test_softmax_rows_equal_the_traced_attention_for_every_head_of_default(default, default_read):
    """Against the trace of the model decoded in float64 (whose stored float32 rows carry no float32 arithmetic): within
    1e-6 for every row of every head of every kind. The app's float32 trace differs by its own float32 rounding (the
    default model's encoder scores reach ~300), a few 1e-6 at most."""
    trace, vectors = default_read
    double = dataclasses.replace(default, model=copy.deepcopy(default.model).double())
    stepper = Stepper(double, TEXT)
    stepper.run()
    exact = stepper.trace()
    assert list(exact.chosen_ids) == list(trace.chosen_ids) and set(vectors.kinds) == set(AttentionKind)
    for kind, layer, head, query in every_row(vectors):
        row = neuron_row(vectors, kind, layer, head, query, trace.axis_labels(kind))
        np.testing.assert_allclose(row.weights, exact.matrix(kind)[layer, head, query], rtol=0, atol=1e-6)
        np.testing.assert_allclose(row.weights, trace.matrix(kind)[layer, head, query], rtol=0, atol=5e-6)
        assert row.weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_four_terms_sum_to_the_score_for_every_head_of_default(default_read):
    trace, vectors = default_read
    for kind, kind_vectors in vectors.kinds.items():
        terms = kind_vectors.terms  # [4, layers, heads, Q, K]
        assert terms is not None
        visible = np.isfinite(kind_vectors.scores)  # [layers, heads, Q, K]
        assert visible.any() and (kind is AttentionKind.DECODER) == (not visible.all())
        np.testing.assert_allclose(terms.sum(0)[visible], kind_vectors.scores[visible], rtol=0, atol=1e-5)
    row = neuron_row(vectors, "decoder", 1, 2, 3, trace.axis_labels("decoder"))
    assert row.terms is not None and np.isnan(row.terms[:, 4:]).all() and np.isneginf(row.scores[4:]).all()
    np.testing.assert_allclose(row.terms[:, :4].sum(0), row.scores[:4], rtol=0, atol=1e-5)
    np.testing.assert_allclose(row.products[:, :4].sum(0) / np.sqrt(row.d_k), row.scores[:4], atol=1e-9, rtol=0)
    assert row.shares is not None and row.shares.sum() == pytest.approx(1.0)


def tiny(norm: str, positions: str) -> Transformer:
    torch.manual_seed(0)
    config = TransformerConfig(40, 40, 2, 2, 32, 4, 64, dropout=0.0, max_len=16, norm_placement=norm, positional_encoding=positions)
    model = Transformer(config).eval()
    with torch.no_grad():  # LayerNorms as trained ones are: not the identity (β is content, γ scales both parts)
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)
    return model


SOURCE, TARGET = [5, 9, 11, 7, 3], [6, 8, 10, 3]


@pytest.mark.parametrize("norm, positions", [("pre", "learned"), ("post", "sinusoidal")])
def test_pre_and_post_norm_rows_equal_the_inspection_pass_and_their_terms_sum(norm, positions):
    model = tiny(norm, positions)
    vectors = sentence_vectors(model, SOURCE, TARGET)
    _, weights = model.inspect(torch.tensor([SOURCE]), torch.tensor([[2] + TARGET[:-1]]))
    for kind in AttentionKind:
        inspected = torch.stack(getattr(weights, kind.field))[:, 0].detach().double().numpy()  # [layers, heads, Q, K]
        kind_vectors = vectors.of(kind)
        np.testing.assert_allclose(kind_vectors.weights, inspected, rtol=0, atol=1e-6)
        terms = kind_vectors.terms  # [4, layers, heads, Q, K]
        assert terms is not None
        visible = np.isfinite(kind_vectors.scores)
        np.testing.assert_allclose(terms.sum(0)[visible], kind_vectors.scores[visible], rtol=0, atol=1e-9)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_zeroed_token_embeddings_leave_only_the_position_position_term_in_the_first_layer(norm):
    """A known answer: with every token embedding zero (and the first LayerNorms' β zero, so that nothing but the
    positions reaches the first attention), the first layer's self-attention scores are position·position alone."""
    model = tiny(norm, "sinusoidal")
    with torch.no_grad():
        model.source_embedding.weight.zero_()
        for layer in (model.encoder_layers[0], model.decoder_stack[0]):
            layer.norms[0].bias.zero_()
    vectors = sentence_vectors(model, SOURCE, TARGET)
    for kind in (AttentionKind.ENCODER, AttentionKind.DECODER):
        kind_vectors = vectors.of(kind)
        terms = kind_vectors.terms  # [4, layers, heads, Q, K]
        assert terms is not None
        visible = np.isfinite(kind_vectors.scores[0])
        assert np.abs(terms[:3, 0]).max() < 1e-12  # token·token, token·position, position·token
        np.testing.assert_allclose(terms[3, 0][visible], kind_vectors.scores[0][visible], rtol=0, atol=1e-12)
        shares = head_terms(kind_vectors).shares[0]  # [heads, 4]
        np.testing.assert_allclose(shares, np.tile([0.0, 0.0, 0.0, 1.0], (len(shares), 1)), atol=1e-9)
        assert {classify(head, ABSOLUTE_TERMS) for head in shares} == {"positional"}


def test_zeroed_learned_positions_leave_only_the_token_token_term_everywhere():
    model = tiny("pre", "learned")
    with torch.no_grad():
        model.positional_table.zero_()
    vectors = sentence_vectors(model, SOURCE, TARGET)
    for kind_vectors in vectors.kinds.values():
        assert kind_vectors.terms is not None and np.abs(kind_vectors.terms[1:]).max() == 0  # no position part
        shares = head_terms(kind_vectors).shares  # [layers, heads, 4]
        np.testing.assert_allclose(shares[..., 0], 1.0)
        assert {classify(head, ABSOLUTE_TERMS) for head in shares.reshape(-1, 4)} == {"content"}


def test_the_encoder_only_tagger_reads_its_queries_and_keys():
    tagger = checkpoint.load(resolve_model("tagger"))
    trace, vectors = read_sentence(tagger, "the cat sleeps on the mat")
    assert set(vectors.kinds) == {AttentionKind.ENCODER} and vectors.positions
    np.testing.assert_allclose(vectors.of("encoder").weights, trace.matrix("encoder"), rtol=0, atol=5e-6)
    with pytest.raises(NeuronError, match="this model has no cross-attention"):
        neuron_row(vectors, "cross", 0, 0, 0)


def test_bad_choices_and_a_family_without_queries_and_keys_get_one_line(default, default_read):
    trace, vectors = default_read
    for args, message in (
        (("cross", 3, 0, 0), "layer 4: this model's cross-attention .* has layers 1 to 3"),
        (("cross", 0, 4, 0), "head 5: this model's layers have heads 1 to 4"),
        (("encoder", 0, 0, 8), "query 9: the encoder self-attention has queries 1 to 8"),
    ):
        with pytest.raises(NeuronError, match=message):
            neuron_row(vectors, *args)
    rnn = build_network(RNNConfig(source_vocab_size=40, target_vocab_size=40, d_embed=16, d_hidden=32))
    with pytest.raises(
        UserError, match=r"^the neuron view is not available for this family \(RNN .*\): it has no queries and keys$"
    ):
        sentence_vectors(rnn, [5, 3], [6, 3])
    with pytest.raises(UserError, match="it has no queries and keys"):
        read_sentence(dataclasses.replace(default, model=rnn), TEXT)


def test_csv_rows_hold_the_row_and_every_heads_shares(default_read):
    trace, vectors = default_read
    row = neuron_row(vectors, "cross", 2, 1, 3, trace.axis_labels("cross"))
    rows = row_rows(row)
    assert len(rows) == len(trace.source_tokens) and rows[3]["key_token"] == "▁sees" and rows[0]["query_token"] == "▁voit"
    assert sum(r["weight"] for r in rows) == pytest.approx(1.0)
    assert rows[2]["score"] == pytest.approx(sum(rows[2][name] for name in TERM_NAMES))
    assert rows[1][f"product_{row.d_k}"] == pytest.approx(rows[1][f"key_{row.d_k}"] * rows[1][f"query_{row.d_k}"])
    shares = share_rows(vectors)
    assert len(shares) == 3 * (3 * 4) and {r["class"] for r in shares} <= {"positional", "content", "mixed"}
    assert all(sum(r[name] for name in TERM_NAMES) == pytest.approx(1.0) for r in shares)
