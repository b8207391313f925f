"""The neuron view on Hugging Face encoder-decoders (T5, Marian, BART, mBART, M2M100, Pegasus), against the test's own
reading of the library's modules (by the test's own names, through its own hooks and ``output_attentions``):

* the weights are the library's own attention, and the softmax of the scores shown gives them;
* the queries and keys are the library's projections' outputs, per head;
* T5: the relative-position term is the library's own bias (log-weights minus query·key, row-centred);
* the absolute layouts: the first encoder layer's position·position term is the test's own positional part (the
  positions module's output, through the embedding norm and a pre-norm layer's norm) through the query and key
  weights; a Marian with its token embeddings, projection biases and norm shifts zeroed has nothing else in that layer
  (a known answer);
* the view's row, the CLI's ``neuron`` command and the capability claim agree.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from model.kinds import AttentionKind
from model.neuron.terms import head_terms, neuron_row
from model.neuron.vectors import sentence_vectors
from tests.model.library_by_hand import SOURCE, attention_by_hand, library_pass, read_only, sentence_case

ENCODER, DECODER, CROSS = AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS
LAYOUTS = ("t5", "marian", "bart", "mbart", "m2m100", "pegasus")
ABSOLUTE_LAYOUTS = LAYOUTS[1:]


def _projections(network, kind: AttentionKind, layer: int) -> tuple[torch.nn.Linear, torch.nn.Linear]:
    attention = attention_by_hand(network, kind, layer)
    return attention.queries, attention.keys


def _heads(values: torch.Tensor, n_heads: int) -> np.ndarray:
    """[1, L, H * d] -> [H, L, d]."""
    return values[0].detach().reshape(values.shape[1], n_heads, -1).transpose(0, 1).double().numpy()


def _read(network, source, inputs, modules) -> tuple[object, dict]:
    with torch.no_grad():
        return library_pass(network, source, inputs, read_only(modules))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_queries_keys_and_weights_are_the_library_s_own(encoder_decoders, layout):
    network = encoder_decoders[layout].model
    source_ids, chosen, source, inputs = sentence_case(encoder_decoders[layout])
    vectors = sentence_vectors(network, source_ids, chosen)
    wanted = [(kind, layer) for kind in (ENCODER, DECODER, CROSS) for layer in range(2)]
    out, kept = _read(network, source, inputs, [p for kind, layer in wanted for p in _projections(network, kind, layer)])
    maps = {ENCODER: out.encoder_attentions, DECODER: out.decoder_attentions, CROSS: out.cross_attentions}
    for kind, layer in wanted:
        kind_vectors = vectors.of(kind)
        n_heads = kind_vectors.shape[1]
        q_projection, k_projection = _projections(network, kind, layer)
        np.testing.assert_allclose(kind_vectors.queries[layer], _heads(kept[q_projection], n_heads), atol=1e-6)
        np.testing.assert_allclose(kind_vectors.keys[layer], _heads(kept[k_projection], n_heads), atol=1e-6)
        library_weights = maps[kind][layer][0].double().numpy()  # [H, Q, K]
        np.testing.assert_allclose(kind_vectors.weights[layer], library_weights, atol=1e-6)
        scores = kind_vectors.scores[layer]
        softmax = np.exp(scores - scores.max(-1, keepdims=True))
        np.testing.assert_allclose(softmax / softmax.sum(-1, keepdims=True), library_weights, atol=1e-5)
        visible = np.isfinite(scores)
        assert (kind is DECODER) == (not visible.all())  # only the decoder's later keys are masked
        assert kind_vectors.terms is not None
        np.testing.assert_allclose(kind_vectors.terms[:, layer].sum(0)[visible], scores[visible], rtol=0, atol=1e-5)


def test_t5_s_position_term_is_its_relative_bias(encoder_decoders):
    network = encoder_decoders["t5"].model
    source_ids, chosen, source, inputs = sentence_case(encoder_decoders["t5"])
    vectors = sentence_vectors(network, source_ids, chosen)
    out, _ = _read(network, source, inputs, [])
    maps = {ENCODER: out.encoder_attentions, DECODER: out.decoder_attentions, CROSS: out.cross_attentions}
    for kind in (ENCODER, DECODER, CROSS):
        kind_vectors = vectors.of(kind)
        assert kind_vectors.term_split is not None and kind_vectors.term_split.names[1] == "relative position bias"
        for layer in range(2):
            products = np.einsum("hqd,hkd->hqk", kind_vectors.queries[layer], kind_vectors.keys[layer])  # no √d_k in T5
            logs = np.log(maps[kind][layer][0].double().numpy())  # the library's weights: scores minus a row constant
            visible = np.isfinite(kind_vectors.scores[layer])
            own_bias = np.where(visible, logs - products, 0.0)
            shown = np.where(visible, kind_vectors.terms[1, layer], 0.0)
            centred = [
                np.where(visible, b - (b.sum(-1, keepdims=True) / visible.sum(-1, keepdims=True)), 0.0) for b in (own_bias, shown)
            ]
            np.testing.assert_allclose(centred[1], centred[0], atol=1e-4)
            if kind is CROSS:
                assert not kind_vectors.terms[1, layer].any()  # T5's cross-attention adds no position bias
    assert head_terms(vectors.of(ENCODER)).split.names == ("query·key", "relative position bias")


def _positions_module(network, side: str) -> torch.nn.Module:
    stack = network.hf_model.get_encoder() if side == "encoder" else network.hf_model.get_decoder()
    return stack.embed_positions


@pytest.mark.parametrize("layout", ABSOLUTE_LAYOUTS)
def test_the_first_encoder_layer_s_position_term_is_the_position_table_through_its_norms(encoder_decoders, layout):
    network = encoder_decoders[layout].model
    source_ids, chosen, source, inputs = sentence_case(encoder_decoders[layout])
    vectors = sentence_vectors(network, source_ids, chosen, private=False)
    encoder = network.hf_model.get_encoder()
    first = encoder.layers[0]
    embedded: dict = {}
    handle = None
    if hasattr(encoder, "layernorm_embedding"):
        handle = encoder.layernorm_embedding.register_forward_pre_hook(lambda _m, args: embedded.setdefault("x", args[0]))
    try:
        out, kept = _read(network, source, inputs, [_positions_module(network, "encoder")])
    finally:
        if handle is not None:
            handle.remove()
    position = kept[_positions_module(network, "encoder")].reshape(1, len(source_ids), -1).double()  # [1, S, d]

    def part(norm: torch.nn.LayerNorm, full: torch.Tensor, piece: torch.Tensor) -> torch.Tensor:
        centred = piece - piece.mean(-1, keepdim=True)
        return centred / torch.sqrt(full.double().var(-1, unbiased=False, keepdim=True) + norm.eps) * norm.weight.double()

    if "x" in embedded:  # BART, mBART: the sum of embeddings and positions is normed first
        position = part(encoder.layernorm_embedding, embedded["x"], position)
    pre_norm = layout in ("mbart", "m2m100", "pegasus")
    read = part(first.self_attn_layer_norm, out.encoder_hidden_states[0], position) if pre_norm else position
    q_projection, k_projection = _projections(network, ENCODER, 0)
    n_heads = network.config.n_encoder_heads
    q = _heads((read @ q_projection.weight.double().T).float(), n_heads)
    k = _heads((read @ k_projection.weight.double().T).float(), n_heads)
    own = np.einsum("hqd,hkd->hqk", q, k) / math.sqrt(q.shape[-1])
    np.testing.assert_allclose(vectors.of(ENCODER).terms[3, 0], own, atol=1e-4)  # position·position


def test_a_marian_reading_no_tokens_has_only_its_position_term_in_the_first_layer(encoder_decoders):
    """Token embeddings, the query and key biases and the norms' shifts zeroed: the first encoder layer reads the
    sinusoidal positions alone, so its scores are position·position."""
    network = copy.deepcopy(encoder_decoders["marian"].model)
    with torch.no_grad():
        network.hf_model.get_encoder().embed_tokens.weight.zero_()
        attention = network.hf_model.get_encoder().layers[0].self_attn
        attention.q_proj.bias.zero_()
        attention.k_proj.bias.zero_()
    source_ids, chosen, _, _ = sentence_case(encoder_decoders["marian"])
    vectors = sentence_vectors(network, source_ids, chosen, private=True)
    terms = vectors.of(ENCODER).terms  # [4, layers, H, S, S]
    assert np.abs(terms[:3, 0]).max() < 1e-9
    np.testing.assert_allclose(terms[3, 0], vectors.of(ENCODER).scores[0], atol=1e-9)
    assert {head_terms(vectors.of(ENCODER)).verdict(0, head) for head in range(terms.shape[2])} == {"positional"}


@pytest.mark.parametrize("layout", ("t5", "marian"))
def test_the_view_s_row_and_the_command_read_the_same_vectors(encoder_decoders, tiny_folders, layout, tmp_path, capsys):
    from model.cli import main

    bundle = encoder_decoders[layout]
    source_ids, chosen, _, _ = sentence_case(bundle)
    vectors = sentence_vectors(bundle.model, source_ids, chosen)
    row = neuron_row(vectors, CROSS, 1, 0, 2)
    assert row.terms is not None and row.terms.shape[0] == len(row.term_split.names)
    out = tmp_path / "row.csv"
    args = ["neuron", "--model", tiny_folders[layout], "--text", SOURCE, "--kind", "encoder", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "head's term shares:" in printed and row.term_split.names[0] in printed
    assert row.term_split.names[-1] in out.read_text(encoding="utf-8").splitlines()[0]  # a column per term
