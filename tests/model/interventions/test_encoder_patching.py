"""Activation patching of encoder-only models (model/interventions/patching_setup.py ``_prepare_text_patching``): two
texts read by the model's own head, the metric the logit difference of its prediction at one place.

* Known answers on the app's tagger (post-norm, a head per piece): the only piece that differs, patched as it enters
  (the embeddings), restores everything; the last layer's output at the compared piece restores everything and at any
  other piece nothing; the first-order estimate is exact where the metric is linear in the activation (the last
  layer's output, read by the linear head).
* Against the library's own modules: on BERT with a sequence-classification head (its pooler and classifier the
  library's) and on BERT, DistilBERT and RoBERTa with their masked-LM heads, each head's exact cell equals the test's
  own patch, a forward pre-hook on the layer's output projection replacing that head's slice of its input with the
  clean run's, within 1e-5.
* Bad input says why in one line.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.interventions.hooked import InterventionError
from model.interventions.patching import Component, activation_patching, attribution_patching, patch_grids
from model.interventions.patching_setup import prepare_bundle_patching
from model.io import checkpoint
from model.io.shipped import resolve_model

CLEAN, CORRUPTED = "the cat sees the dog", "the cat red the dog"  # "sees" (VERB) against "red" (ADJ)


@pytest.fixture(scope="module")
def tagger():
    return checkpoint.load(resolve_model("tagger"))


def test_the_tagger_s_known_answers(tagger):
    result = activation_patching(tagger, CLEAN, CORRUPTED)
    assert result.labels.place == "position" and result.step == 2 and result.labels.names
    assert (result.labels.clean_token, result.labels.compared_token) == ("VERB", "ADJ")
    assert result.labels.at(result.step) == "at position 3" and result.clean_metric > 0 > result.corrupted_metric
    residual = result.grids[Component.ENCODER_RESIDUAL]
    assert residual.rows == ["embeddings", "after L1", "after L2"] and residual.columns[2] == "▁sees/▁red"
    assert residual.values[0, 2] == pytest.approx(1.0, abs=1e-5)  # the one piece that differs, as it enters
    assert residual.values[-1, 2] == pytest.approx(1.0, abs=1e-5)  # what the head reads at the compared piece
    others = np.delete(residual.values[-1], 2)
    assert np.allclose(others, 0.0, atol=1e-5)  # a tagger's head reads its own piece only
    assert set(result.grids) == {Component.ENCODER_HEADS, Component.ENCODER_RESIDUAL, Component.ENCODER_FEED_FORWARD}
    estimate = attribution_patching(tagger, CLEAN, CORRUPTED).grids[Component.ENCODER_RESIDUAL]
    assert np.allclose(estimate.values[-1], residual.values[-1], atol=1e-4)  # linear there: the estimate is exact


def test_bad_pairs_say_why_in_one_line(tagger):
    with pytest.raises(InterventionError, match="predicts the same tag for both texts at every piece"):
        activation_patching(tagger, CLEAN, CLEAN)
    with pytest.raises(InterventionError, match="position 9 is not one of the text's 6 pieces"):
        activation_patching(tagger, CLEAN, CORRUPTED, step=8)
    with pytest.raises(InterventionError, match="both texts get the same tag at position 1"):
        activation_patching(tagger, CLEAN, CORRUPTED, step=0)


def _projection(network, layer: int) -> torch.nn.Module:
    """The library's output projection of encoder layer ``layer`` (BERT's ``attention.output.dense``, DistilBERT's
    ``attention.out_lin``), by the layout's own module names."""
    return network.layers()[layer].get_submodule(network.modules.projection)


def _projection_patch(network, source: torch.Tensor, layer: int, head: int, donor: torch.Tensor) -> torch.Tensor:
    """The library's model on ``source`` with head ``head``'s slice of layer ``layer``'s output-projection input
    replaced by ``donor``'s (the clean run's, [1, S, d_model]) -> its logits [1, (S,) C]."""
    d_k = network.config.d_model // network.config.n_heads

    def replace(_module, args):
        patched = args[0].clone()
        patched[..., head * d_k : (head + 1) * d_k] = donor[..., head * d_k : (head + 1) * d_k]
        return (patched, *args[1:])

    handle = _projection(network, layer).register_forward_pre_hook(replace)
    try:
        with torch.no_grad():
            return network.hf_model(input_ids=source, attention_mask=torch.ones_like(source)).logits
    finally:
        handle.remove()


