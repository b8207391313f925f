"""The RNN encoder-decoder with attention: every score (Bahdanau; Luong dot, general, concat; global and local-p)
equals an independent NumPy computation from the same weights, rows are distributions with exact zeros where
masked, incremental decoding equals the full teacher-forced pass, and the cache steps back and reorders exactly."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.decoding.beam import beam_search
from model.decoding.greedy import greedy_decode
from model.family import Architecture, family_of
from model.kinds import AttentionKind
from model.network import Network
from model.nn.config import ConfigError
from model.nn.packing import PackedRows
from model.nn.registry import build_network, config_from_dict
from model.nn.rnn import ATTENTIONS, RNNAttention, RNNConfig

VOCAB = 16
VARIANTS = [(attention, cell) for attention in ATTENTIONS for cell in ("gru", "lstm")]


def make_model(attention="bahdanau", cell="gru", local_window=0, **extra):
    torch.manual_seed(0)
    options = dict(source_vocab_size=VOCAB, target_vocab_size=VOCAB, d_embed=6, d_hidden=8, max_len=16, dropout=0.1, cell=cell)
    options.update(extra)
    model = RNNAttention(RNNConfig(attention=attention, local_window=local_window, **options)).eval()
    with torch.no_grad():  # larger weights than the initial ones, so that scores and positions vary
        for parameter in model.parameters():
            parameter.mul_(2.0)
    return model


def padded_batch():
    """Two sentences of 8 and 4 real pieces; target inputs of 6 and 4 real pieces."""
    source = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 3], [12, 13, 14, 3, 0, 0, 0, 0]])
    target = torch.tensor([[2, 7, 5, 9, 4, 6], [2, 12, 15, 13, 0, 0]])
    return source, target


# --- an independent NumPy computation ----------------------------------------------------------------------
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gru_cell(p, prefix, x, h):
    """PyTorch's GRU equations: gates r, z, n in that order."""
    gi = p[f"{prefix}.weight_ih"] @ x + p[f"{prefix}.bias_ih"]
    gh = p[f"{prefix}.weight_hh"] @ h + p[f"{prefix}.bias_hh"]
    (ir, iz, inn), (hr, hz, hn) = np.split(gi, 3), np.split(gh, 3)
    r, z = sigmoid(ir + hr), sigmoid(iz + hz)
    n = np.tanh(inn + r * hn)
    return (1 - z) * n + z * h


def lstm_cell(p, prefix, x, h, c):
    """PyTorch's LSTM equations: gates i, f, g, o in that order."""
    gates = p[f"{prefix}.weight_ih"] @ x + p[f"{prefix}.bias_ih"] + p[f"{prefix}.weight_hh"] @ h + p[f"{prefix}.bias_hh"]
    i, f, g, o = np.split(gates, 4)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def numpy_attention(model, source, target):
    """Attention rows [B, T, S] and local-p centres [B, T] (NaN when global), in float64 from the module's
    parameters and its encoder's memory: decoder recurrence, scores, window, Gaussian, mask and softmax by the
    formulas, one sentence and one step at a time."""
    config = model.config
    p = {name: value.detach().double().numpy() for name, value in model.named_parameters()}
    with torch.no_grad():
        memory_t, _, _ = model.encode(source)
    memory = memory_t.double().numpy()  # [B, S, d]
    embedding = p["embeddings.shared.weight"] if config.joint_vocab else p["embeddings.target.weight"]
    D, sigma = config.local_window, config.local_window / 2
    batch, length = source.shape
    rows = np.zeros((batch, target.shape[1], length))
    centres = np.full((batch, target.shape[1]), np.nan)

    def attend(b, q, real):
        keys = memory[b, :real]  # [S_real, d]: padding is never scored
        if config.attention == "bahdanau":  # v_a^T tanh(W_a s_{t-1} + U_a h_j)
            w_a, u_a, v_a = p["query_projection.weight"], p["key_projection.weight"], p["score_vector.weight"][0]
            scores = np.array([v_a @ np.tanh(w_a @ q + u_a @ k) for k in keys])
        elif config.attention == "luong-dot":
            scores = np.array([q @ k for k in keys])
        elif config.attention == "luong-general":
            scores = np.array([q @ p["key_projection.weight"] @ k for k in keys])
        else:  # concat: W_a [h_t; h_s], W_a being the query and key projections side by side
            w_a = np.concatenate([p["query_projection.weight"], p["key_projection.weight"]], axis=1)  # [d, 2d]
            scores = np.array([p["score_vector.weight"][0] @ np.tanh(w_a @ np.concatenate([q, k])) for k in keys])
        allowed = np.ones(real, bool)
        centre = np.nan
        if D:
            centre = (real - 1) * sigmoid(p["position_vector.weight"][0] @ np.tanh(p["position_projection.weight"] @ q))
            positions = np.arange(real)
            allowed = np.abs(positions - centre) <= D
            scores = scores - (positions - centre) ** 2 / (2 * sigma**2)
        weights = np.zeros(length)
        exp = np.exp(scores[allowed] - scores[allowed].max())
        weights[np.flatnonzero(allowed)] = exp / exp.sum()
        return weights, centre

    for b in range(batch):
        real = int((source[b] != config.pad_id).sum())
        h = np.tanh(p["init_projection.weight"] @ memory[b, :real].mean(0))
        c, feed = np.zeros_like(h), np.zeros_like(h)
        for t, token in enumerate(target[b].tolist()):
            x = embedding[token]
            if config.attention == "bahdanau":  # attend with s_{t-1}, then update
                weights, centre = attend(b, h, real)
                inputs = np.concatenate([x, weights @ memory[b]])
            else:  # Luong: update with input feeding, then attend with h_t
                inputs = np.concatenate([x, feed])
            if config.cell == "gru":
                h = gru_cell(p, "decoder_cell", inputs, h)
            else:
                h, c = lstm_cell(p, "decoder_cell", inputs, h, c)
            if config.attention != "bahdanau":
                weights, centre = attend(b, h, real)
                feed = np.tanh(p["combine.weight"] @ np.concatenate([weights @ memory[b], h]))
            rows[b, t], centres[b, t] = weights, centre
    return rows, centres


