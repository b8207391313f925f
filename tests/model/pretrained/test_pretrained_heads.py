"""Head knock-out and head importance on Hugging Face encoder-decoders (T5, Marian, BART, mBART, M2M100, Pegasus),
each against an independent computation on the library's own modules:

* a head knocked out (``masked_model``) gives the library's logits with a forward pre-hook of the test's own that
  zeroes that head's slice of the output projection's input (the slice width the library's attention module says:
  T5's ``key_value_proj_dim``, BART's ``head_dim``);
* every head of a layer knocked out leaves that attention's output projection giving its bias alone (zero in T5): the
  sublayer's output zeroed but for what is no head's;
* head importance E|∂L/∂ξ_h| equals the gradient of the library's teacher-forced loss with respect to a gate of the
  test's own, a forward pre-hook that multiplies the head's slice by it. (A finite difference is no check here: T5's
  norm computes its variance in float32 whatever the weights' type, so the loss is exact to float32 only.)
"""

from __future__ import annotations

import pytest
import torch

from model.attribution.importance import head_importance
from model.data.corpora import Pair
from model.kinds import AttentionKind
from model.nn.masking import Head, check_heads, masked_model
from tests.model.library_by_hand import attention_by_hand

SOURCE, TARGET = "The house is small .", "La maison est petite ."
LAYOUTS = ("t5", "marian", "bart", "mbart", "m2m100", "pegasus")


def _projection_and_width(network, kind: AttentionKind, layer: int) -> tuple[torch.nn.Linear, int]:
    """The library's output projection of ``kind`` in ``layer`` and its heads' width, found by the test's own names."""
    attention = attention_by_hand(network, kind, layer)
    return attention.output, attention.head_width


def _inputs(bundle) -> tuple[torch.Tensor, torch.Tensor]:
    source = torch.tensor([bundle.source_ids(SOURCE)[0]])  # [1, S]
    target = torch.tensor([[bundle.config.bos_id, *bundle.target_tokenizer.encode(TARGET), bundle.config.eos_id]])
    return source, target  # [1, T + 1]


def _library_logits(hf_model, source: torch.Tensor, target: torch.Tensor, pad_id: int) -> torch.Tensor:
    out = hf_model(input_ids=source, attention_mask=source.ne(pad_id).long(), decoder_input_ids=target[:, :-1])
    return out.logits  # [1, T, V]


