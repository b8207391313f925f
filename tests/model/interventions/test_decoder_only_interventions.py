"""Hugging Face decoder-only models (GPT-2; the Llama layout) through the interventions (model/interventions/
decoder_library.py), against the test's own hooks on the library's modules, found here by the library's names:

* the hooked pass is the library's own forward pass, and its activations are the modules' own;
* the logit lens: each layer's reading equals the library's hidden state through the final norm and ``lm_head``;
* direct logit attribution: the parts sum to the logit, and a head's part is the test's own (its context through its
  slice of W^O, through the final norm held at the run's scale, onto the token's row of ``lm_head``);
* patching: a patched head equals the head's slice of the projection's input replaced by hand; patching the last
  layer's output everywhere restores 1.0; the prompt's given steps are not searched for the first difference;
* knock-out: every head of a layer knocked out equals that attention's output replaced by its projection's bias;
* DecoderLens is refused with its inherent reason (no encoder).
"""

from __future__ import annotations

import pytest
import torch

from model.decoding.greedy import decoder_inputs
from model.errors import UserError
from model.family import InterventionTool
from model.interventions.decoder_lens import decoder_lens
from model.interventions.hooked import Patch, hook_names, translated
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import Component, patch_grids
from model.interventions.patching_setup import prepare_bundle_patching
from model.interventions.served_pass import run_hooked, served_tools
from model.kinds import AttentionKind
from model.nn.masking import Head, masked_model
from tests.model.library_by_hand import decoder_library_pass

PROMPT = "The house is small and the cat"
CORRUPTIONS = ("The cat is small and the house", "The house is big and the cat", "The dog is small and the cat")
FAMILIES = ("gpt2", "llama")


def _blocks(network) -> list[torch.nn.Module]:
    """The library's layers, by its own names (GPT-2's ``transformer.h``, Llama's ``model.layers``)."""
    hf_model = network.hf_model
    return list(hf_model.transformer.h) if network.config.model_type == "gpt2" else list(hf_model.model.layers)


