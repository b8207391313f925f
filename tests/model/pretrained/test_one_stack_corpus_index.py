"""The corpus index on one-stack Hugging Face models (GPT-2 and the Llama layout, decoder-only; BERT, encoder-only) and
the app's encoder-only classifier: what it keeps of each token is the library's own pass, read by the test through
``output_hidden_states`` and hooks of its own on the query and key projections (GPT-2's fused one, Llama's grouped
keys); its tokens are those of the Explore tab's trace, its head statistics the heads table's; a one-stack model's
index names only the side and kinds it has."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.corpus.build import IndexBuilder, IndexOptions
from model.corpus.extract import read_batch
from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, Layer, head_arrays
from model.corpus.sources import IndexCorpus, read_sentences
from model.data.corpora import CorpusSpec, Pair
from model.decoding.greedy import decoder_inputs
from model.decoding.stepper import Stepper
from model.inspection.heads import all_head_statistics
from model.kinds import AttentionKind
from model.nn.masking import Head
from model.training.pipeline import TokenizerOptions, prepare

PAIRS = [Pair("The old man sees the dog .", ""), Pair("The house is small .", "")]
CORPUS = IndexCorpus("toy-fr", limit=6, seed=2)


@pytest.fixture(scope="module")
def classifier_bundle():
    """The app's encoder-only classifier, untrained, with tokenizers for a sentence-class corpus."""
    options = dict(n_layers=2, d_model=32, n_heads=4, d_ff=64, dropout=0.0)
    spec, tokenizers = CorpusSpec("toy-fr-negation", size=200, seed=1), TokenizerOptions(vocab_size=100)
    bundle = prepare(spec, tokenizers, options, family="classifier")[0]
    bundle.model.eval()
    return bundle


def _kept_outputs(modules: list[torch.nn.Module], run) -> dict:
    kept: dict = {}
    handles = [module.register_forward_hook(lambda mod, _a, out: kept.update({mod: out})) for module in modules]
    try:
        with torch.no_grad():
            out = run()
    finally:
        for handle in handles:
            handle.remove()
    return {"out": out, **kept}


