"""The contribution measures on Hugging Face decoder-only models (GPT-2; the Llama layout, grouped-query attention and
rotary positions), through their measured pass (model/attribution/decoder_pass.py), against the test's own hooks on the
library's modules, found here by the library's names:

* the norm-based measure equals ‖α_ij v_j W_O,h‖ from the library's ``output_attentions`` and the value projection's own
  output (a grouped-query model's key-value heads repeated to its query heads);
* value zeroing equals the cosine distance of the layer's output when the test zeroes key j's values itself;
* gradient × input equals the gradient of log p(token) over the library's own ``inputs_embeds``, times them;
* ALTI's and attention × gradient's rows are distributions, position 0 reads itself alone, none reads a later one;
* integrated gradients are complete (their gap is within the tolerance);
* measures that need cross-attention (ALTI+, Shift-Att) are refused with their inherent reason.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.attribution.measures import compute_measure, unsupported
from model.decoding.greedy import decoder_inputs
from model.kinds import AttentionKind
from tests.model.library_by_hand import decoder_library_pass

PROMPT = "The house is small and the cat"
FAMILIES = ("gpt2", "llama")
DECODER = AttentionKind.DECODER


def _case(bundle) -> tuple[list[int], list[int], torch.Tensor]:
    """(prompt ids, the steps: the prompt's given tokens and three more, the decoder inputs [1, T])."""
    prompt = bundle.source_ids(PROMPT)[0]
    chosen = list(prompt[1:]) + [5, 7, 9]
    return prompt, chosen, torch.tensor([decoder_inputs(bundle.model, prompt, chosen)])


def _attention_parts(network, layer: int) -> tuple[torch.nn.Module, torch.Tensor, torch.nn.Module]:
    """(the module whose output holds the values, W^O [d_model, H * d_k], the layer) by the library's names."""
    if network.config.model_type == "gpt2":
        block = network.hf_model.transformer.h[layer]
        return block.attn.c_attn, block.attn.c_proj.weight.T, block  # a Conv1D stores [in, out]
    block = network.hf_model.model.layers[layer]
    return block.self_attn.v_proj, block.self_attn.o_proj.weight, block


def _values(network, output: torch.Tensor) -> torch.Tensor:
    d_model = network.config.d_model
    return output[..., 2 * d_model :] if network.config.model_type == "gpt2" else output  # GPT-2's q | k | v


@pytest.mark.parametrize("family", FAMILIES)
def test_norm_based_equals_the_library_s_weights_times_its_value_vectors(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    prompt, chosen, inputs = _case(bundle)
    kept: dict[int, torch.Tensor] = {}
    hooks = {}
    for layer in range(network.config.n_decoder_layers):
        module = _attention_parts(network, layer)[0]
        hooks[module] = lambda _m, _a, out, layer=layer: kept.__setitem__(layer, out)
    out = decoder_library_pass(network, inputs, hooks)
    result = compute_measure(network, prompt, chosen, "norm")
    n_heads = network.config.n_heads
    for layer, weights in enumerate(out.attentions):  # [1, H, T, T]
        w_out = _attention_parts(network, layer)[1].detach()
        d_k = w_out.shape[1] // n_heads
        values = _values(network, kept[layer])[0]  # [T, H_kv * d_k]
        shared = values.reshape(values.shape[0], -1, d_k)  # [T, H_kv, d_k]
        per_head = shared.repeat_interleave(n_heads // shared.shape[1], dim=1)  # [T, H, d_k]
        expected = torch.stack(
            [weights[0, h] * (per_head[:, h] @ w_out[:, h * d_k : (h + 1) * d_k].T).norm(dim=-1)[None] for h in range(n_heads)]
        )  # [H, T, T]
        assert np.allclose(result.values[DECODER][layer], expected.numpy(), atol=1e-5)
    assert set(result.values) == {DECODER}


@pytest.mark.parametrize("family", FAMILIES)
def test_value_zeroing_equals_the_layer_s_output_with_a_value_zeroed_by_hand(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    prompt, chosen, inputs = _case(bundle)
    result = compute_measure(network, prompt, chosen, "value-zeroing")
    layer, key = network.config.n_decoder_layers - 1, 2
    module, _, block = _attention_parts(network, layer)
    outputs: list[torch.Tensor] = []
    keep = {block: lambda _m, _a, out: outputs.append(out[0] if isinstance(out, tuple) else out)}

    def zeroed(_module, _args, output):
        values = _values(network, output).clone()
        values[:, key] = 0.0
        if network.config.model_type == "gpt2":
            return torch.cat([output[..., : 2 * network.config.d_model], values], dim=-1)
        return values

    decoder_library_pass(network, inputs, keep)
    decoder_library_pass(network, inputs, {**keep, module: zeroed})
    distance = 1.0 - F.cosine_similarity(outputs[1][0].double(), outputs[0][0].double(), dim=-1)  # [T]
    assert np.allclose(result.values[DECODER][layer, 0, :, key], distance.clamp(min=0).numpy(), atol=1e-5)
    assert np.allclose(result.values[DECODER][layer, 0, :key, key], 0.0, atol=1e-6)  # no earlier position reads it


@pytest.mark.parametrize("family", FAMILIES)
def test_gradient_times_input_equals_the_library_s_own_input_embeddings_gradient(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    prompt, chosen, inputs = _case(bundle)
    result = compute_measure(network, prompt, chosen, "grad-input")
    embeddings = network.hf_model.get_input_embeddings()(inputs).detach().requires_grad_(True)  # [1, T, d_model]
    step = len(chosen) - 1
    logits = network.hf_model(inputs_embeds=embeddings, use_cache=False).logits  # [1, T, V]
    torch.log_softmax(logits[0, step], dim=-1)[chosen[step]].backward()
    expected = (embeddings.grad * embeddings).sum(-1)[0].detach()  # [T]
    assert np.allclose(result.values[DECODER][0, 0, step], expected.numpy(), atol=1e-5)
    assert set(result.values) == {DECODER} and np.isnan(result.source_share).all()  # no source: no source share


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", ["alti", "attn-grad"])
def test_rolled_out_measures_read_no_later_position(tiny_bundles, family, name):
    bundle = tiny_bundles[family]
    prompt, chosen, _ = _case(bundle)
    shares = compute_measure(bundle.model, prompt, chosen, name).shares[DECODER]  # [L, 1, T, T]
    assert np.allclose(shares.sum(-1), 1.0, atol=1e-5)
    assert np.allclose(np.triu(shares, k=1), 0.0, atol=1e-6)
    assert np.allclose(shares[..., 0, 0], 1.0, atol=1e-6)  # position 0 reads itself alone


def test_integrated_gradients_are_complete(tiny_bundles):
    bundle = tiny_bundles["gpt2"]
    prompt, chosen, _ = _case(bundle)
    step = len(chosen) - 1
    result = compute_measure(bundle.model, prompt, chosen, "ig", steps=[step])
    assert result.integration_converged[step] and result.completeness_gap[step] < 0.01
    assert np.isnan(result.completeness_gap[:step]).all()


@pytest.mark.parametrize("name", ["alti+", "shift-att"])
def test_cross_attention_measures_are_refused_with_their_reason(tiny_bundles, name):
    reason = unsupported(tiny_bundles["llama"].model, name)
    assert "needs cross-attention" in reason and "which this model has not" in reason
