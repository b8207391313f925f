"""Direct logit attribution on Hugging Face encoder-decoders (T5, Marian, BART, mBART, M2M100, Pegasus):

* the parts sum to the library's own logit of each chosen token (the remainder is rounding), with and without a
  compared token;
* one head's part, computed by the test alone from the library's modules: its slice of the output projection's input
  (a forward pre-hook of the test's own) through its slice of the weight, then through the norms after it with their
  scale held at the run's own (read by the test's own hooks on each norm), dotted with the unembedding row; in a
  pre-norm layout the last cross-attention head's path meets the final norm only, in a post-norm one the layer's
  cross-attention norm and feed-forward norm.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.interventions.logit_attribution import logit_attribution
from model.kinds import AttentionKind

TEXT = "The house is small ."
LAYOUTS = ("t5", "marian", "bart", "mbart", "m2m100", "pegasus")
POST_NORM = ("marian", "bart")


def _decoded(bundle) -> tuple[list[int], list[int]]:
    source = bundle.source_ids(TEXT)[0]
    return source, [5, 9, 11, bundle.model.config.eos_id]  # any tokens: the attribution is teacher-forced along them


def _library_logits(network, source_ids: list[int], chosen: list[int]) -> torch.Tensor:
    source = torch.tensor([source_ids])
    inputs = torch.tensor([[network.config.bos_id, *chosen[:-1]]])
    with torch.inference_mode():
        return network.hf_model(
            input_ids=source, attention_mask=source.ne(network.config.pad_id).long(), decoder_input_ids=inputs
        ).logits[0]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_parts_sum_to_the_library_s_logit(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    network = bundle.model
    source, chosen = _decoded(bundle)
    logits = _library_logits(network, source, chosen)  # [T, V]
    for compared in (None, [7, -1, 3, 4]):
        result = logit_attribution(network, source, chosen, compared)
        expected = logits[range(len(chosen)), chosen].numpy()
        if compared is not None:
            expected = expected - np.array([float(logits[t, c]) if c >= 0 else 0.0 for t, c in enumerate(compared)])
        assert np.allclose(result.logits, expected, atol=1e-5), layout
        assert np.allclose(result.values.sum(1), expected, atol=1e-4) and np.abs(result.remainder).max() < 1e-4, layout
    assert result.parts[0] == "embeddings" and f"L{network.config.n_decoder_layers} cross H1" in result.parts
    assert ("L1 norm biases" in result.parts) == (layout in POST_NORM)


def _norm_input(module: torch.nn.Module, run) -> torch.Tensor:
    """What ``module`` (a norm) reads during ``run()``, caught by a forward pre-hook of the test's own."""
    seen = []
    handle = module.register_forward_pre_hook(lambda _module, args: seen.append(args[0].detach()))
    try:
        run()
    finally:
        handle.remove()
    return seen[0][0]  # [T, d_model]


def _through(norm: torch.nn.Module, part: torch.Tensor, stream: torch.Tensor, rms: bool) -> torch.Tensor:
    """``part`` [T, d] through ``norm`` with the scale ``stream`` [T, d] (what the norm read) gives it."""
    if rms:
        return norm.weight * part / torch.sqrt(stream.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    centred = part - part.mean(-1, keepdim=True)
    return norm.weight * centred / torch.sqrt(stream.var(-1, unbiased=False, keepdim=True) + norm.eps)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_head_s_part_is_its_output_through_the_norms_after_it_by_hand(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    network, hf_model = bundle.model, bundle.model.hf_model
    source, chosen = _decoded(bundle)
    last, head = network.config.n_decoder_layers - 1, 1
    decoder = hf_model.get_decoder()
    layer = decoder.block[last] if layout == "t5" else decoder.layers[last]
    projection = layer.layer[1].EncDecAttention.o if layout == "t5" else layer.encoder_attn.out_proj
    width = projection.in_features // network.head_count(AttentionKind.CROSS)
    contexts = []
    handle = projection.register_forward_pre_hook(lambda _module, args: contexts.append(args[0].detach()))
    run = lambda: _library_logits(network, source, chosen)  # noqa: E731 - one pass, hooked by the test
    try:
        if layout in POST_NORM:
            norms = (layer.encoder_attn_layer_norm, layer.final_layer_norm)
            streams = [_norm_input(norm, run) for norm in norms]
        else:
            norm = decoder.final_layer_norm if layout == "t5" else decoder.layer_norm
            streams, norms = [_norm_input(norm, run)], (norm,)
    finally:
        handle.remove()
    with torch.inference_mode():
        weight = projection.weight[:, head * width : (head + 1) * width]  # [d_model, d_k]
        part = contexts[0][0, :, head * width : (head + 1) * width] @ weight.T  # [T, d_model]
        for norm, stream in zip(norms, streams):
            part = _through(norm, part, stream, rms=layout == "t5")
        unembedding = hf_model.lm_head.weight * (network.config.d_model**-0.5 if layout == "t5" else 1.0)  # T5 rescales
        expected = (part * unembedding[chosen]).sum(-1)  # [T]
    result = logit_attribution(network, source, chosen)
    ours = result.values[:, result.parts.index(f"L{last + 1} cross H{head + 1}")]
    assert np.allclose(ours, expected.numpy(), atol=1e-5), (layout, ours, expected)
