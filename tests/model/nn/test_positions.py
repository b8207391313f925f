"""The Transformer's positional schemes (model/nn/positions.py, issue 42), by known answers:

* every scheme's three paths agree: training's fast path, the inspection path and one-token steps through the cache;
  a saved model opens with the same outputs;
* rotary: a query–key score depends only on the offset (i, j and i + k, j + k score alike, to float precision), and
  turning back undoes the turn;
* no positions: the encoder's output is permuted exactly as its input is;
* ALiBi's slopes are the paper's geometric sequence (and its rule between powers of two), and the model's scores are
  q·k/√d_k − m_h·|i − j|;
* the relative bias's buckets are T5's (the library's own ``_relative_position_bucket``);
* a learned table refuses a position past its size in one line naming the limit;
* the neuron view splits self-attention's scores by the scheme (rope's turn, a bias), the terms summing to the scores.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.io import checkpoint
from model.kinds import AttentionKind
from model.neuron.splits import ROTARY_TERMS, bias_terms
from model.neuron.vectors import sentence_vectors
from model.nn.config import TRANSFORMER_POSITIONS, ConfigError, TransformerConfig
from model.nn.positions import SCHEMES, Rotary, alibi_slopes, relative_buckets
from model.nn.transformer import Transformer
from tests.conftest import tiny_bundle

SIZES = dict(source_vocab_size=30, target_vocab_size=30, n_encoder_layers=2, n_decoder_layers=2, d_model=32, n_heads=4)


def _model(scheme: str, **options) -> Transformer:
    torch.manual_seed(0)
    return Transformer(
        TransformerConfig(**(SIZES | dict(d_ff=64, dropout=0.0, max_len=40) | options), positional_encoding=scheme)
    ).eval()


def test_the_registry_holds_every_scheme_the_config_names():
    assert tuple(SCHEMES) == TRANSFORMER_POSITIONS == ("sinusoidal", "learned", "rope", "alibi", "relative", "none")


@pytest.mark.parametrize("scheme", TRANSFORMER_POSITIONS)
def test_the_fast_path_the_inspection_path_and_the_steps_agree_and_a_saved_model_reopens(scheme, tmp_path):
    model = _model(scheme)
    source, target = torch.randint(4, 30, (2, 9)), torch.randint(4, 30, (2, 7))
    with torch.no_grad():
        fast = model.logits(model(source, target))  # [2, 7, V]
        inspected, _ = model.inspect(source, target)
        memory, mask, _ = model.encode(source)
        cache = model.start_cache(memory, mask)
        stepped = torch.stack([model.logits(model.decode_step(target[:, t], cache)[0]) for t in range(target.shape[1])], 1)
    assert torch.allclose(fast, inspected, atol=1e-5) and torch.allclose(stepped, inspected, atol=1e-5)
    bundle, _ = tiny_bundle("copy", size=50, positional_encoding=scheme)
    reopened = checkpoint.load(checkpoint.save(bundle, tmp_path / "m.safetensors"))
    source = torch.tensor([bundle.source_ids("a b c")[0]])
    target = torch.tensor([[bundle.config.bos_id, 5, 6]])
    with torch.no_grad():
        assert torch.equal(reopened.model.inspect(source, target)[0], bundle.model.inspect(source, target)[0])
    assert reopened.config.positional_encoding == scheme


def _kept(model: Transformer, names: list[str], source: torch.Tensor) -> dict[str, torch.Tensor]:
    """What the encoder's hook points ``names`` saw of ``source`` [1, S] (its inspection pass)."""
    points, kept = model.hook_points(), {}
    handles = [points[name].register_forward_hook(lambda _m, _a, out, name=name: kept.__setitem__(name, out[0])) for name in names]
    try:
        with torch.no_grad():
            model.encode(source, need_weights=True)
    finally:
        for handle in handles:
            handle.remove()
    return kept


def test_a_rotary_score_depends_only_on_the_offset():
    scheme = Rotary(64, 32, 4)
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 1, 8, dtype=torch.float64), torch.randn(1, 1, 1, 8, dtype=torch.float64)
    length = 24
    queries = scheme.turn(q.expand(1, 1, length, 8), 0)  # the same query at every position, turned by it
    keys = scheme.turn(k.expand(1, 1, length, 8), 0)
    scores = (queries @ keys.transpose(-1, -2))[0, 0]  # [L, L]
    for shift in (1, 5, 11):
        assert torch.allclose(scores[:-shift, :-shift], scores[shift:, shift:], atol=1e-12)
    assert torch.allclose(scheme.turn(scheme.turn(q.expand(1, 1, 5, 8), 3), 3, back=True), q.expand(1, 1, 5, 8), atol=1e-12)
    kept = _kept(_model("rope"), ["encoder.0.self.scores"], torch.full((1, 12), 7))  # one piece: the same content
    scores = kept["encoder.0.self.scores"]  # [H, L, L]: a Toeplitz matrix per head
    assert torch.allclose(scores[:, :-3, :-3], scores[:, 3:, 3:], atol=1e-5)


def test_without_positions_the_encoder_permutes_its_output_as_its_input():
    model = _model("none")
    source = torch.randint(4, 30, (1, 10))
    order = torch.randperm(10)
    with torch.no_grad():
        memory, _, _ = model.encode(source)
        permuted, _, _ = model.encode(source[:, order])
    assert torch.allclose(permuted, memory[:, order], atol=1e-5)


