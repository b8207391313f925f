"""The neuron view on Hugging Face decoder-only models (GPT-2; the Llama layout: rotary positions, grouped-query
attention, RMS norms), against the test's own reading of the library's modules (by the library's names written here):

* the weights are the library's own ``output_attentions``, and the softmax of the scores shown gives them;
* the queries are the query projection's output per head; a grouped-query model's keys are its key heads, each serving
  its group of query heads;
* rotary: the rotation term is the test's own rotation (θ_i = base^(-2i/d), the halves turned as the library pairs
  them) minus the unrotated score, and it is 0 where the key is the query's own position (a rotation by the same angle
  keeps a dot product: a known answer);
* GPT-2: the first layer's position·position term is the test's own (``wpe`` rows through ``ln_1`` with the stream's
  statistics, through ``c_attn``'s query and key columns); with token embeddings and shifts zeroed it is all there is.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from model.cli import main
from model.kinds import AttentionKind
from model.neuron.terms import head_terms
from model.neuron.vectors import sentence_vectors

DECODER = AttentionKind.DECODER
PROMPT = "The house is small and the cat"


def _text(bundle) -> tuple[list[int], list[int], list[int]]:
    """(prompt ids, the ids the decoder is given after its first (the prompt's rest and two more), what it reads)."""
    prompt = bundle.source_ids(PROMPT)[0]
    targets = list(prompt[1:]) + [5, 7]
    return prompt, targets, [prompt[0], *targets[:-1]]


def _library(bundle, inputs: list[int], modules: list[torch.nn.Module]) -> tuple[object, dict]:
    kept: dict = {}
    handles = [module.register_forward_hook(lambda m, _a, out: kept.setdefault(m, out)) for module in modules]
    try:
        with torch.no_grad():
            out = bundle.model.hf_model(
                input_ids=torch.tensor([inputs]), output_attentions=True, output_hidden_states=True, use_cache=False
            )
    finally:
        for handle in handles:
            handle.remove()
    return out, kept


def _heads(values: torch.Tensor, width: int) -> np.ndarray:
    """[1, T, n·width] -> [n, T, width]."""
    return values[0].detach().reshape(values.shape[1], -1, width).transpose(0, 1).double().numpy()


@pytest.mark.parametrize("family", ("gpt2", "llama"))
def test_weights_are_the_library_s_and_the_scores_give_them(tiny_bundles, family):
    bundle = tiny_bundles[family]
    prompt, targets, inputs = _text(bundle)
    vectors = sentence_vectors(bundle.model, prompt, targets)
    kind = vectors.of(DECODER)
    out, _ = _library(bundle, inputs, [])
    assert vectors.target_input_ids == inputs and list(vectors.kinds) == [DECODER]
    for layer, attention in enumerate(out.attentions):
        np.testing.assert_allclose(kind.weights[layer], attention[0].double().numpy(), atol=1e-6)
        scores = kind.scores[layer]
        softmax = np.exp(scores - scores.max(-1, keepdims=True))
        np.testing.assert_allclose(softmax / softmax.sum(-1, keepdims=True), kind.weights[layer], atol=1e-5)
        visible = np.isfinite(scores)
        upper, lower = np.triu_indices(len(inputs), 1), np.tril_indices(len(inputs))
        assert not visible[:, upper[0], upper[1]].any() and visible[:, lower[0], lower[1]].all()
        np.testing.assert_allclose(kind.terms[:, layer].sum(0)[visible], scores[visible], atol=1e-5)


def test_llama_s_queries_keys_and_rotation_are_the_library_s(tiny_bundles):
    bundle = tiny_bundles["llama"]
    config = bundle.model.hf_model.config
    prompt, targets, inputs = _text(bundle)
    kind = sentence_vectors(bundle.model, prompt, targets).of(DECODER)
    attention = bundle.model.hf_model.model.layers[1].self_attn
    _, kept = _library(bundle, inputs, [attention.q_proj, attention.k_proj])
    width = config.hidden_size // config.num_attention_heads
    queries, key_heads = _heads(kept[attention.q_proj], width), _heads(kept[attention.k_proj], width)  # [H, T, d], [H_kv, T, d]
    group = config.num_attention_heads // config.num_key_value_heads
    assert group == 2 and len(key_heads) == config.num_key_value_heads
    np.testing.assert_allclose(kind.queries[1], queries, atol=1e-6)
    for head in range(config.num_attention_heads):
        np.testing.assert_allclose(kind.keys[1, head], key_heads[head // group], atol=1e-6)  # shared by its group
    # the test's own rotation: pairs (i, i + d/2) turned by position · base^(-2i/d)
    theta = config.rope_theta ** (-np.arange(0, width, 2) / width)  # [d/2]
    angles = np.arange(len(inputs))[:, None] * theta[None]  # [T, d/2]
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))  # [T, d]

    def turned(x: np.ndarray) -> np.ndarray:
        half = x.shape[-1] // 2
        return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin

    keys = np.repeat(key_heads, group, axis=0)  # [H, T, d]
    plain = np.einsum("hqd,hkd->hqk", queries, keys) / math.sqrt(width)
    rotated = np.einsum("hqd,hkd->hqk", turned(queries), turned(keys)) / math.sqrt(width)
    lower = np.tril_indices(len(inputs))
    np.testing.assert_allclose(kind.terms[0, 1][:, lower[0], lower[1]], plain[:, lower[0], lower[1]], atol=1e-5)
    np.testing.assert_allclose(kind.terms[1, 1][:, lower[0], lower[1]], (rotated - plain)[:, lower[0], lower[1]], atol=1e-5)
    diagonal = np.arange(len(inputs))
    assert np.abs(kind.terms[1][:, :, diagonal, diagonal]).max() < 1e-5  # no rotation between a position and itself
    assert head_terms(kind).split.names == ("query·key, unrotated", "rotation")


def test_gpt2_s_first_position_term_is_its_table_through_ln_1(tiny_bundles):
    bundle = tiny_bundles["gpt2"]
    prompt, targets, inputs = _text(bundle)
    kind = sentence_vectors(bundle.model, prompt, targets).of(DECODER)
    gpt2 = bundle.model.hf_model.transformer
    out, _ = _library(bundle, inputs, [])
    x = out.hidden_states[0].double()  # [1, T, d]: the first layer's input
    table = gpt2.wpe.weight[: len(inputs)].double()[None]  # [1, T, d]
    norm = gpt2.h[0].ln_1
    part = (table - table.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + norm.eps)
    part = part * norm.weight.double()
    weight = gpt2.h[0].attn.c_attn.weight.double()  # [d, 3d]
    d = weight.shape[0]
    n_heads = bundle.model.hf_model.config.n_head
    q, k = (_heads((part @ weight[:, i * d : (i + 1) * d]).float(), d // n_heads) for i in (0, 1))
    own = np.einsum("hqd,hkd->hqk", q, k) / math.sqrt(d // n_heads)
    lower = np.tril_indices(len(inputs))
    np.testing.assert_allclose(kind.terms[3, 0][:, lower[0], lower[1]], own[:, lower[0], lower[1]], atol=1e-4)


def test_a_gpt2_reading_no_tokens_has_only_its_position_term_in_the_first_layer(tiny_bundles):
    network = copy.deepcopy(tiny_bundles["gpt2"].model)
    first = network.hf_model.transformer.h[0]
    with torch.no_grad():
        network.hf_model.transformer.wte.weight.zero_()
        first.ln_1.bias.zero_()
        first.attn.c_attn.bias.zero_()
    prompt, targets, _ = _text(tiny_bundles["gpt2"])
    kind = sentence_vectors(network, prompt, targets, private=True).of(DECODER)
    visible = np.isfinite(kind.scores[0])
    assert np.abs(kind.terms[:3, 0][:, visible]).max() < 1e-9
    assert {head_terms(kind).verdict(0, head) for head in range(kind.shape[1])} == {"positional"}


def test_the_neuron_command_reads_a_decoder_only_folder(tiny_folders, tmp_path, capsys):
    out = tmp_path / "row.csv"
    args = ["neuron", "--model", tiny_folders["llama"], "--text", PROMPT, "--kind", "decoder", "--layer", "2", "--out", str(out)]
    assert main(args) == 0
    assert "rotation" in capsys.readouterr().out and "rotation" in out.read_text(encoding="utf-8").splitlines()[0]
