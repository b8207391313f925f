"""The corpus index on Hugging Face encoder-decoders (T5, Marian, mBART): what it keeps of each token is the library's own
pass, read by the test through ``output_hidden_states``, ``output_attentions`` and hooks of its own on the query and key
projections; the index is searched only with the model it was built with."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.corpus.build import IndexBuilder, IndexOptions
from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError
from model.corpus.sources import IndexCorpus
from model.data.corpora import Pair
from model.decoding.greedy import greedy_decode
from model.kinds import AttentionKind
from tests.model.library_by_hand import attention_by_hand

PAIRS = [Pair("The house is small .", ""), Pair("The old man sees the dog .", "")]


@pytest.fixture(scope="module")
def bundles(tiny_bundles, pre_norm_bundles) -> dict:
    return {"t5": tiny_bundles["t5"], "marian": tiny_bundles["marian"], "mbart": pre_norm_bundles["mbart"]}


def _projections(network, kind: AttentionKind, layer: int):
    """(query projection, key projection) of ``kind`` in ``layer``, by the test's own names."""
    attention = attention_by_hand(network, kind, layer)
    return attention.queries, attention.keys


@pytest.mark.parametrize("layout", ["t5", "marian", "mbart"])
def test_the_index_reads_the_library_s_own_pass(bundles, layout):
    from model.corpus.extract import read_batch
    from model.corpus.layout import Layer, head_arrays
    from model.nn.masking import Head

    bundle = bundles[layout]
    network = bundle.model
    head = Head(AttentionKind.CROSS, 1, 2)
    reading = read_batch(bundle, PAIRS[:1], [Layer("encoder", 2), Layer("decoder", 1)], [head])
    source = torch.tensor([bundle.source_ids(PAIRS[0].source)[0]])
    decoder_tokens = reading.sentences[0].decoder_tokens
    produced = reading.sentences[0].next_tokens
    assert len(decoder_tokens) == len(produced)
    kept: dict = {}
    query, key = _projections(network, AttentionKind.CROSS, 1)
    with torch.no_grad():
        output = greedy_decode(network, source)[0]
    handles = [m.register_forward_hook(lambda mod, _a, out: kept.update({mod: out})) for m in (query, key)]
    try:
        with torch.no_grad():
            inputs = torch.tensor([[bundle.config.bos_id, *output[: len(decoder_tokens) - 1]]])
            out = network.hf_model(input_ids=source, decoder_input_ids=inputs, output_hidden_states=True, output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()
    width = kept[query].shape[-1] // network.config.n_heads
    q_name, k_name = head_arrays(head)
    assert np.allclose(reading.arrays[q_name], kept[query][0, :, 2 * width : 3 * width].numpy(), atol=1e-5)
    assert np.allclose(reading.arrays[k_name], kept[key][0, :, 2 * width : 3 * width].numpy(), atol=1e-5)
    assert np.allclose(reading.arrays["resid.decoder.L1"], out.decoder_hidden_states[1][0].numpy(), atol=1e-5)
    encoder_last = out.encoder_hidden_states[2][0] if layout == "marian" else None  # post-norm: no final norm between
    if encoder_last is not None:
        assert np.allclose(reading.arrays["resid.encoder.L2"], encoder_last.numpy(), atol=1e-5)
    entropy = reading.stats["entropy"]
    assert len(entropy) == 2 * network.config.n_heads + 2 * 2 * network.config.n_heads  # every kind, layer and head


def test_an_index_of_a_pretrained_model_is_built_and_searched_with_that_model_only(bundles, tmp_path):
    bundle = bundles["t5"]
    folder = tmp_path / "index"
    corpus = IndexCorpus("toy-fr", limit=12)
    IndexBuilder(bundle, "tiny-t5", corpus, folder, IndexOptions(dims=4, heads="cross:2:1")).run()
    index = CorpusIndex(folder)
    index.check_model(bundle)
    assert index.manifest.d_head == bundle.model.hf_model.config.d_kv
    with pytest.raises(CorpusIndexError, match="was indexed with another model"):
        index.check_model(bundles["marian"])