def module_attention(model, source, target):
    with torch.no_grad():
        _, weights = model.inspect(source, target)
    assert len(weights.cross) == 1 and not weights.encoder_self and not weights.decoder_self
    assert weights.cross[0].shape == (source.shape[0], 1, target.shape[1], source.shape[1])
    return weights.cross[0][:, 0].double().numpy()  # [B, T, S]


# --- 1, 2: the scores, against NumPy; rows are distributions -------------------------------------------------
@pytest.mark.parametrize("local_window", [0, 2])
@pytest.mark.parametrize("attention,cell", VARIANTS)
def test_attention_equals_an_independent_numpy_computation(attention, cell, local_window):
    model = make_model(attention, cell, local_window)
    source, target = padded_batch()
    expected, centres = numpy_attention(model, source, target)
    actual = module_attention(model, source, target)
    difference = np.abs(actual - expected).max()
    assert difference <= 1e-5, f"{attention}/{cell}/D={local_window}: max difference {difference:.2e}"
    if local_window:  # the predicted positions vary, so the window is really exercised
        assert np.nanstd(centres) > 0.1


@pytest.mark.parametrize("local_window", [0, 2])
@pytest.mark.parametrize("attention,cell", VARIANTS)
def test_rows_are_distributions_with_exact_zeros_where_masked(attention, cell, local_window):
    model = make_model(attention, cell, local_window)
    source, target = padded_batch()
    rows = module_attention(model, source, target)  # [B, T, S]
    assert (rows >= 0).all()
    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-6)
    padding = (source == 0).numpy()  # [B, S]
    assert (rows[padding[:, None, :].repeat(target.shape[1], 1)] == 0).all()
    if local_window:
        _, centres = numpy_attention(model, source, target)
        distance = np.abs(np.arange(source.shape[1])[None, None, :] - centres[:, :, None])  # [B, T, S]
        outside = distance > local_window + 1e-4  # away from the window's edge, where float32 and float64 may differ
        assert outside.any()
        assert (rows[outside] == 0).all()
        inside = (distance < local_window - 1e-4) & ~padding[:, None, :]
        assert (rows[inside] > 0).all()


# --- 3: incremental decoding equals the full pass -------------------------------------------------------------
def step_through(model, source, tokens, cache=None):
    """decode_step over tokens [B, T] -> (outputs [B, T, d], weights [B, T, S], cache)."""
    if cache is None:
        memory, mask, extra = model.encode(source)
        assert extra == []
        cache = model.start_cache(memory, mask)
    outputs, rows = [], []
    for t in range(tokens.shape[1]):
        output, self_rows, cross_rows = model.decode_step(tokens[:, t], cache)
        assert self_rows == [] and len(cross_rows) == 1 and cross_rows[0].shape == (tokens.shape[0], 1, source.shape[1])
        outputs.append(output)
        rows.append(cross_rows[0][:, 0])
    return torch.stack(outputs, 1), torch.stack(rows, 1), cache


