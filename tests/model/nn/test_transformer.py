"""The model: both attention paths agree, and the probabilities are exactly softmax(QK^T/sqrt(d_k) + mask)."""

import math

import numpy as np
import pytest
import torch

from model.device import DeviceError, resolve_device
from model.nn.config import ConfigError, TransformerConfig
from model.nn.dropout import Dropout
from model.nn.packing import PackedRows
from model.nn.transformer import Transformer, sinusoidal_table
from tests.conftest import import_reference

VARIANTS = [(norm, positions) for norm in ("post", "pre") for positions in ("sinusoidal", "learned")]


def make_model(norm="post", positions="sinusoidal", vocab=40, **extra):
    torch.manual_seed(0)
    config = TransformerConfig(
        source_vocab_size=vocab,
        target_vocab_size=vocab,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_model=32,
        n_heads=4,
        d_ff=64,
        dropout=0.1,
        max_len=32,
        norm_placement=norm,
        positional_encoding=positions,
        **extra,
    )
    return Transformer(config).eval()


def padded_batch(vocab=40):
    generator = torch.Generator().manual_seed(1)
    source = torch.randint(4, vocab, (3, 9), generator=generator)
    source[0, 6:] = 0
    source[2, 4:] = 0
    target = torch.randint(4, vocab, (3, 7), generator=generator)
    target[:, 0] = 2
    target[1, 5:] = 0
    return source, target


@pytest.mark.parametrize("norm,positions", VARIANTS)
def test_fast_and_inspection_paths_give_the_same_outputs(norm, positions):
    model = make_model(norm, positions)
    source, target = padded_batch()
    with torch.no_grad():
        fast = model.logits(model(source, target))
        inspected, weights = model.inspect(source, target)
    real = target != 0
    assert torch.allclose(fast[real], inspected[real], atol=1e-5)
    assert len(weights.encoder_self) == len(weights.decoder_self) == len(weights.cross) == 2
    assert weights.encoder_self[0].shape == (3, 4, 9, 9)
    assert weights.decoder_self[1].shape == (3, 4, 7, 7)
    assert weights.cross[1].shape == (3, 4, 7, 9)


@pytest.mark.parametrize("norm,positions", VARIANTS)
def test_packed_real_rows_give_the_padded_outputs_and_gradients(norm, positions):
    """Training computes only the real target positions past attention; the loss and every gradient
    must equal those of the full padded pass."""
    model = make_model(norm, positions)
    source, target = padded_batch()
    real = target != 0
    full = model.logits(model(source, target)[real])
    full_grads = torch.autograd.grad(full.square().sum(), list(model.parameters()), allow_unused=True)
    packed = model.logits(model(source, target, rows=PackedRows(real)))
    packed_grads = torch.autograd.grad(packed.square().sum(), list(model.parameters()), allow_unused=True)
    assert packed.shape == (int(real.sum()), 40)
    assert torch.allclose(packed, full, atol=1e-5)
    for ours, theirs in zip(packed_grads, full_grads):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert torch.allclose(ours, theirs, atol=1e-4)


