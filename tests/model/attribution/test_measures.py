"""The contribution measures beyond the norm-based one, on constructed models with known answers:

* the sublayer-by-sublayer pass (model/attribution/transparent_pass.py) is the model's own (logits, every weight);
* ALTI and ALTI+ are non-negative, rows sum to 1 (ALTI+: source and target-prefix parts together), and with the
  value projections zeroed (attention passes nothing on) every token is made only of itself;
* value zeroing of a token no head attends to (a future position under the decoder's mask) is 0;
* integrated gradients satisfy completeness within 1%; gradient × input is linear in the objective, so the
  contrastive saliency of log p(a) − log p(b) is the difference of the two saliencies;
* Shift-Att is the cross-attention row of the step after; every measure's shares are non-negative and at most 1
  per row, and a measured trace cuts, groups into words and names its measure like any trace.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.attribution.alti import alti_plus, decoder_rollout, encoder_rollout
from model.attribution.gradients import prediction_scores, saliency
from model.attribution.measures import CONTRIBUTIONS, MEASURES, MeasureError, compute_measure, measured_trace, unsupported
from model.attribution.transparent_pass import embed_tokens, measured_pass_of, token_pass
from model.attribution.value_zeroing import value_zeroing
from model.decoding.trace import Trace
from model.inspection.selection import select
from model.kinds import AttentionKind
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer

SOURCE = [5, 6, 7, 8, 9, 3]
CHOSEN = [10, 11, 12, 13, 3]


def tiny(norm: str = "post", seed: int = 4, encoder_layers: int = 2) -> Transformer:
    torch.manual_seed(seed)
    config = TransformerConfig(
        source_vocab_size=24,
        target_vocab_size=24,
        n_encoder_layers=encoder_layers,
        n_decoder_layers=2,
        d_model=16,
        n_heads=2,
        d_ff=32,
        dropout=0.0,
        norm_placement=norm,
    )
    return Transformer(config).eval()


def ids():
    return torch.tensor([SOURCE]), torch.tensor([[2] + CHOSEN[:-1]])


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_transparent_pass_is_the_models_own(norm):
    model = tiny(norm)
    source, inputs = ids()
    with torch.no_grad():
        record = token_pass(model, source, inputs)
        logits, weights = model.inspect(source, inputs)
    torch.testing.assert_close(record.logits, logits, atol=1e-5, rtol=1e-5)
    pairs = ((record.encoder, weights.encoder_self), (record.decoder, weights.decoder_self), (record.cross, weights.cross))
    for mine, theirs in pairs:
        for layer_record, layer_weights in zip(mine, theirs):
            torch.testing.assert_close(layer_record.weights, layer_weights, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_alti_is_non_negative_and_its_rows_sum_to_one(norm):
    model = tiny(norm)
    with torch.no_grad():
        record = token_pass(model, *ids())
        sources, targets = alti_plus(record)
        for table in (*encoder_rollout(record), *decoder_rollout(record), *sources, *targets):
            assert float(table.min()) >= 0.0
        for table in (*encoder_rollout(record), *decoder_rollout(record)):
            torch.testing.assert_close(table.sum(-1), torch.ones(table.shape[:-1]), atol=1e-5, rtol=0)
        for source_part, target_part in zip(sources, targets):
            together = source_part.sum(-1) + target_part.sum(-1)
            torch.testing.assert_close(together, torch.ones(source_part.shape[:-1]), atol=1e-5, rtol=0)
            assert float(torch.triu(target_part[0], diagonal=1).abs().max()) == 0.0  # no future token contributes


def test_with_nothing_passed_on_by_attention_every_token_is_made_of_itself():
    model = tiny("post")
    with torch.no_grad():
        for layer in (*model.encoder_layers, *model.decoder_layers):
            layer.self_attention.qkv_projection.weight[32:] = 0.0  # W_V = 0: attention outputs nothing
        for layer in model.decoder_layers:
            layer.cross_attention.kv_projection.weight[16:] = 0.0
        record = token_pass(model, *ids())
        sources, targets = alti_plus(record)
    torch.testing.assert_close(encoder_rollout(record)[-1][0], torch.eye(len(SOURCE)), atol=1e-6, rtol=0)
    torch.testing.assert_close(targets[-1][0], torch.eye(len(CHOSEN)), atol=1e-6, rtol=0)
    assert float(sources[-1].abs().max()) < 1e-6  # nothing came from the source


def test_value_zeroing_of_a_token_no_head_attends_to_is_zero():
    model = tiny()
    with torch.no_grad():
        record = token_pass(model, *ids())
    encoder, decoder, cross = value_zeroing(measured_pass_of(model), record)
    for table in decoder:
        future = torch.triu(table, diagonal=1)  # keys after the query: masked, attended by no head
        assert float(future.abs().max()) < 1e-12
        assert float(torch.tril(table).max()) > 0  # the attended ones do matter
    for table in (*encoder, *decoder, *cross):
        assert float(table.min()) >= 0.0


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_integrated_gradients_are_complete(norm):
    model = tiny(norm)
    source, inputs = ids()
    steps = list(range(len(CHOSEN)))
    found = saliency(model, source, inputs, steps, CHOSEN, method="ig")  # adaptive: refined until converged
    with torch.no_grad():
        source_vectors = embed_tokens(model, source, "source").expand(len(steps), -1, -1)
        target_vectors = embed_tokens(model, inputs, "target").expand(len(steps), -1, -1)
        at_input = prediction_scores(model, source_vectors, target_vectors, torch.tensor(steps), torch.tensor(CHOSEN))
        at_baseline = prediction_scores(model, 0 * source_vectors, 0 * target_vectors, torch.tensor(steps), torch.tensor(CHOSEN))
    change = (at_input - at_baseline).numpy()
    total = found.source.sum(-1) + found.target.sum(-1)
    np.testing.assert_allclose(total, change, rtol=0.01, atol=1e-4)
    assert np.all(found.completeness_gap < 0.01) and found.converged.all()
    assert np.all(np.triu(found.target, 1) == 0)  # a prediction never reads a later decoder input


def test_contrastive_saliency_is_the_difference_of_the_two_saliencies():
    model = tiny()
    source, inputs = ids()
    step, chosen, other = 2, CHOSEN[2], 7
    of_chosen = saliency(model, source, inputs, [step], [chosen])
    of_other = saliency(model, source, inputs, [step], [other])
    contrast = saliency(model, source, inputs, [step], [chosen], contrast_ids=[other])
    np.testing.assert_allclose(contrast.source, of_chosen.source - of_other.source, atol=1e-5)
    np.testing.assert_allclose(contrast.target, of_chosen.target - of_other.target, atol=1e-5)


def test_shift_att_reads_the_row_where_the_word_is_the_input():
    model = tiny()
    source = torch.tensor([SOURCE])
    with torch.no_grad():
        _, weights = model.inspect(source, torch.tensor([[2] + CHOSEN]))
    shifted = compute_measure(model, SOURCE, CHOSEN, "shift-att").values[AttentionKind.CROSS]  # [L, H, T, S]
    for layer, layer_weights in enumerate(weights.cross):
        np.testing.assert_allclose(shifted[layer], layer_weights[0, :, 1:].numpy(), atol=1e-6)


@pytest.mark.parametrize("name", CONTRIBUTIONS)
def test_every_measure_gives_shares_for_the_kinds_it_defines(name):
    model = tiny(encoder_layers=3)  # three encoder layers, two decoder layers: each kind has its own depth
    result = compute_measure(model, SOURCE, CHOSEN, name)
    measure = MEASURES[name]
    assert set(result.shares) == set(measure.kinds)
    for kind, shares in result.shares.items():
        n_layers = 1 if measure.single else (3 if kind is AttentionKind.ENCODER else 2)
        n_heads = 2 if measure.per_head else 1
        queries = len(SOURCE) if kind is AttentionKind.ENCODER else len(CHOSEN)
        keys = len(CHOSEN) if kind is AttentionKind.DECODER else len(SOURCE)
        assert shares.shape == (n_layers, n_heads, queries, keys)
        assert shares.min() >= 0.0 and shares.sum(-1).max() <= 1.0 + 1e-5
    if name in ("alti+", "grad-input", "ig"):
        assert result.source_share.shape == (len(CHOSEN),)
        assert np.all((result.source_share >= 0) & (result.source_share <= 1 + 1e-6))


def test_a_measured_trace_is_shown_like_any_trace():
    model = tiny()
    weights = compute_measure(model, SOURCE, CHOSEN, "attention").values
    pieces = ["▁a", "▁b", "c", "▁d", "▁e", "</s>"]
    out = ["▁x", "y", "▁z", "▁w", "</s>"]
    trace = Trace(
        weights[AttentionKind.ENCODER],
        weights[AttentionKind.DECODER],
        weights[AttentionKind.CROSS],
        pieces,
        out,
        ["<s>", *out[:-1]],
        chosen_ids=np.array(CHOSEN),
    )
    shown = measured_trace(trace, compute_measure(model, SOURCE, CHOSEN, "alti+"))
    assert shown.measure == "alti+" and shown.cross.shape == (2, 1, 5, 6)
    assert select(shown, "cross", 1, 0).title.startswith("ALTI+ through layer 2")
    cut = shown.at_step(3)
    assert cut.cross.shape[2] == 3 and len(cut.source_share) == 3
    words = shown.word_level()
    assert words.cross.shape[2:] == (4, 5) and len(words.source_share) == 4
    missing = measured_trace(trace, compute_measure(model, SOURCE, CHOSEN, "alti"))
    assert missing.cross is None and missing.encoder_self is not None


def test_a_measure_the_model_or_kind_does_not_define_says_why():
    model = tiny()
    assert unsupported(model, "attention") == ""
    assert "cross-attention" in unsupported(model, "alti", AttentionKind.CROSS)
    assert "encoder" in unsupported(model, "ig", AttentionKind.ENCODER)

    from model.nn.registry import build_network
    from model.nn.rnn_config import RNNConfig

    rnn = build_network(RNNConfig(source_vocab_size=30, target_vocab_size=30, d_embed=8, d_hidden=12))
    why = "Norm-based ‖α f(x)‖ reads each head's value vectors; this model's attention has no heads or value vectors"
    assert unsupported(rnn, "norm") == why
    with pytest.raises(MeasureError, match="one of"):
        compute_measure(model, SOURCE, CHOSEN, "nonsense")
