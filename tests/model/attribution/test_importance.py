"""Head importance (model/attribution/importance.py) and the pruning curve, on tiny models with known answers: a
head whose output never reaches the model scores exactly 0; a head's score is |A_hᵀ ∂L/∂A_h| computed by hand from
its output and that output's gradient; the curve starts at the full model and removes the least important first."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.attribution.importance import PruningPoint, head_importance, heads_before_drop, pruning_curve
from model.cli.commands import main
from model.data.batching import encode_pairs
from model.io import checkpoint
from model.kinds import AttentionKind
from model.nn.masking import Head, zero_heads
from model.training.evaluation import score


@pytest.fixture(scope="module")
def bundle_and_pairs(toy_fr_bundle):
    bundle, splits = toy_fr_bundle
    return bundle, splits.valid[:12]


def test_a_head_that_is_never_used_is_worth_nothing(bundle_and_pairs):
    import copy

    bundle, pairs = bundle_and_pairs
    unused = copy.copy(bundle)
    unused.model = copy.deepcopy(bundle.model)
    zero_heads(unused.model, (Head(AttentionKind.CROSS, 1, 2), Head(AttentionKind.ENCODER, 0, 0)))
    importance = head_importance(unused, pairs)
    assert importance.raw[AttentionKind.CROSS][1, 2] == 0.0 and importance.raw[AttentionKind.ENCODER][0, 0] == 0.0
    assert (importance.raw[AttentionKind.CROSS][0] > 0).all() and importance.n_sentences == len(pairs)
    ranking = importance.ranking()
    assert {head for head, _ in ranking[:2]} == {Head(AttentionKind.CROSS, 1, 2), Head(AttentionKind.ENCODER, 0, 0)}
    for table in importance.normalised.values():  # per layer, unit l2 norm (a layer of zeros stays zero)
        norms = np.linalg.norm(table, axis=1)
        assert np.all((np.abs(norms - 1) < 1e-6) | (norms == 0))


def test_importance_is_the_head_output_times_its_gradient(bundle_and_pairs):
    bundle, pairs = bundle_and_pairs
    model = bundle.model
    pair = pairs[0]
    source_ids, target_ids = encode_pairs([pair], bundle.source_tokenizer, bundle.target_tokenizer, model.config)[0]
    kind, layer = AttentionKind.DECODER, 1
    module = model.attention_module(kind, layer)
    captured = {}

    def keep(_module, inputs):
        (context,) = inputs  # [..., H * d_k]: every head's output A_h side by side
        context = context.detach().requires_grad_(True)
        captured["context"] = context
        return (context,)

    handle = module.out_projection.register_forward_pre_hook(keep)
    try:
        target = torch.tensor([target_ids])
        hidden = model(torch.tensor([source_ids]), target[:, :-1])
        loss = torch.nn.functional.cross_entropy(model.logits(hidden)[0], target[0, 1:])
        loss.backward()
    finally:
        handle.remove()
        model.zero_grad(set_to_none=True)
    context, gradient = captured["context"].detach(), captured["context"].grad
    d_k = module.d_k
    by_hand = [abs(float((context[..., h * d_k : (h + 1) * d_k] * gradient[..., h * d_k : (h + 1) * d_k]).sum())) for h in range(4)]
    measured = head_importance(bundle, [pair]).raw[kind][layer]
    np.testing.assert_allclose(measured, by_hand, rtol=1e-4, atol=1e-9)


def test_the_pruning_curve_removes_the_least_important_first(bundle_and_pairs):
    bundle, pairs = bundle_and_pairs
    importance = head_importance(bundle, pairs)
    n_heads = len(importance.ranking())  # 2 + 2 layers of 4 heads: 8 encoder, 8 decoder, 8 cross
    points = pruning_curve(bundle, importance, pairs, counts=[0, 3, n_heads])
    full = score(
        bundle.model, bundle.source_tokenizer, bundle.target_tokenizer, pairs, torch.device("cpu"), decode_limit=len(pairs)
    )
    assert points[0].removed == () and points[0].first == full.exact_match and points[0].second == pytest.approx(full.bleu)
    assert points[1].removed == tuple(head for head, _ in importance.ranking()[:3])
    assert n_heads == 24 and len(points[2].removed) == 24 and points[2].second < 5.0  # no head left: nothing is translated


def test_heads_before_a_drop_in_exact_match():
    curve = [PruningPoint(n, (), exact, 0.0) for n, exact in ((0, 0.98), (4, 0.97), (8, 0.94), (12, 0.92), (16, 0.5))]
    assert heads_before_drop(curve) == 8  # 0.92 is 0.06 below 0.98
    assert heads_before_drop(curve, drop=0.015) == 4


def test_the_heads_command_writes_both_tables(bundle_and_pairs, tmp_path, capsys):
    bundle, _ = bundle_and_pairs
    model = checkpoint.save(bundle, tmp_path / "model.safetensors")
    importance, curve = tmp_path / "importance.csv", tmp_path / "curve.csv"
    args = ["heads", "--model", str(model), "--corpus", "toy-fr", "--n", "8", "--quiet"]
    assert main([*args, "--importance", str(importance), "--prune-curve", str(curve), "--every", "12"]) == 0
    rows = importance.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "kind,layer,head,importance,normalised,rank_least_first" and len(rows) == 1 + 24
    assert curve.read_text(encoding="utf-8").splitlines()[0] == "heads_removed,exact_match,bleu,last_removed"
    assert len(curve.read_text(encoding="utf-8").splitlines()) == 1 + 3  # 0, 12, 24
    assert "heads can go before exact match drops by 0.05" in capsys.readouterr().out
    assert main(args) == 1
    assert "nothing to write" in capsys.readouterr().err
    before = model.read_bytes()
    assert main([*args, "--importance", str(model)]) == 1  # never over the model file
    assert model.read_bytes() == before