def _projection_input(network, source: torch.Tensor, layer: int) -> torch.Tensor:
    seen = []
    handle = _projection(network, layer).register_forward_pre_hook(lambda _module, args: seen.append(args[0]))
    try:
        with torch.no_grad():
            network.hf_model(input_ids=source, attention_mask=torch.ones_like(source))
    finally:
        handle.remove()
    return seen[0]


@pytest.fixture(scope="module")
def encoders(tiny_bundles, tmp_path_factory) -> dict:
    from model.pretrained.loading import load_pretrained  # the hf extra's
    from model.pretrained.tiny import build

    root = tmp_path_factory.mktemp("encoders")
    built = {layout: load_pretrained(str(build(layout, root / layout))) for layout in ("distilbert", "roberta")}
    return {"bert-mlm": tiny_bundles["bert-mlm"], "bert-classifier": tiny_bundles["bert-classifier"], **built}


def _pair(bundle) -> tuple[str, str, int]:
    """A clean and a corrupted text of as many pieces under ``bundle``'s tokenizer, and the first piece that differs."""
    clean = "the cat sees the dog"
    clean_ids = bundle.source_ids(clean)[0]
    for word in ("and", "dog", "red", "small", "eats", "house"):
        corrupted = clean.replace("sees", word)
        ids = bundle.source_ids(corrupted)[0]
        if len(ids) == len(clean_ids):
            return clean, corrupted, next(i for i, (a, b) in enumerate(zip(clean_ids, ids)) if a != b)
    raise AssertionError("no pair of equal length")


@pytest.mark.parametrize("layout", ["bert-classifier", "bert-mlm", "distilbert", "roberta"])
def test_each_head_cell_is_the_library_s_own_patch(encoders, layout):
    """Every head's exact cell (denoising) equals the test's own patch of that head's slice of the library's output
    projection, the library's own head reading it: a sentence classifier's class, a masked-LM head's word at the first
    piece that differs (compared with the next class or word, so that a random model's two texts need not differ)."""
    bundle = encoders[layout]
    network = bundle.model
    clean, corrupted, differing = _pair(bundle)
    clean_ids, corrupted_ids = (torch.tensor([bundle.source_ids(text)[0]]) for text in (clean, corrupted))  # [1, S]
    with torch.no_grad():
        logits = network.hf_model(input_ids=clean_ids, attention_mask=torch.ones_like(clean_ids)).logits[0]  # [(S,) C]
    per_piece = logits.dim() == 2
    place = differing if per_piece else 0
    clean_choice = int((logits[place] if per_piece else logits).argmax())
    compared = (clean_choice + 1) % logits.shape[-1]
    result = patch_grids(prepare_bundle_patching(bundle, clean, corrupted, place if per_piece else None, compared))
    assert result.labels.place == ("position" if per_piece else "sentence") and result.step == place
    assert (result.clean_id, result.compared_id) == (clean_choice, compared)
    heads = result.grids[Component.ENCODER_HEADS]
    for layer in range(network.config.n_encoder_layers):
        donor = _projection_input(network, clean_ids, layer)  # [1, S, H * d_k]
        for head in range(network.config.n_heads):
            patched = _projection_patch(network, corrupted_ids, layer, head, donor)[0]  # [(S,) C]
            at = patched[place] if per_piece else patched
            metric = float(at[result.clean_id] - at[result.compared_id])
            # float32 logits of a few units: 1e-5 of the value as well as 1e-5 absolute (the sums' order follows the
            # thread count, 1.1e-5 apart on a 4.5 logit difference under two test workers)
            assert heads.metrics[layer, head] == pytest.approx(metric, rel=1e-5, abs=1e-5), (layer, head)