@pytest.mark.parametrize("local_window", [0, 2])
@pytest.mark.parametrize("attention,cell", VARIANTS)
def test_incremental_decoding_equals_inspect(attention, cell, local_window):
    model = make_model(attention, cell, local_window)
    source, target = padded_batch()
    single_source, single_target = source[:1], target[:1]
    with torch.no_grad():
        outputs, rows, cache = step_through(model, single_source, single_target)
        logits, weights = model.inspect(single_source, single_target)
        assert cache.length == single_target.shape[1]
        torch.testing.assert_close(model.logits(outputs), logits, atol=1e-5, rtol=0)
        torch.testing.assert_close(rows, weights.cross[0][:, 0], atol=1e-5, rtol=0)
        # A padded batch's second row equals that sentence alone.
        batch_logits, batch_weights = model.inspect(source, target)
        alone_logits, alone_weights = model.inspect(source[1:, :4], target[1:, :4])
        torch.testing.assert_close(batch_logits[1, :4], alone_logits[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(batch_weights.cross[0][1, 0, :4, :4], alone_weights.cross[0][0, 0], atol=1e-5, rtol=0)
        memory, mask, _ = model.encode(source)
        alone_memory, _, _ = model.encode(source[1:, :4])
        assert (memory[1, 4:] == 0).all() and mask[1].tolist() == [True] * 4 + [False] * 4
        torch.testing.assert_close(memory[1, :4], alone_memory[0], atol=1e-6, rtol=0)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_forward_packs_the_real_positions_and_matches_inspect(attention):
    model = make_model(attention, "lstm", 2)
    source, target = padded_batch()
    real = target != 0
    with torch.no_grad():
        outputs = model(source, target)
        packed = model(source, target, rows=PackedRows(real))
        logits, _ = model.inspect(source, target)
    assert outputs.shape == (2, 6, 8) and packed.shape == (int(real.sum()), 8)
    torch.testing.assert_close(packed, outputs[real])
    torch.testing.assert_close(model.logits(outputs), logits)


# --- 4: stepping back and beam rows ---------------------------------------------------------------------------
@pytest.mark.parametrize("local_window", [0, 2])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_truncate_and_select_reproduce_the_steps(attention, local_window):
    model = make_model(attention, "lstm" if attention in ("luong-dot", "luong-concat") else "gru", local_window)
    source, target = padded_batch()
    tokens = target[:, :4]
    with torch.no_grad():
        outputs, rows, cache = step_through(model, source, tokens)
        cache.truncate(2)
        assert cache.length == 2
        again, again_rows, cache = step_through(model, source, tokens[:, 2:], cache)
        assert cache.length == 4
        torch.testing.assert_close(again, outputs[:, 2:], atol=0, rtol=0)
        torch.testing.assert_close(again_rows, rows[:, 2:], atol=0, rtol=0)
        # Beam search: rows [0, 0, 1] of a cache continue as those rows would.
        _, _, cache = step_through(model, source, tokens[:, :2])
        chosen = torch.tensor([0, 0, 1])
        selected = cache.select(chosen)
        assert selected.length == 2 and selected.memory.shape[0] == 3
        beam_outputs, beam_rows, selected = step_through(model, source[chosen], tokens[chosen, 2:], selected)
        torch.testing.assert_close(beam_outputs, outputs[chosen, 2:], atol=1e-6, rtol=0)
        torch.testing.assert_close(beam_rows, rows[chosen, 2:], atol=1e-6, rtol=0)
        selected.truncate(1)  # the selected cache keeps its whole history
        back, _, _ = step_through(model, source[chosen], tokens[chosen, 1:4], selected)
        torch.testing.assert_close(back, outputs[chosen, 1:], atol=1e-6, rtol=0)


@pytest.mark.parametrize("attention,local_window", [("bahdanau", 2), ("luong-dot", 0)])
def test_greedy_and_beam_search_decode_with_it(attention, local_window):
    model = make_model(attention, "lstm", local_window)
    source, _ = padded_batch()
    batch = greedy_decode(model, source)
    assert batch == [greedy_decode(model, source[:1])[0], greedy_decode(model, source[1:, :4])[0]]
    tree = beam_search(model, source[:1], beam_width=3)
    assert tree.hypotheses


def test_decode_step_refuses_to_pass_max_len():
    model = make_model(max_len=3)
    source, _ = padded_batch()
    memory, mask, _ = model.encode(source[:, :3])
    cache = model.start_cache(memory, mask)
    with torch.no_grad():
        for _ in range(3):
            model.decode_step(torch.tensor([2, 2]), cache)
        with pytest.raises(ValueError, match="max_len"):
            model.decode_step(torch.tensor([2, 2]), cache)
    with pytest.raises(ValueError, match="max_len"):
        model.encode(torch.full((1, 4), 5))


# --- 5: it learns ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attention,cell,local_window", [("bahdanau", "gru", 0), ("luong-general", "lstm", 2)])
def test_a_few_steps_on_a_copy_task_reduce_the_loss(attention, cell, local_window):
    model = make_model(attention, cell, local_window, d_embed=16, d_hidden=32).train()
    generator = torch.Generator().manual_seed(3)
    source = torch.randint(4, VOCAB, (16, 5), generator=generator)
    source[::2, 3:] = 0
    source[::2, 3] = 3
    source[1::2, 4] = 3
    target = torch.cat([torch.full((16, 1), 2), source], dim=1)  # BOS, the source (EOS included), padding
    real = target[:, 1:] != 0
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(25):
        outputs = model(source, target[:, :-1], rows=PackedRows(real))  # [N, d]
        loss = F.cross_entropy(model.logits(outputs), target[:, 1:][real])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses


def test_dropout_acts_in_training_only():
    model = make_model(dropout=0.5)
    source, target = padded_batch()
    with torch.no_grad():
        first, second = model(source, target), model(source, target)
        torch.testing.assert_close(first, second, atol=0, rtol=0)
        model.train()
        assert not torch.equal(model(source, target), first)


# --- 6: the config and the family interface -----------------------------------------------------------------
@pytest.mark.parametrize(
    "change,message",
    [
        (dict(attention="luong-cosine"), "attention must be one of"),
        (dict(d_hidden=7), "d_hidden must be even"),
        (dict(local_window=-1), "local_window must be 0"),
        (dict(cell="rnn"), "cell must be one of"),
        (dict(dropout=1.0), r"dropout must be in \[0, 1\)"),
        (dict(target_vocab_size=20), "joint vocabulary"),
        (dict(eos_id=1000), "eos_id must be a piece id"),
        (dict(d_embed=0), "d_embed must be a positive whole number"),
    ],
)
def test_config_validation(change, message):
    with pytest.raises(ConfigError, match=message):
        RNNConfig(**change)


def test_config_round_trip_and_description():
    config = RNNConfig(cell="lstm", attention="luong-concat", local_window=3, joint_vocab=False, target_vocab_size=500)
    data = config.to_dict()
    assert all(isinstance(value, (int, float, str, bool)) for value in data.values())
    assert RNNConfig.from_dict(data) == config == config_from_dict("rnn", data)
    with pytest.raises(ConfigError, match="unknown config fields: n_heads"):
        RNNConfig.from_dict(dict(data, n_heads=2))
    assert (config.d_model, config.n_heads, config.d_k, config.n_encoder_layers, config.n_decoder_layers) == (256, 1, 256, 1, 1)
    assert RNNConfig(local_window=3).describe() == (
        "GRU bi-encoder + GRU decoder, Bahdanau attention (local-p, D=3), d_embed 128, d_hidden 256"
    )
    assert "LSTM bi-encoder + LSTM decoder, Luong concat attention" in config.describe()


def test_the_family_interface():
    model = build_network(RNNConfig(source_vocab_size=30, target_vocab_size=40, joint_vocab=False, d_embed=8, d_hidden=12))
    assert isinstance(model, RNNAttention) and isinstance(model, Network)
    family = family_of(model)
    assert family.name == "rnn" and family.capabilities.kinds == (AttentionKind.CROSS,)
    assert family.capabilities.architecture is Architecture.ENCODER_DECODER
    assert model.source_embedding is not model.target_embedding
    assert model.parameter_count() == sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        logits, _ = model.inspect(torch.tensor([[29, 5, 3]]), torch.tensor([[2, 39]]))
    assert logits.shape == (1, 2, 40)
