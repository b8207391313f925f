"""The neuron view of Hugging Face encoder-only models (model/neuron/encoder_vectors.py): BERT and DistilBERT, post-norm
with a learned position table, against the test's own reading of the library's modules:

* the queries and keys are the library's own projections' outputs (the test's hooks);
* the softmax of the scores is the library's ``output_attentions``, and the four terms sum to the scores;
* layer 1's position·position term is the test's own: the position rows the library adds, through the embedding
  LayerNorm with the embedded sum's statistics (computed here from the embedding modules), through the query and key
  weights alone, over √d_k.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.kinds import AttentionKind
from model.neuron.vectors import sentence_vectors, splits_positions

TEXT = "The house is small and the cat"


@pytest.fixture(scope="module")
def encoders(tiny_bundles, tmp_path_factory) -> dict:
    from model.pretrained.loading import load_pretrained
    from model.pretrained.tiny import build

    folder = build("distilbert", tmp_path_factory.mktemp("distilbert-neuron") / "distilbert")
    return {"bert": tiny_bundles["bert-mlm"], "distilbert": load_pretrained(str(folder))}


def _parts(network):
    """(embeddings module, first layer's query and key projections) by the library's names."""
    hf_model = network.hf_model
    if network.config.model_type == "distilbert":
        layer = hf_model.distilbert.transformer.layer[0].attention
        return hf_model.distilbert.embeddings, layer.q_lin, layer.k_lin
    layer = hf_model.bert.encoder.layer[0].attention.self
    return hf_model.bert.embeddings, layer.query, layer.key


@pytest.mark.parametrize("layout", ["bert", "distilbert"])
def test_queries_keys_and_weights_are_the_library_s(encoders, layout):
    bundle = encoders[layout]
    network = bundle.model
    ids = bundle.source_ids(TEXT)[0]
    _, query, key = _parts(network)
    kept: dict[str, torch.Tensor] = {}
    handles = [
        query.register_forward_hook(lambda _m, _a, out: kept.__setitem__("q", out)),
        key.register_forward_hook(lambda _m, _a, out: kept.__setitem__("k", out)),
    ]
    try:
        with torch.no_grad():
            out = network.hf_model(input_ids=torch.tensor([ids]), output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()
    vectors = sentence_vectors(network, ids).of(AttentionKind.ENCODER)
    heads = network.config.n_heads
    q = kept["q"][0].reshape(len(ids), heads, -1).transpose(0, 1)  # [H, S, d]
    k = kept["k"][0].reshape(len(ids), heads, -1).transpose(0, 1)
    assert np.allclose(vectors.queries[0], q.numpy(), atol=1e-5) and np.allclose(vectors.keys[0], k.numpy(), atol=1e-5)
    for layer, weights in enumerate(out.attentions):
        assert np.allclose(vectors.weights[layer], weights[0].numpy(), atol=1e-5)
    assert np.allclose(vectors.terms.sum(0), vectors.scores, atol=1e-9) and splits_positions(network)


@pytest.mark.parametrize("layout", ["bert", "distilbert"])
def test_the_first_layer_s_position_term_is_the_position_rows_through_the_embedding_norm(encoders, layout):
    bundle = encoders[layout]
    network = bundle.model
    ids = torch.tensor([bundle.source_ids(TEXT)[0]])  # [1, S]
    embeddings, query, key = _parts(network)
    with torch.no_grad():
        rows = embeddings.position_embeddings(torch.arange(ids.shape[1]))[None]  # [1, S, d_model]
        embedded = embeddings.word_embeddings(ids) + rows  # [1, S, d_model]
        if hasattr(embeddings, "token_type_embeddings"):  # BERT's: one segment, type 0 (the test's own reading)
            embedded = embedded + embeddings.token_type_embeddings(torch.zeros_like(ids))
        norm = embeddings.LayerNorm
        sigma = torch.sqrt(embedded.var(-1, unbiased=False, keepdim=True) + norm.eps)
        position = norm.weight * (rows - rows.mean(-1, keepdim=True)) / sigma  # [1, S, d_model]
        heads = network.config.n_heads
        q = (position @ query.weight.T)[0].reshape(ids.shape[1], heads, -1).transpose(0, 1)  # [H, S, d]
        k = (position @ key.weight.T)[0].reshape(ids.shape[1], heads, -1).transpose(0, 1)
        expected = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])  # [H, S, S]
    vectors = sentence_vectors(network, ids[0].tolist()).of(AttentionKind.ENCODER)
    assert np.allclose(vectors.terms[3][0], expected.numpy(), atol=1e-5)  # position·position, layer 1
