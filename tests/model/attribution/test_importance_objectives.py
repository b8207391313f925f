"""Head importance and the pruning curve beyond translation (model/attribution/objectives.py), against the test's own
computation:

* a decoder-only model (GPT-2; the Llama layout): a head's importance is |∂L/∂ξ| of the library's own language-model
  loss (each piece from the ones before it) through a gate of the test's own on the head's slice of W^O's input; the
  pruning curve's first point is the full model's next-piece accuracy and perplexity, computed here from the library's
  logits, and its points say what they are;
* the app's classifier (a tagger): a head's importance is |∂L/∂ξ| of its labels' cross-entropy through the test's own
  gate; its pruning curve scores exact match and macro-F1;
* every head knocked out in a layer (its W^O columns zero) scores exactly 0.
"""

from __future__ import annotations

import math

import pytest
import torch

from model.attribution.importance import head_importance, pruning_curve
from model.attribution.objectives import LABELLING, LANGUAGE_MODEL
from model.data.corpora import Pair
from model.io.models import open_model
from model.kinds import AttentionKind
from model.nn.masking import Head, masked_model
from model.training.labelling import batch_logits, encode_labelled

TEXTS = ("The house is small and the cat sees the dog.", "A small cat sleeps in the house.")
DECODER, ENCODER = AttentionKind.DECODER, AttentionKind.ENCODER


def _w_out(network, layer: int) -> torch.nn.Module:
    """A layer's attention output projection, by the library's names."""
    if network.config.model_type == "gpt2":
        return network.hf_model.transformer.h[layer].attn.c_proj
    return network.hf_model.model.layers[layer].self_attn.o_proj


def _gated(module: torch.nn.Module, head: int, n_heads: int, gate: torch.Tensor):
    """The test's own gate: head ``head``'s slice of the projection's input scaled by ``gate``."""

    def scale(_module, args):
        (context,) = args
        width = context.shape[-1] // n_heads
        factors = torch.ones(context.shape[-1])
        factors = torch.cat([factors[: head * width], gate.expand(width), factors[(head + 1) * width :]])
        return (context * factors,)

    return module.register_forward_pre_hook(scale)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_decoder_only_head_s_importance_is_the_gradient_of_the_library_s_language_model_loss(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    pairs = [Pair(text, "") for text in TEXTS]
    importance = head_importance(bundle, pairs)
    assert set(importance.raw) == {DECODER}
    assert importance.raw[DECODER].shape == (network.config.n_decoder_layers, network.config.n_heads)
    for layer, head in ((0, 1), (1, 3)):
        total = 0.0
        for text in TEXTS:
            ids = torch.tensor([bundle.source_ids(text)[0]])  # [1, T]
            gate = torch.ones((), requires_grad=True)
            handle = _gated(_w_out(network, layer), head, network.config.n_heads, gate)
            try:
                logits = network.hf_model(input_ids=ids, use_cache=False).logits  # [1, T, V]
                torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, 1:]).backward()
            finally:
                handle.remove()
                network.hf_model.zero_grad(set_to_none=True)
            total += abs(float(gate.grad))
        assert importance.raw[DECODER][layer, head] == pytest.approx(total / len(TEXTS), abs=1e-5)


def test_a_decoder_only_pruning_curve_scores_next_piece_accuracy_and_perplexity(tiny_bundles):
    bundle = tiny_bundles["gpt2"]
    pairs = [Pair(text, "") for text in TEXTS]
    importance = head_importance(bundle, pairs)
    points = pruning_curve(bundle, importance, pairs, counts=[0, 2])
    right, total, log_likelihood = 0, 0, 0.0
    with torch.no_grad():
        for text in TEXTS:
            ids = torch.tensor([bundle.source_ids(text)[0]])
            log_probabilities = torch.log_softmax(bundle.model.hf_model(input_ids=ids).logits[0, :-1], dim=-1)  # [T-1, V]
            right += int((log_probabilities.argmax(-1) == ids[0, 1:]).sum())
            total += ids.shape[1] - 1
            log_likelihood += float(log_probabilities.gather(1, ids[0, 1:, None]).sum())
    assert points[0].scoring is LANGUAGE_MODEL and points[0].first == pytest.approx(right / total)
    assert points[0].second == pytest.approx(math.exp(-log_likelihood / total), rel=1e-5)
    assert points[1].n_removed == 2 and points[1].row()["last_removed"] == points[1].removed[-1].describe()
    assert set(points[1].row()) == {"heads_removed", "next_piece_accuracy", "perplexity", "last_removed"}


@pytest.fixture(scope="module")
def tagger():
    return open_model("tagger")