@pytest.mark.parametrize("norm,positions", VARIANTS)
def test_probabilities_equal_an_independent_softmax(norm, positions):
    """Capture each attention module's inputs with hooks and recompute its probabilities in NumPy."""
    model = make_model(norm, positions)
    source, target = padded_batch()
    captured = []
    hooks = [
        module.register_forward_pre_hook(lambda m, args, kwargs: captured.append((m, args[0], kwargs)), with_kwargs=True)
        for module in model.modules()
        if type(module).__name__ == "MultiHeadAttention"
    ]
    with torch.no_grad():
        memory, _, _ = model.encode(source)
        _, weights = model.inspect(source, target)
    for hook in hooks:
        hook.remove()
    memory = memory.numpy().astype(np.float64)
    source_real = (source != 0).numpy()
    target_real = (target != 0).numpy()
    n_layers = 2
    calls = captured[n_layers:]  # the first calls came from the plain encode() above
    expected_kinds = ["encoder_self"] * 2 + ["decoder_self", "cross"] * 2
    for index, ((module, x, _kwargs), kind) in enumerate(zip(calls, expected_kinds)):
        x = x.numpy().astype(np.float64)
        heads, d_k = module.n_heads, module.d_k
        if module.is_self_attention:
            w = module.qkv_projection.weight.detach().numpy().astype(np.float64)
            q, k = x @ w[:32].T, x @ w[32:64].T
        else:
            q = x @ module.q_projection.weight.detach().numpy().astype(np.float64).T
            k = memory @ module.kv_projection.weight.detach().numpy().astype(np.float64)[:32].T

        def split(t, heads=heads, d_k=d_k):  # [B, N, d_model] -> [B, heads, N, d_k]
            return t.reshape(t.shape[0], t.shape[1], heads, d_k).transpose(0, 2, 1, 3)

        scores = split(q) @ split(k).transpose(0, 1, 3, 2) / math.sqrt(d_k)
        if kind == "decoder_self":
            allowed = np.tril(np.ones((7, 7), dtype=bool))[None, None] & target_real[:, None, None, :]
        else:
            allowed = source_real[:, None, None, :]
        allowed = np.broadcast_to(allowed, scores.shape)
        scores = np.where(allowed, scores, -np.inf)
        probabilities = np.exp(scores - scores.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        layer = {"encoder_self": index, "decoder_self": (index - 2) // 2, "cross": (index - 3) // 2}[kind]
        actual = getattr(weights, kind)[layer].numpy()
        np.testing.assert_allclose(actual, probabilities, atol=1e-5)
        assert np.all(actual[~allowed] == 0.0)  # masked keys get exactly zero
        np.testing.assert_allclose(actual.sum(-1), 1.0, atol=1e-5)


def test_attention_matches_the_seed_post_norm_implementation_with_copied_weights():
    """The paper's post-norm model, built by the seed's code with our weights, attends identically."""
    seed = import_reference("seed_postnorm")
    model = make_model("post", "sinusoidal")
    reference = seed.Transformer(
        40, 40, d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=64, max_seq_len=32, dropout=0.1
    ).eval()
    with torch.no_grad():
        shared = model.embeddings["shared"].weight
        reference.src_embedding.weight.copy_(shared)
        reference.tgt_embedding.weight.copy_(shared)
        reference.output_projection.weight.copy_(shared)
        reference.output_projection.bias.zero_()
        pairs = [(ours, theirs) for ours, theirs in zip(model.encoder_layers, reference.encoder_layers)]
        for ours, theirs in pairs:
            _copy_self_attention(ours.self_attention, theirs.self_attention)
            _copy_common(ours, theirs, 2)
        for ours, theirs in zip(model.decoder_layers, reference.decoder_layers):
            _copy_self_attention(ours.self_attention, theirs.self_attention)
            cross, theirs_cross = ours.cross_attention, theirs.cross_attention
            theirs_cross.W_q.weight.copy_(cross.q_projection.weight)
            theirs_cross.W_k.weight.copy_(cross.kv_projection.weight[:32])
            theirs_cross.W_v.weight.copy_(cross.kv_projection.weight[32:])
            theirs_cross.W_o.weight.copy_(cross.out_projection.weight)
            for linear in (theirs_cross.W_q, theirs_cross.W_k, theirs_cross.W_v, theirs_cross.W_o):
                linear.bias.zero_()
            _copy_common(ours, theirs, 3)
    captured = []
    for module in reference.modules():
        if isinstance(module, seed.MultiHeadAttention):
            module.register_forward_hook(lambda m, args, output: captured.append(output[1]))
    source, target = padded_batch()
    with torch.no_grad():
        source_mask = reference.create_padding_mask(source)
        target_mask = reference.create_causal_mask(7) & reference.create_padding_mask(target)
        reference_logits = reference(source, target, source_mask, target_mask)
        our_logits, weights = model.inspect(source, target)
    real = target != 0
    assert torch.allclose(our_logits[real], reference_logits[real], atol=1e-4)
    ours_in_order = weights.encoder_self + [w for pair in zip(weights.decoder_self, weights.cross) for w in pair]
    for ours, theirs in zip(ours_in_order, captured):
        assert torch.allclose(ours, theirs, atol=1e-5)


def _copy_self_attention(ours, theirs):
    weight = ours.qkv_projection.weight
    theirs.W_q.weight.copy_(weight[:32])
    theirs.W_k.weight.copy_(weight[32:64])
    theirs.W_v.weight.copy_(weight[64:])
    theirs.W_o.weight.copy_(ours.out_projection.weight)
    for linear in (theirs.W_q, theirs.W_k, theirs.W_v, theirs.W_o):
        linear.bias.zero_()


def _copy_common(ours, theirs, n_norms):
    theirs.feed_forward.linear1.load_state_dict(ours.feed_forward.expand.state_dict())
    theirs.feed_forward.linear2.load_state_dict(ours.feed_forward.contract.state_dict())
    for index in range(n_norms):
        getattr(theirs, f"norm{index + 1}").load_state_dict(ours.norms[index].state_dict())


def test_future_positions_and_padding_get_exactly_zero():
    model = make_model()
    source, target = padded_batch()
    with torch.no_grad():
        _, weights = model.inspect(source, target)
    for layer in weights.decoder_self:
        future = torch.ones(7, 7, dtype=torch.bool).triu(1)
        assert torch.all(layer[:, :, future] == 0)
        assert torch.all(layer[1, :, :, 5:][:, :5] == 0)  # padded target keys for real queries
    for layer in weights.encoder_self + weights.cross:
        assert torch.all(layer[0, :, :, 6:] == 0) and torch.all(layer[2, :, :, 4:] == 0)


def test_tied_embeddings_share_one_matrix_and_untied_do_not():
    tied = make_model()
    assert list(tied.embeddings) == ["shared"] and tied.output_projection is None
    untied = make_model(tie_embeddings=False)
    assert set(untied.embeddings) == {"source", "target"} and untied.output_projection is not None
    assert untied.parameter_count() > tied.parameter_count()


def test_sinusoidal_table_follows_the_formula():
    table = sinusoidal_table(50, 16).numpy()
    position, i = 7, 3
    angle = position / 10000 ** (2 * i / 16)
    assert table[position, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
    assert table[position, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)


def test_dropout_drops_the_asked_share_and_keeps_the_expectation():
    torch.manual_seed(0)
    dropout = Dropout(0.1).train()
    x = torch.ones(200_000)
    y = dropout(x)
    assert abs((y == 0).float().mean().item() - 0.1) < 0.01
    assert abs(y.mean().item() - 1.0) < 0.01
    assert torch.equal(dropout.eval()(x), x)
    torch.manual_seed(5)
    first = Dropout(0.1).train()(x)
    torch.manual_seed(5)
    assert torch.equal(Dropout(0.1).train()(x), first)  # repeatable from torch's seed


@pytest.mark.parametrize(
    "bad,message",
    [
        (dict(d_model=30, n_heads=4), "divisible"),
        (dict(dropout=1.5), "dropout"),
        (dict(norm_placement="middle"), "norm_placement"),
        (dict(positional_encoding="rotary"), "positional_encoding"),
        (dict(n_encoder_layers=0), "n_encoder_layers"),
        (dict(source_vocab_size=10, target_vocab_size=20), "joint"),
    ],
)
def test_bad_configs_are_refused_with_a_reason(bad, message):
    options = dict(source_vocab_size=20, target_vocab_size=20, d_model=32, n_heads=4)
    options.update(bad)
    with pytest.raises(ConfigError, match=message):
        TransformerConfig(**options)


def test_a_missing_cuda_device_gets_a_clear_message():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="no CUDA"):
            resolve_device("cuda")
    with pytest.raises(DeviceError, match="cuda:99|no CUDA"):
        resolve_device("cuda:99")
    with pytest.raises(DeviceError, match="unknown device"):
        resolve_device("tpu")


def test_sequences_longer_than_max_len_are_refused():
    model = make_model()
    with pytest.raises(ValueError, match="max_len"):
        model(torch.ones(1, 40, dtype=torch.long), torch.ones(1, 3, dtype=torch.long))
