"""Direct logit attribution of encoder-only models (model/interventions/logit_attribution.py
``encoder_logit_attribution``): the app's classifiers read their stream linearly (one linear layer on each piece, or
on the pieces' mean), so each prediction's logit splits over the embeddings, the heads, the feed-forward blocks and the
biases, the norms held at the run's own scale.

* The parts sum to the model's own logit (the remainder is rounding) for a post-norm tagger and a pre-norm sentence
  classifier;
* each head's part of the pre-norm classifier equals the test's own computation: that head's slice of the output
  projection's input (a forward pre-hook) through its slice of W^O, through the final LayerNorm's scale held at the
  run's own, averaged over the pieces, dotted with the class's row of the head;
* Hugging Face heads that are not linear in the stream (masked-LM, a pooled sentence classifier) say so.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.interventions.hooked import InterventionError
from model.interventions.logit_attribution import bundle_logit_attribution, encoder_logit_attribution
from model.io import checkpoint
from model.io.shipped import resolve_model
from model.nn.classifier import ClassifierConfig, EncoderClassifier


def test_the_tagger_s_parts_sum_to_each_piece_s_logit():
    bundle = checkpoint.load(resolve_model("tagger"))
    result = bundle_logit_attribution(bundle, "the black cat sees the small dog")
    ids = bundle.source_ids("the black cat sees the small dog")[0]
    with torch.no_grad():
        scores = bundle.model(torch.tensor([ids]))[0]  # [S, C]
    assert result.place == "position" and len(result.logits) == len(ids)
    assert np.allclose(result.logits, scores.max(-1).values.numpy(), atol=1e-5)  # each piece's own top logit
    assert np.abs(result.remainder).max() < 1e-5
    assert result.parts[:2] == ["token embedding", "positions"] and "L2 self H4" in result.parts and "output bias" in result.parts
    assert set(result.target_tokens) <= set(bundle.model.config.class_names)
    assert result.where(2) == "position 3 (“cat”)"


@pytest.fixture(scope="module")
def classifier() -> EncoderClassifier:
    torch.manual_seed(3)
    config = ClassifierConfig(vocab_size=40, n_layers=2, task="sentence", norm_placement="pre", class_names=["a", "b", "c"])
    return EncoderClassifier(config).eval()


def test_a_pre_norm_sentence_classifier_s_head_parts_are_the_test_s_own(classifier):
    ids = [5, 9, 11, 3, 2]
    result = encoder_logit_attribution(classifier, ids, [2])  # its class's logit minus class "c"'s
    assert result.place == "sentence" and result.values.shape[0] == 1 and np.abs(result.remainder).max() < 1e-5
    inputs, final_inputs = {}, []
    handles = [
        layer.self_attention.out_projection.register_forward_pre_hook(lambda _m, args, i=i: inputs.__setitem__(i, args[0]))
        for i, layer in enumerate(classifier.layers)
    ]
    handles.append(classifier.final_norm.register_forward_pre_hook(lambda _m, args: final_inputs.append(args[0])))
    try:
        with torch.no_grad():
            scores = classifier(torch.tensor([ids]))[0]  # [C]
    finally:
        for handle in handles:
            handle.remove()
    chosen = int(scores.argmax())
    assert result.logits[0] == pytest.approx(float(scores[chosen] - scores[2]), abs=1e-5)
    norm, head = classifier.final_norm, classifier.head
    sigma = torch.sqrt(final_inputs[0][0].var(-1, unbiased=False) + norm.eps)[:, None]  # [S, 1] the run's own scale
    direction = head.weight[chosen] - head.weight[2]  # [d_model]
    d_k = classifier.config.d_model // classifier.config.n_heads
    for layer in range(2):
        w_out = classifier.layers[layer].self_attention.out_projection.weight  # [d_model, H * d_k]
        for h in range(classifier.config.n_heads):
            part = inputs[layer][0, :, h * d_k : (h + 1) * d_k] @ w_out[:, h * d_k : (h + 1) * d_k].T  # [S, d_model]
            normed = norm.weight * (part - part.mean(-1, keepdim=True)) / sigma  # [S, d_model]
            expected = float(normed.mean(0) @ direction)
            got = result.values[0, result.parts.index(f"L{layer + 1} self H{h + 1}")]
            assert got == pytest.approx(expected, abs=1e-5), (layer, h)


def test_library_heads_that_are_not_linear_say_so(tiny_bundles):
    with pytest.raises(InterventionError, match="a masked-LM head transforms the stream first"):
        bundle_logit_attribution(tiny_bundles["bert-mlm"], "the cat")
    with pytest.raises(InterventionError, match="through a pooler"):
        bundle_logit_attribution(tiny_bundles["bert-classifier"], "the cat")


def test_a_library_tagger_s_head_parts_are_the_test_s_own_through_the_library_s_norms(tmp_path):
    """BERT with a token-classification head (linear on each piece): each head's part at each piece equals that head's
    slice of its output projection, carried through every LayerNorm after it (the attention's and the feed-forward's of
    its layer and of each later layer) with each norm's scale the run's own (pre-hooks on the library's norms),
    dotted with the predicted tag's row of the classifier; the parts sum to the library's logit."""
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.loading import load_pretrained  # the hf extra's
    from model.pretrained.tiny import build

    bundle = load_pretrained(str(build("bert-tagger", tmp_path / "bert-tagger")))
    text = "the black cat sees the dog"
    result = bundle_logit_attribution(bundle, text)
    ids = torch.tensor([bundle.source_ids(text)[0]])  # [1, S]
    hf = bundle.model.hf_model
    layers = hf.bert.encoder.layer
    norms = [module for layer in layers for module in (layer.attention.output.LayerNorm, layer.output.LayerNorm)]
    inputs, norm_inputs = {}, {}
    handles = [
        layer.attention.output.dense.register_forward_pre_hook(lambda _m, a, i=i: inputs.__setitem__(i, a[0]))
        for i, layer in enumerate(layers)
    ]
    handles += [norm.register_forward_pre_hook(lambda _m, a, i=i: norm_inputs.__setitem__(i, a[0])) for i, norm in enumerate(norms)]
    try:
        with torch.no_grad():
            logits = hf(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0]  # [S, C]
    finally:
        for handle in handles:
            handle.remove()
    assert result.place == "position" and np.allclose(result.logits, logits.max(-1).values.numpy(), atol=1e-5)
    assert np.abs(result.remainder).max() < 1e-5 and result.parts[:3] == ["token embedding", "positions", "token types"]
    chosen = logits.argmax(-1)  # [S]
    direction = hf.classifier.weight[chosen]  # [S, d_model]
    config = bundle.model.config
    d_k = config.d_model // config.n_heads
    for layer in range(config.n_encoder_layers):
        w_out = layers[layer].attention.output.dense.weight  # [d_model, H * d_k]
        for h in range(config.n_heads):
            part = inputs[layer][0, :, h * d_k : (h + 1) * d_k] @ w_out[:, h * d_k : (h + 1) * d_k].T  # [S, d_model]
            for index in range(2 * layer, len(norms)):  # every norm after the head
                sigma = torch.sqrt(norm_inputs[index][0].var(-1, unbiased=False) + norms[index].eps)[:, None]  # [S, 1]
                part = norms[index].weight * (part - part.mean(-1, keepdim=True)) / sigma
            expected = (part * direction).sum(-1).detach().numpy()  # [S]
            got = result.values[:, result.parts.index(f"L{layer + 1} self H{h + 1}")]
            assert np.allclose(got, expected, atol=1e-5), (layer, h)