def test_a_tagger_head_s_importance_is_the_gradient_of_its_label_loss(tagger):
    pairs = [Pair("the cat sees the dog", "DET NOUN VERB DET NOUN"), Pair("a small cat sleeps", "DET ADJ NOUN VERB")]
    importance = head_importance(tagger, pairs)
    model = tagger.model
    layer, head = 1, 2
    total = 0.0
    for ids, labels in encode_labelled(pairs, tagger.source_tokenizer, model.config):
        gate = torch.ones((), requires_grad=True)
        handle = _gated(model.layers[layer].self_attention.out_projection, head, model.config.n_heads, gate)
        try:
            scores, gold = batch_logits(model, torch.tensor([ids]), torch.tensor([labels]))
            torch.nn.functional.cross_entropy(scores, gold).backward()
        finally:
            handle.remove()
            model.zero_grad(set_to_none=True)
        total += abs(float(gate.grad))
    assert importance.raw[ENCODER][layer, head] == pytest.approx(total / len(pairs), abs=1e-5)
    points = pruning_curve(tagger, importance, pairs, counts=[0, 1])
    assert points[0].scoring is LABELLING and 0.0 <= points[0].first <= 1.0 and 0.0 <= points[0].second <= 1.0


def test_a_layer_whose_heads_are_all_knocked_out_scores_zero(tiny_bundles):
    bundle = tiny_bundles["llama"]
    heads = tuple(Head(DECODER, 0, head) for head in range(bundle.model.config.n_heads))
    knocked = type(bundle)(**{**vars(bundle), "model": masked_model(bundle.model, heads)})
    importance = head_importance(knocked, [Pair(TEXTS[0], "")])
    assert (importance.raw[DECODER][0] == 0.0).all() and (importance.raw[DECODER][1] > 0.0).any()


def test_a_masked_language_model_head_s_importance_is_the_gradient_of_its_masked_pieces_loss(tiny_bundles):
    """BERT's masked-LM head: every sixth piece (from the first after [CLS]) masked by the test itself, the library's
    loss of reading them back, through the test's own gate on the head's slice of ``attention.output.dense``."""
    bundle = tiny_bundles["bert-mlm"]
    network = bundle.model
    importance = head_importance(bundle, [Pair(TEXTS[0], "")])
    ids = bundle.source_ids(TEXTS[0])[0]
    masked, labels = list(ids), [-100] * len(ids)
    for position in range(1, len(ids) - 1, 6):
        masked[position], labels[position] = network.mask_id, ids[position]
    layer, head = 1, 2
    gate = torch.ones((), requires_grad=True)
    dense = network.hf_model.bert.encoder.layer[layer].attention.output.dense  # the library's own name for W^O
    handle = _gated(dense, head, network.config.n_heads, gate)
    try:
        logits = network.hf_model(input_ids=torch.tensor([masked])).logits  # [1, S, V]
        torch.nn.functional.cross_entropy(logits[0], torch.tensor(labels), ignore_index=-100).backward()
    finally:
        handle.remove()
        network.hf_model.zero_grad(set_to_none=True)
    assert importance.raw[ENCODER][layer, head] == pytest.approx(abs(float(gate.grad)), abs=1e-5)
    points = pruning_curve(bundle, importance, [Pair(TEXTS[0], "")], counts=[0])
    assert points[0].scoring.first == "masked-piece accuracy" and points[0].second > 1.0


def test_a_classification_head_s_importance_is_the_gradient_of_its_own_decisions_loss(tiny_bundles):
    """BERT with a sequence-classification head: no corpus labels its classes, so the unmasked library model's own
    likeliest class stands in; the importance is |∂L/∂ξ| of that class's cross-entropy through the test's own gate; the
    pruning curve's full model agrees with itself on every sentence."""
    bundle = tiny_bundles["bert-classifier"]
    network = bundle.model
    pairs = [Pair(text, "") for text in TEXTS]
    importance = head_importance(bundle, pairs)
    layer, head = 0, 1
    gate = torch.ones((), requires_grad=True)
    dense = network.hf_model.bert.encoder.layer[layer].attention.output.dense  # the library's own name for W^O
    losses = []
    for text in TEXTS:
        ids = torch.tensor([bundle.source_ids(text)[0]])  # [1, S]
        with torch.no_grad():
            decided = network.hf_model(input_ids=ids).logits.argmax(-1)  # [1]: the unmasked model's class
        handle = _gated(dense, head, network.config.n_heads, gate)
        try:
            losses.append(torch.nn.functional.cross_entropy(network.hf_model(input_ids=ids).logits, decided))
        finally:
            handle.remove()
    grads = [abs(float(g)) for g in (torch.autograd.grad(loss, gate)[0] for loss in losses)]
    network.hf_model.zero_grad(set_to_none=True)
    assert importance.raw[ENCODER][layer, head] == pytest.approx(sum(grads) / len(grads), abs=1e-5)
    points = pruning_curve(bundle, importance, pairs, counts=[0])
    assert points[0].scoring.first == "agreement" and points[0].first == 1.0 and 0 < points[0].second <= 1