def _decoder_queries_keys(network, layer: int, kept: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """[T, H, d] queries and keys of ``layer`` from the test's hooks: GPT-2's c_attn thirds; Llama's q_proj and k_proj,
    each key head shared by n_heads / n_kv_heads consecutive query heads."""
    block = network.hf_model.get_submodule(network.modules.layers)[layer]
    n_heads = network.config.n_heads
    if hasattr(block, "attn"):  # GPT-2
        fused = kept[block.attn.c_attn][0]  # [T, 3 d_model]
        q, k, _ = fused.split(fused.shape[-1] // 3, dim=-1)
        return q.reshape(len(q), n_heads, -1), k.reshape(len(k), n_heads, -1)
    q, k = kept[block.self_attn.q_proj][0], kept[block.self_attn.k_proj][0]  # [T, H d], [T, H_kv d]
    width = q.shape[-1] // n_heads
    k_heads = k.reshape(len(k), -1, width)  # [T, H_kv, d]
    return q.reshape(len(q), n_heads, width), k_heads[:, [h // (n_heads // k_heads.shape[1]) for h in range(n_heads)]]


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_decoder_only_index_reads_the_library_s_own_pass_over_prompt_and_continuation(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    head = Head(AttentionKind.DECODER, 0, 3)
    reading = read_batch(bundle, PAIRS, [Layer("decoder", 1)], [head])
    stepper = Stepper(bundle, PAIRS[0].source)
    stepper.run()
    trace = stepper.trace()
    first = reading.sentences[0]
    assert first.source_tokens == [] and first.decoder_tokens == trace.decoder_input_tokens
    assert first.next_tokens == trace.target_tokens
    inputs = torch.tensor([decoder_inputs(network, stepper.source_ids, stepper.target_ids())])  # [1, T]: the trace's
    block = network.hf_model.get_submodule(network.modules.layers)[0]
    modules = [block.attn.c_attn] if family == "gpt2" else [block.self_attn.q_proj, block.self_attn.k_proj]
    kept = _kept_outputs(modules, lambda: network.hf_model(input_ids=inputs, output_hidden_states=True))
    q, k = _decoder_queries_keys(network, 0, kept)
    length = len(first.decoder_tokens)
    q_name, k_name = head_arrays(head)
    np.testing.assert_allclose(reading.arrays[q_name][:length], q[:, 3].numpy(), atol=1e-5)
    np.testing.assert_allclose(reading.arrays[k_name][:length], k[:, 3].numpy(), atol=1e-5)
    hidden = kept["out"].hidden_states[1][0]  # [T, d_model]: the first layer's output (not the last: ln_f follows it)
    np.testing.assert_allclose(reading.arrays["resid.decoder.L1"][:length], hidden.numpy(), atol=1e-5)
    assert len(reading.stats["entropy"]) == 2 * network.config.n_decoder_layers * network.config.n_heads
    assert set(reading.stats["kind"]) == {"decoder"}


def test_an_encoder_only_index_reads_the_library_s_own_pass(tiny_bundles):
    bundle = tiny_bundles["bert-mlm"]
    network = bundle.model
    head = Head(AttentionKind.ENCODER, 1, 2)
    reading = read_batch(bundle, PAIRS, [Layer("encoder", 1)], [head])
    ids = torch.tensor([bundle.source_ids(PAIRS[1].source)[0]])
    layer = network.layers()[1]
    kept = _kept_outputs(
        [layer.attention.self.query, layer.attention.self.key], lambda: network.hf_model(input_ids=ids, output_hidden_states=True)
    )
    width = network.config.d_model // network.config.n_heads
    rows = slice(len(reading.sentences[0].source_tokens), None)  # the second sentence's rows
    q_name, k_name = head_arrays(head)
    query, key = kept[layer.attention.self.query][0], kept[layer.attention.self.key][0]
    np.testing.assert_allclose(reading.arrays[q_name][rows], query[:, 2 * width : 3 * width].numpy(), atol=1e-5)
    np.testing.assert_allclose(reading.arrays[k_name][rows], key[:, 2 * width : 3 * width].numpy(), atol=1e-5)
    np.testing.assert_allclose(reading.arrays["resid.encoder.L1"][rows], kept["out"].hidden_states[1][0].numpy(), atol=1e-5)
    assert [sentence.decoder_tokens for sentence in reading.sentences] == [[], []]


@pytest.mark.parametrize("family", ["gpt2", "bert-mlm", "classifier"])
def test_a_one_stack_index_holds_its_side_and_kind_only_and_the_heads_table_s_statistics(
    tiny_bundles, classifier_bundle, family, tmp_path
):
    bundle = classifier_bundle if family == "classifier" else tiny_bundles[family]
    side, kind = ("decoder", AttentionKind.DECODER) if family == "gpt2" else ("encoder", AttentionKind.ENCODER)
    folder = tmp_path / "index"
    result = IndexBuilder(bundle, family, CORPUS, folder, IndexOptions(dims=4, chunk_size=4, pca_sentences=3)).run()
    assert result.complete
    pairs = read_sentences(CORPUS)
    with CorpusIndex(folder) as index:
        manifest = index.manifest
        assert manifest.kinds == [kind.value] and manifest.sides() == (side,)
        assert {layer.side for layer in manifest.layer_list} == {side}
        assert {head.kind for head in manifest.head_list} == {kind}
        other = "encoder" if side == "decoder" else "decoder"
        assert index.n_rows(other) == 0
        for sentence_id in (0, 5):
            stepper = Stepper(bundle, pairs[sentence_id].source)
            stepper.run()
            trace = stepper.trace()
            shown = trace.decoder_input_tokens if side == "decoder" else trace.source_tokens
            assert index.sentence_tokens(side, sentence_id) == shown
            _, rows = index.query(
                "SELECT previous_share, normalised_entropy, role FROM head_stats WHERE sentence_id = ? ORDER BY kind, layer, head",
                [sentence_id],
            )
            flat = [stats for layer in all_head_statistics(trace)[kind] for stats in layer]
            np.testing.assert_allclose(
                [row[:2] for row in rows], [(s.previous_share, s.normalised_entropy) for s in flat], atol=1e-5
            )
            assert [row[2] for row in rows] == [s.role for s in flat]
        with pytest.raises(CorpusIndexError, match="has no cross-attention"):
            index.check_head(Head(AttentionKind.CROSS, 0, 0))


def test_a_side_or_kind_a_one_stack_model_lacks_is_refused_in_one_line(tiny_bundles, tmp_path):
    bundle = tiny_bundles["gpt2"]
    with pytest.raises(CorpusIndexError, match="this model has no encoder"):
        IndexBuilder(bundle, "gpt2", CORPUS, tmp_path / "a", IndexOptions(layers="encoder:1")).run()
    with pytest.raises(CorpusIndexError, match="this model has no cross-attention"):
        IndexBuilder(bundle, "gpt2", CORPUS, tmp_path / "b", IndexOptions(heads="cross:1")).run()
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_prompts_decoded_together_left_padded_are_each_decoded_alone(tiny_bundles, family):
    """The index decodes a decoder-only model's prompts in one batch, left-padded (the pads masked, each row's
    positions its own): the same steps as the Stepper's one prompt at a time, a row that ended kept as it was."""
    from model.decoding.greedy import greedy_prompt, greedy_prompts

    bundle = tiny_bundles[family]
    rows = [bundle.source_ids(pair.source)[0] for pair in read_sentences(IndexCorpus("toy-fr", limit=24))]
    assert len({len(row) for row in rows}) > 5  # prompts of many lengths
    with torch.inference_mode():
        together = greedy_prompts(bundle.model, rows)
        alone = [greedy_prompt(bundle.model, torch.tensor([row])) for row in rows]
    assert together == alone