def _scaled_by_hand(network, kind: AttentionKind, layer: int, head: int, factor: float | torch.Tensor):
    """A forward pre-hook on the library's projection that multiplies ``head``'s slice of its input by ``factor``."""
    projection, width = _projection_and_width(network, kind, layer)

    def scale(_module, args):
        context = args[0].clone()  # [B, T, H * d_k]
        context[..., head * width : (head + 1) * width] *= factor
        return (context,)

    return projection.register_forward_pre_hook(scale)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_knocked_out_head_is_its_slice_zeroed_in_the_library_s_pass(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    network = bundle.model
    source, target = _inputs(bundle)
    heads = (Head(AttentionKind.CROSS, 1, 1), Head(AttentionKind.ENCODER, 0, 0))
    masked = masked_model(network, heads)
    handles = [_scaled_by_hand(network, head.kind, head.layer, head.head, 0.0) for head in heads]
    try:
        with torch.inference_mode():
            expected = _library_logits(network.hf_model, source, target, network.config.pad_id)
    finally:
        for handle in handles:
            handle.remove()
    with torch.inference_mode():
        knocked = masked(source, target[:, :-1])  # [1, T, V]: the masked copy's own teacher-forced pass
        untouched = _library_logits(network.hf_model, source, target, network.config.pad_id)
    assert torch.allclose(knocked, expected, atol=1e-5, rtol=0)
    assert not torch.allclose(knocked, untouched, atol=1e-4)  # the knock-out does something, to the copy only
    assert torch.allclose(network(source, target[:, :-1]), untouched, atol=1e-6, rtol=0)  # the open model is unchanged


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_head_of_a_layer_knocked_out_leaves_only_the_projection_s_bias(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    network = bundle.model
    n_heads = network.config.n_encoder_heads
    masked = masked_model(network, tuple(Head(AttentionKind.ENCODER, 1, head) for head in range(n_heads)))
    projection, _ = _projection_and_width(masked, AttentionKind.ENCODER, 1)
    outputs = []
    handle = projection.register_forward_hook(lambda _module, _args, output: outputs.append(output))
    source, target = _inputs(bundle)
    try:
        with torch.inference_mode():
            masked(source, target[:, :-1])
    finally:
        handle.remove()
    bias = torch.zeros(network.config.d_model) if projection.bias is None else projection.bias.detach()
    assert torch.allclose(outputs[0], bias.expand_as(outputs[0]), atol=1e-6, rtol=0)


def test_heads_a_pretrained_model_does_not_have_are_refused_by_its_own_counts(encoder_decoders):
    network = encoder_decoders["t5"].model
    with pytest.raises(Exception, match="has 2 layers of 4 heads") as error:
        check_heads(network, (Head(AttentionKind.DECODER, 0, 4),))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("layout", ["t5", "marian", "mbart"])
def test_head_importance_is_the_gradient_of_the_library_s_loss_through_a_gate_of_the_test_s_own(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    importance = head_importance(bundle, [Pair(SOURCE, TARGET)])
    network = bundle.model
    source, target = _inputs(bundle)
    for kind, layer, head in ((AttentionKind.ENCODER, 0, 1), (AttentionKind.DECODER, 1, 0), (AttentionKind.CROSS, 0, 3)):
        gate = torch.ones((), requires_grad=True)
        handle = _scaled_by_hand(network, kind, layer, head, gate)
        try:
            logits = _library_logits(network.hf_model, source, target, network.config.pad_id)
            torch.nn.functional.cross_entropy(logits[0], target[0, 1:]).backward()
        finally:
            handle.remove()
            network.hf_model.zero_grad(set_to_none=True)
        assert importance.raw[kind][layer, head] == pytest.approx(abs(float(gate.grad)), abs=1e-5), (kind, layer, head)
    assert {kind: table.shape for kind, table in importance.raw.items()} == {
        AttentionKind.ENCODER: (network.config.n_encoder_layers, network.config.n_encoder_heads),
        AttentionKind.DECODER: (network.config.n_decoder_layers, network.config.n_heads),
        AttentionKind.CROSS: (network.config.n_decoder_layers, network.config.n_heads),
    }


def test_a_bert_head_knocked_out_is_its_slice_zeroed_in_the_library_s_pass(tiny_bundles):
    """An encoder-only layout (BERT): a head knocked out zeroes its slice of ``attention.output.dense``'s input (the
    test's own pre-hook); every head of the layer knocked out leaves that projection's bias alone."""
    network = tiny_bundles["bert-mlm"].model
    source = torch.tensor([tiny_bundles["bert-mlm"].source_ids("The house is [MASK] .")[0]])  # [1, S]
    dense = network.hf_model.bert.encoder.layer[1].attention.output.dense  # the library's own name for W^O
    width = network.hf_model.config.hidden_size // network.hf_model.config.num_attention_heads

    def library(model, hook=None, pre_hook=None) -> torch.Tensor:
        handles = [dense.register_forward_pre_hook(pre_hook)] if pre_hook else []
        handles += [dense.register_forward_hook(hook)] if hook else []
        try:
            with torch.inference_mode():
                return model.hf_model(input_ids=source).logits  # [1, S, V]
        finally:
            for handle in handles:
                handle.remove()

    def zero_second(_module, args):
        context = args[0].clone()
        context[..., width : 2 * width] = 0.0
        return (context,)

    one = masked_model(network, (Head(AttentionKind.ENCODER, 1, 1),))
    assert torch.allclose(library(one), library(network, pre_hook=zero_second), atol=1e-5, rtol=0)
    every = masked_model(network, tuple(Head(AttentionKind.ENCODER, 1, head) for head in range(network.config.n_heads)))
    only_bias = library(network, hook=lambda _m, _a, output: torch.zeros_like(output) + dense.bias)
    assert torch.allclose(library(every), only_bias, atol=1e-5, rtol=0)
    assert not torch.allclose(library(network), only_bias, atol=1e-3, rtol=0)