def test_alibi_slopes_are_the_paper_s_geometric_sequence_and_the_model_adds_them():
    assert alibi_slopes(8).tolist() == [2.0**-h for h in range(1, 9)]
    assert alibi_slopes(4).tolist() == [2.0 ** (-2 * h) for h in range(1, 5)]
    assert alibi_slopes(6).tolist() == pytest.approx([2.0 ** -(8 / 4 * h) for h in range(1, 5)] + [2.0**-1, 2.0**-3])
    names = [f"encoder.1.self.{point}" for point in ("q", "k", "scores")]
    kept = _kept(_model("alibi"), names, torch.randint(4, 30, (1, 7)))
    q, k, scores = (kept[name] for name in names)
    distance = (torch.arange(7)[None, :] - torch.arange(7)[:, None]).abs()  # [Q, K]
    expected = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) - alibi_slopes(4)[:, None, None] * distance
    assert torch.allclose(scores, expected, atol=1e-5)


def test_the_relative_buckets_are_t5_s():
    transformers = pytest.importorskip("transformers")
    t5 = transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket
    offsets = torch.arange(-150, 151)[None, :]  # key − query, past both ends of the buckets (128)
    for bidirectional in (True, False):
        expected = t5(offsets, bidirectional=bidirectional, num_buckets=32, max_distance=128)
        assert torch.equal(relative_buckets(offsets, bidirectional), expected)


def test_a_learned_table_refuses_a_position_past_its_size_in_one_line():
    model = _model("learned", max_len=12)
    with pytest.raises(ValueError, match="sequence of 13 pieces exceeds max_len 12") as error:
        model.encode(torch.randint(4, 30, (1, 13)))
    assert "\n" not in str(error.value)
    with pytest.raises(ConfigError, match="rotary positions turn pairs"):
        TransformerConfig(**(SIZES | dict(d_model=36)), positional_encoding="rope")  # d_k 9


@pytest.mark.parametrize("scheme", ["rope", "alibi", "relative", "none"])
def test_the_neuron_view_splits_self_attention_by_the_scheme_and_the_terms_sum_to_the_scores(scheme):
    """Rope: the unturned query·key and what the turn adds; a bias: query·key and the bias; none: no split (and no
    positions in cross-attention for any of them). The weights are the inspection pass's."""
    model = _model(scheme)
    source, target = [5, 9, 11, 7, 3], [6, 8, 10, 3]
    vectors = sentence_vectors(model, source, target)
    _, weights = model.inspect(torch.tensor([source]), torch.tensor([[2] + target[:-1]]))
    bias = SCHEMES[scheme].bias_words  # what the scheme says its bias is
    expected = {"rope": ROTARY_TERMS, "alibi": bias_terms("alibi", bias), "relative": bias_terms("relative", bias), "none": None}[
        scheme
    ]
    for kind in AttentionKind:
        kind_vectors = vectors.of(kind)
        inspected = torch.stack(getattr(weights, kind.field))[:, 0].detach().double().numpy()  # [layers, heads, Q, K]
        assert np.allclose(kind_vectors.weights, inspected, atol=1e-6)
        split = expected if kind is not AttentionKind.CROSS else None
        assert kind_vectors.term_split == split
        if split is not None:
            visible = np.isfinite(kind_vectors.scores)
            assert kind_vectors.terms is not None and np.allclose(kind_vectors.terms.sum(0)[visible], kind_vectors.scores[visible])
    if scheme == "alibi":  # the bias term is the paper's −m_h·|i − j| (the encoder's, every layer)
        distance = np.abs(np.arange(5)[None, :] - np.arange(5)[:, None])
        bias = vectors.of(AttentionKind.ENCODER).terms[1]  # [layers, heads, Q, K]
        assert np.allclose(bias, -alibi_slopes(4).double().numpy()[None, :, None, None] * distance, atol=1e-9)


def test_without_positions_the_whole_model_reads_a_source_and_its_permutation_alike():
    """Issue 42 expected copying through cross-attention to survive without positions; it cannot: the encoder's output
    is permuted as its input (above), and cross-attention sums over its keys whatever their order, so the decoder's
    output is the same for every order of the source. Copy and reverse then fail alike; sort (whose answer does not
    depend on the source's order) can be learned (benchmarks/lengths.py measures it)."""
    model = _model("none")
    source, target = torch.randint(4, 30, (1, 9)), torch.randint(4, 30, (1, 6))
    with torch.no_grad():
        logits = model.inspect(source, target)[0]
        permuted = model.inspect(source[:, torch.randperm(9)], target)[0]
    assert torch.allclose(logits, permuted, atol=1e-5)


def test_randomised_positions_draw_the_table_s_rows_in_training_only():
    """Ruoss et al. 2023: in training a sequence reads a sorted random draw of the table's rows; read afterwards, the
    first L rows in order. A scheme with no table cannot take them (one line)."""
    model = _model("learned", randomised_positions=True)
    seen: list = []
    handle = model.hook_points()["encoder.pos"].register_forward_hook(lambda _m, _a, out: seen.append(out.detach()))
    source = torch.randint(4, 30, (1, 6))
    model.train()
    with torch.no_grad():
        model.encode(source)
    model.eval()
    with torch.no_grad():
        model.encode(source)
    handle.remove()
    table = model.positional_table.detach()
    drawn = [int(torch.cdist(row[None], table).argmin()) for row in seen[0]]  # the rows training read
    assert drawn == sorted(drawn) and len(set(drawn)) == 6 and drawn != list(range(6))
    assert torch.equal(seen[1], table[:6])
    with pytest.raises(ConfigError, match="randomised positions draw rows of a positional table"):
        TransformerConfig(**SIZES, positional_encoding="alibi", randomised_positions=True)