def _parts(network, layer: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """(a layer's attention module, its W^O [d_model, H * d_k]) by the library's names."""
    block = _blocks(network)[layer]
    if network.config.model_type == "gpt2":
        return block.attn, block.attn.c_proj.weight.T  # a Conv1D stores [in, out]
    return block.self_attn, block.self_attn.o_proj.weight


def _projection(network, layer: int) -> torch.nn.Module:
    block = _blocks(network)[layer]
    return block.attn.c_proj if network.config.model_type == "gpt2" else block.self_attn.o_proj


def _final_norm(network) -> torch.nn.Module:
    hf_model = network.hf_model
    return hf_model.transformer.ln_f if network.config.model_type == "gpt2" else hf_model.model.norm


def _case(bundle) -> tuple[list[int], list[int], torch.Tensor]:
    """(prompt ids, the steps: the prompt's given tokens and three more, the decoder inputs [1, T])."""
    prompt = bundle.source_ids(PROMPT)[0]
    chosen = list(prompt[1:]) + [5, 7, 9]
    return prompt, chosen, torch.tensor([decoder_inputs(bundle.model, prompt, chosen)])


@pytest.mark.parametrize("family", FAMILIES)
def test_the_decoder_inputs_are_the_prompt_and_the_steps(tiny_bundles, family):
    bundle = tiny_bundles[family]
    prompt, chosen, inputs = _case(bundle)
    assert inputs[0].tolist() == prompt + [5, 7]
    served = (InterventionTool.LOGIT_LENS, InterventionTool.LOGIT_ATTRIBUTION, InterventionTool.PATCHING)
    assert served_tools(bundle.model) == served
    source_ids, steps = translated(bundle, PROMPT, InterventionTool.LOGIT_LENS)
    assert source_ids == prompt and steps[: len(prompt) - 1] == prompt[1:] and len(steps) > len(prompt) - 1


@pytest.mark.parametrize("family", FAMILIES)
def test_the_hooked_pass_is_the_library_s_own(tiny_bundles, family):
    network = tiny_bundles[family].model
    prompt, _, inputs = _case(tiny_bundles[family])
    attention, _ = _parts(network, 1)
    kept: dict = {}
    library = decoder_library_pass(network, inputs, {attention: lambda _m, _a, out: kept.update(attention=out[0])})
    with torch.inference_mode():
        run = run_hooked(network, torch.tensor([prompt]), inputs, capture=hook_names(network))
    assert torch.allclose(run.logits(network), library.logits, atol=1e-5, rtol=0)
    assert torch.allclose(run.activations["decoder.1.resid_pre"], library.hidden_states[1], atol=1e-6, rtol=0)
    assert torch.allclose(run.activations["decoder.0.resid_post"], library.hidden_states[1], atol=1e-6, rtol=0)
    assert torch.allclose(run.activations["decoder.1.self.out"], kept["attention"], atol=1e-6, rtol=0)
    stream = library.hidden_states[1] + kept["attention"]  # the stream after the second layer's attention add
    assert torch.allclose(run.activations["decoder.1.self.resid"], stream, atol=1e-5, rtol=0)
    assert torch.equal(run.activations["decoder.1.self.pattern"], library.attentions[1])
    heads = run.activations["decoder.1.self.head_out"]  # [1, H, T, d_model]
    bias = _projection(network, 1).bias
    assert torch.allclose(heads.sum(1) + (0 if bias is None else bias), kept["attention"], atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_logit_lens_reads_the_library_s_hidden_states(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    lens = bundle_logit_lens(bundle, PROMPT)
    assert lens.readings == ["embeddings", "L1 self-attention", "L1 feed-forward", "L2 self-attention", "L2 feed-forward"]
    prompt, steps = translated(bundle, PROMPT, InterventionTool.LOGIT_LENS)
    library = decoder_library_pass(network, torch.tensor([decoder_inputs(network, prompt, steps)]))
    with torch.inference_mode():
        first_layer = torch.softmax(network.hf_model.lm_head(_final_norm(network)(library.hidden_states[1]))[0], -1)  # [T, V]
    rows = torch.arange(len(steps))
    expected = first_layer[rows, torch.tensor(steps)].numpy()  # [T]
    assert abs(lens.chosen_probabilities[2] - expected).max() < 1e-5
    final = torch.softmax(library.logits[0], -1)[rows, torch.tensor(steps)].numpy()  # the model's own prediction
    assert abs(lens.chosen_probabilities[-1] - final).max() < 1e-5


@pytest.mark.parametrize("family", FAMILIES)
def test_a_head_s_logit_attribution_is_the_test_s_own(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    result = bundle_logit_attribution(bundle, PROMPT)
    assert abs(result.remainder).max() < 1e-4
    assert not any("cross" in part for part in result.parts)
    prompt, steps = translated(bundle, PROMPT, InterventionTool.LOGIT_ATTRIBUTION)
    inputs = torch.tensor([decoder_inputs(network, prompt, steps)])
    _, weight = _parts(network, 1)
    kept: dict = {}
    projection, norm = _projection(network, 1), _final_norm(network)
    hooks = {norm: lambda _m, args, _o: kept.update(final=args[0])}
    handle = projection.register_forward_pre_hook(lambda _m, args: kept.update(context=args[0]))
    try:
        decoder_library_pass(network, inputs, hooks)
    finally:
        handle.remove()
    n_heads, d_k = network.config.n_heads, weight.shape[1] // network.config.n_heads
    head = 2
    with torch.no_grad():
        expected = _head_part(family, kept, weight, norm, network, steps, head, d_k)
    column = result.parts.index(f"L2 self H{head + 1}")
    assert n_heads > head and abs(result.values[:, column] - expected.numpy()).max() < 1e-5


def _head_part(family, kept, weight, norm, network, steps, head, d_k) -> torch.Tensor:
    """A head's share of each step's logit [T], by the test's own arithmetic."""
    context = kept["context"][0, :, head * d_k : (head + 1) * d_k]  # [T, d_k]
    part = context @ weight[:, head * d_k : (head + 1) * d_k].T  # [T, d_model]
    final = kept["final"][0]  # [T, d_model] the stream the final norm reads
    if family == "gpt2":  # a LayerNorm: centred, σ the standard deviation
        part = norm.weight * (part - part.mean(-1, keepdim=True)) / torch.sqrt(final.var(-1, unbiased=False) + norm.eps)[:, None]
    else:  # an RMS norm
        part = norm.weight * part / torch.sqrt(final.pow(2).mean(-1) + norm.variance_epsilon)[:, None]
    return (part * network.hf_model.lm_head.weight[torch.tensor(steps)]).sum(-1)  # [T]


def _corrupted(bundle) -> str:
    pieces = len(bundle.source_ids(PROMPT)[0])
    return next(text for text in CORRUPTIONS if len(bundle.source_ids(text)[0]) == pieces)


@pytest.mark.parametrize("family", FAMILIES)
def test_patching_a_head_equals_replacing_its_context_by_hand(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    setup = prepare_bundle_patching(bundle, PROMPT, _corrupted(bundle))
    assert setup.step >= len(setup.labels.clean) - 1  # the prompt's given steps are not searched
    assert not torch.equal(setup.target_inputs, setup.corrupted_inputs)  # the prompts are where the inputs begin
    grids = patch_grids(setup, "exact").grids
    assert [str(component) for component in grids] == ["decoder heads", "decoder residual", "decoder feed-forward"]
    assert abs(grids[Component.DECODER_RESIDUAL].values[-1, -1] - 1.0) < 1e-5  # the last layer's output everywhere: all restored
    kept: dict = {}
    projection = _projection(network, 0)
    d_k = network.config.d_model // network.config.n_heads
    handle = projection.register_forward_pre_hook(lambda _m, args: kept.update(clean=args[0].clone()))
    try:
        decoder_library_pass(network, setup.target_inputs)
    finally:
        handle.remove()

    def patched(_module, args):
        context = args[0].clone()
        context[..., d_k : 2 * d_k] = kept["clean"][..., d_k : 2 * d_k]  # head 2's context from the clean run
        return (context,)

    handle = projection.register_forward_pre_hook(patched)
    try:
        logits = decoder_library_pass(network, setup.corrupted_inputs).logits[0, setup.step]  # [V]
    finally:
        handle.remove()
    metric = float(logits[setup.clean_id] - logits[setup.compared_id])
    assert abs(grids[Component.DECODER_HEADS].metrics[0, 1] - metric) < 1e-4


@pytest.mark.parametrize("family", FAMILIES)
def test_knocking_out_a_layer_s_heads_leaves_its_projection_s_bias(tiny_bundles, family):
    network = tiny_bundles[family].model
    _, _, inputs = _case(tiny_bundles[family])
    heads = tuple(Head(AttentionKind.DECODER, 0, head) for head in range(network.config.n_heads))
    knocked = masked_model(network, heads)
    projection = _projection(network, 0)
    bias = projection.bias

    def only_bias(_module, _args, output):
        return torch.zeros_like(output) + (0 if bias is None else bias)

    expected = decoder_library_pass(network, inputs, {projection: only_bias}).logits
    assert torch.allclose(decoder_library_pass(knocked, inputs).logits, expected, atol=1e-5, rtol=0)
    assert not torch.allclose(decoder_library_pass(network, inputs).logits, expected, atol=1e-3, rtol=0)
    zeroed = Patch("decoder.0.self.head_out", torch.zeros(1))
    with torch.inference_mode():
        patched = run_hooked(network, inputs, inputs, patches=[zeroed]).logits(network)
    assert torch.allclose(patched, expected, atol=1e-5, rtol=0)


def test_decoder_lens_says_a_decoder_only_model_has_no_encoder(tiny_bundles):
    bundle = tiny_bundles["gpt2"]
    with pytest.raises(UserError, match="no encoder"):
        decoder_lens(bundle.model, bundle.source_ids(PROMPT)[0], bundle.target_tokenizer)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_pass_for_its_hook_points_only_computes_no_logits(tiny_bundles, family):
    network = tiny_bundles[family].model
    prompt, _, inputs = _case(tiny_bundles[family])
    with torch.inference_mode():
        full = run_hooked(network, torch.tensor([prompt]), inputs, capture=["decoder.1.resid_post"])
        points_only = run_hooked(network, torch.tensor([prompt]), inputs, capture=["decoder.1.resid_post"], output=False)
    assert points_only.hidden.shape[1] == 0 and full.hidden.shape[1] == inputs.shape[1]
    assert torch.equal(points_only.activations["decoder.1.resid_post"], full.activations["decoder.1.resid_post"])
