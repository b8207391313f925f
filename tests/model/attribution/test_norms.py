"""The norm-based measure (model/attribution/norms.py): with identity value and output projections it is the attention
weight times the norm of the attended input, ‖x_j‖; in general it is α_ij ‖x_j W_V,h W_O,hᵀ‖ computed by hand from the
module's weights, for every kind, layer and head; it is non-negative and zero wherever attention is."""

from __future__ import annotations

import torch

from model.attribution.norms import norm_contributions
from model.kinds import AttentionKind
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer

SOURCE = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, 0, 0]])
TARGET = torch.tensor([[2, 5, 6, 7], [2, 11, 0, 0]])


def model_with(n_heads: int, norm: str = "post", identity: bool = False) -> Transformer:
    torch.manual_seed(3)
    config = TransformerConfig(
        source_vocab_size=20,
        target_vocab_size=20,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_model=8,
        n_heads=n_heads,
        d_ff=16,
        dropout=0.0,
        norm_placement=norm,
    )
    model = Transformer(config).eval()
    if identity:
        with torch.no_grad():
            for kind in AttentionKind:
                for layer in range(2):
                    module = model.attention_module(kind, layer)
                    if module.is_self_attention:
                        module.qkv_projection.weight[16:] = torch.eye(8)  # W_V = I
                    else:
                        module.kv_projection.weight[8:] = torch.eye(8)
                    module.out_projection.weight.copy_(torch.eye(8))  # W_O = I
    return model


def attended_inputs(model, kind, layer):
    """What the module attended over, as it ran: the inputs x_j [B, K, d_model]."""
    seen = {}
    module = model.attention_module(kind, layer)

    def keep(_module, args, kwargs):
        seen.setdefault("x", args[0])
        return None

    if kind is AttentionKind.CROSS:  # cross-attention attends over the encoder's output
        with torch.no_grad():
            memory, _, _ = model.encode(SOURCE)
        return memory
    handle = module.register_forward_pre_hook(keep, with_kwargs=True)
    try:
        with torch.no_grad():
            model.inspect(SOURCE, TARGET)
    finally:
        handle.remove()
    return seen["x"]


def test_identity_projections_give_attention_times_the_input_norm():
    model = model_with(n_heads=1, identity=True)
    contributions = norm_contributions(model, SOURCE, TARGET)
    with torch.no_grad():
        _, weights = model.inspect(SOURCE, TARGET)
    for kind, tables in (("encoder", weights.encoder_self), ("decoder", weights.decoder_self), ("cross", weights.cross)):
        kind = AttentionKind(kind)
        for layer in range(2):
            x = attended_inputs(model, kind, layer)  # [B, K, d_model]
            expected = tables[layer] * x.norm(dim=-1)[:, None, None, :]  # α_ij ‖x_j‖
            torch.testing.assert_close(contributions[kind][layer], expected, atol=1e-5, rtol=1e-5)


def test_each_head_weighs_its_transformed_value_vector():
    model = model_with(n_heads=2, norm="pre")
    contributions = norm_contributions(model, SOURCE, TARGET)
    with torch.no_grad():
        _, weights = model.inspect(SOURCE, TARGET)
    module = model.attention_module(AttentionKind.ENCODER, 1)
    x = attended_inputs(model, AttentionKind.ENCODER, 1)  # the pre-norm layer's normalised input
    w_v = module.qkv_projection.weight.detach()[16:]  # [d_model, d_model]
    w_o = module.out_projection.weight.detach()  # [d_model, d_model]
    for head in range(2):
        rows = slice(head * 4, (head + 1) * 4)
        transformed = (x @ w_v[rows].T) @ w_o[:, rows].T  # [B, K, d_model]: x_j W_V,h W_O,h
        expected = weights.encoder_self[1][:, head] * transformed.norm(dim=-1)[:, None, :]
        torch.testing.assert_close(contributions[AttentionKind.ENCODER][1][:, head], expected, atol=1e-5, rtol=1e-5)
    for tables in contributions.values():
        for table in tables:
            assert (table >= 0).all()
    # Padded keys get no attention, so they contribute nothing.
    assert (contributions[AttentionKind.ENCODER][0][1, :, :, 3:] == 0).all()
