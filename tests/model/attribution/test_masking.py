"""Knocking heads out (model/attribution/masking.py): the masked model is exactly the forward pass with those heads'
outputs zeroed — against a hand-written multi-head attention and against a hook that zeroes the head's slice of the
concatenated output — on every path (inspection, teacher forcing, the stepper's NumPy and torch engines); the open
model is never changed; bad head names get one clear message."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.decoding.stepper import DecodingOptions, Stepper
from model.kinds import AttentionKind
from model.nn.config import TransformerConfig
from model.nn.masking import Head, MaskError, masked_model, parse_heads
from model.nn.transformer import Transformer

CONFIG = dict(source_vocab_size=40, target_vocab_size=40, n_encoder_layers=2, n_decoder_layers=2, d_model=16, n_heads=4, d_ff=32)


def tiny_model(seed: int = 0, **changes) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(TransformerConfig(**{**CONFIG, "dropout": 0.0, **changes})).eval()


def hand_attention(module, x: torch.Tensor, zeroed: int) -> torch.Tensor:
    """Self-attention written out head by head, with head ``zeroed``'s output replaced by zeros before W^O."""
    w_q, w_k, w_v = module.qkv_projection.weight.detach().chunk(3)  # 3 x [d_model, d_model]
    d_k = module.d_k
    outputs = []
    for head in range(module.n_heads):
        rows = slice(head * d_k, (head + 1) * d_k)
        q, k, v = x @ w_q[rows].T, x @ w_k[rows].T, x @ w_v[rows].T  # [L, d_k]
        weights = torch.softmax(q @ k.T / math.sqrt(d_k), dim=-1)  # [L, L]
        outputs.append(torch.zeros_like(v) if head == zeroed else weights @ v)  # [L, d_k]
    return torch.cat(outputs, dim=-1) @ module.out_projection.weight.detach().T  # [L, d_model]


def test_a_masked_head_is_the_hand_written_attention_without_that_head():
    model = tiny_model()
    masked = masked_model(model, (Head(AttentionKind.ENCODER, 1, 2),))
    x = torch.randn(1, 7, 16)
    with torch.no_grad():
        for need_weights in (False, True):  # the fast SDPA path and the inspection path
            output, _ = masked.attention_module(AttentionKind.ENCODER, 1)(x, need_weights=need_weights)
            expected = hand_attention(model.attention_module(AttentionKind.ENCODER, 1), x[0], zeroed=2)
            torch.testing.assert_close(output[0], expected, atol=1e-6, rtol=1e-5)


def zero_head_hook(d_k: int, head: int):
    def hook(_module, inputs):
        (context,) = inputs  # [..., H * d_k]: the heads' outputs side by side, before W^O
        context = context.clone()
        context[..., head * d_k : (head + 1) * d_k] = 0.0
        return (context,)

    return hook


@pytest.mark.parametrize("kind", list(AttentionKind))
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_masked_model_is_the_forward_pass_with_the_head_output_zeroed(kind, norm):
    model = tiny_model(norm_placement=norm)
    head = Head(kind, 1, 1)
    source = torch.tensor([[5, 6, 7, 8, 9, 3], [10, 11, 12, 3, 0, 0]])
    target = torch.tensor([[2, 5, 6, 7], [2, 13, 14, 0]])
    module = model.attention_module(kind, 1)
    handle = module.out_projection.register_forward_pre_hook(zero_head_hook(module.d_k, 1))
    try:
        with torch.no_grad():
            expected, expected_weights = model.inspect(source, target)
    finally:
        handle.remove()
    with torch.no_grad():
        logits, weights = masked_model(model, (head,)).inspect(source, target)
        plain, _ = model.inspect(source, target)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(logits, plain, atol=1e-4)  # the head mattered, and the open model is unchanged
    for ours, theirs in zip(weights.cross, expected_weights.cross):
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)


def test_the_stepper_decodes_through_the_masked_model_on_both_engines(copy_bundle):
    bundle, _ = copy_bundle
    heads = parse_heads("cross:2:1,cross:2:2,decoder:1:3")
    before = {name: value.clone() for name, value in bundle.model.state_dict().items()}
    traces = []
    for engine in ("numpy", "torch"):
        stepper = Stepper(bundle, "a b c d e", DecodingOptions(engine=engine, masked_heads=heads))
        stepper.run()
        traces.append(stepper.trace())
    assert traces[0].target_tokens == traces[1].target_tokens
    np.testing.assert_allclose(traces[0].cross, traces[1].cross, atol=1e-5)
    assert traces[0].masked_heads == ["decoder:1:3", "cross:2:1", "cross:2:2"]
    full = masked_model(bundle.model, heads)
    with torch.no_grad():
        _, weights = full.inspect(
            torch.tensor([Stepper(bundle, "a b c d e").source_ids]),
            torch.tensor([[bundle.config.bos_id] + list(traces[0].chosen_ids[:-1])]),
        )
    np.testing.assert_allclose(torch.stack(weights.cross)[:, 0].numpy(), traces[0].cross, atol=1e-5)
    assert all(torch.equal(value, before[name]) for name, value in bundle.model.state_dict().items())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cross:3", "write a head as KIND:LAYER:HEAD"),
        ("crss:1:1", "the kind is encoder, decoder or cross"),
        ("cross:0:1", "counted from 1"),
        ("cross:x:1", "write a head as KIND:LAYER:HEAD"),
    ],
)
def test_badly_written_heads_are_refused(text, message):
    with pytest.raises(MaskError, match=message):
        parse_heads(text)


def test_heads_the_model_lacks_are_refused():
    model = tiny_model()
    assert parse_heads("cross:2:4, encoder:1:1,cross:2:4") == (Head(AttentionKind.ENCODER, 0, 0), Head(AttentionKind.CROSS, 1, 3))
    assert masked_model(model, ()) is model
    with pytest.raises(MaskError, match="has 2 layers of 4 heads"):
        masked_model(model, parse_heads("cross:3:1"))
    with pytest.raises(MaskError, match="has 2 layers of 4 heads"):
        masked_model(model, parse_heads("encoder:1:5"))
