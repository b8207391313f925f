"""Activation and attribution patching (model/interventions/patching.py), by their known answers:

* patching every component that carries the source (the memory, or the last encoder layer at every position, or every
  decoder head and feed-forward block) into the corrupted run gives the clean logits, and patching nothing the
  corrupted ones;
* in the grids: the embedding of the one changed source piece restores everything (1, and 0 elsewhere); the decoder's
  last residual at the step restores everything and at earlier positions nothing; what reads only the decoder's inputs
  (its embeddings, its first layer's self-attention heads), the same in both runs, restores nothing; noising mirrors it;
* a batched grid cell equals the same patch run alone; the two reference metrics are the runs' own logit differences;
* attribution patching equals exact patching where the metric is linear in the activation (a post-norm model's last
  decoder residual: no final norm after it) and where the activation does not matter;
* unequal piece counts, unknown directions and methods, and a step the output does not have are refused in one line;
* on the shipped default model, "the cat sees the dog" / "the cats see the dog" differ first at "le" / "les".
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.interventions.hooked import InterventionError, Patch, run_hooked
from model.interventions.patching import activation_patching, patch_grids
from model.interventions.patching_setup import prepare_patching
from tests.model.interventions.models import tiny

CLEAN, CORRUPTED = [5, 6, 7, 8, 9, 3], [5, 6, 11, 8, 9, 3]  # piece 2 differs
TARGET = [13, 14, 15, 16, 3]
STEP = 2


def setup_for(norm: str):
    model = tiny(norm, seed=6)
    return model, prepare_patching(model, CLEAN, CORRUPTED, step=STEP, target_ids=TARGET, compared_id=17)


def logits_with(model, setup, patches) -> torch.Tensor:
    with torch.no_grad():
        return run_hooked(model, setup.corrupted_source, setup.target_inputs, patches=patches).logits(model, STEP)  # [1, V]


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_patching_everything_gives_the_clean_logits_and_nothing_the_corrupted(norm):
    model, setup = setup_for(norm)
    clean = setup.clean_activations
    with torch.no_grad():
        clean_logits = run_hooked(model, setup.clean_source, setup.target_inputs).logits(model, STEP)
    everything_decoded = [
        Patch(name, clean[name]) for name in clean if name.startswith("decoder.") and name.endswith(("head_out", "mlp_out"))
    ]
    for patches in ([Patch("encoder.1.resid_post", clean["encoder.1.resid_post"])], everything_decoded):
        torch.testing.assert_close(logits_with(model, setup, patches), clean_logits, atol=1e-5, rtol=0)
    corrupted_logits = logits_with(model, setup, [])
    torch.testing.assert_close(corrupted_logits[0, 15] - corrupted_logits[0, 17], torch.tensor(setup.corrupted_metric))
    assert setup.clean_metric == pytest.approx(float(clean_logits[0, 15] - clean_logits[0, 17]), abs=1e-5)
    assert abs(setup.clean_metric - setup.corrupted_metric) > 0.1  # a real difference to restore


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_grids_known_answers_denoising_and_noising(norm):
    _, setup = setup_for(norm)
    for direction, restored in (("denoising", 1.0), ("noising", 0.0)):
        grids = patch_grids(setup, "exact", direction).grids
        untouched = 1.0 - restored  # a patch that changes nothing leaves the base run's value
        embeddings = grids["encoder residual"].values[0]  # [S]
        np.testing.assert_allclose(embeddings, [untouched, untouched, restored, untouched, untouched, untouched], atol=1e-4)
        decoder_last = grids["decoder residual"].values[-1]  # [step + 1]
        np.testing.assert_allclose(decoder_last, [untouched, untouched, restored], atol=1e-4)
        np.testing.assert_allclose(grids["decoder residual"].values[0], untouched, atol=1e-4)
        np.testing.assert_allclose(grids["decoder heads"].values[0], untouched, atol=1e-4)  # reads the inputs alone
        assert grids["encoder heads"].values.shape == (2, 4) and grids["cross heads"].rows == ["L1", "L2"]
        assert grids["encoder residual"].columns == ["5", "6", "7/11", "8", "9", "3"]
        assert grids["decoder residual"].columns == ["2", "13", "14"] and grids["decoder feed-forward"].values.shape == (2, 1)


def test_a_batched_cell_equals_its_patch_run_alone():
    model, setup = setup_for("pre")
    result = patch_grids(setup, "exact", "denoising")
    name = "decoder.1.cross.head_out"
    alone = logits_with(model, setup, [Patch(name, setup.clean_activations[name], heads=(2,))])  # [1, V]
    metric = float(alone[0, setup.clean_id] - alone[0, setup.compared_id])
    expected = (metric - setup.corrupted_metric) / (setup.clean_metric - setup.corrupted_metric)
    assert result.grids["cross heads"].values[1, 2] == pytest.approx(expected, abs=1e-5)
    assert result.grids["cross heads"].metrics[1, 2] == pytest.approx(metric, abs=1e-5)
    name = "encoder.0.resid_post"
    alone = logits_with(model, setup, [Patch(name, setup.clean_activations[name], positions=(4,))])
    metric = float(alone[0, setup.clean_id] - alone[0, setup.compared_id])
    assert result.grids["encoder residual"].metrics[1, 4] == pytest.approx(metric, abs=1e-5)


@pytest.mark.parametrize("direction", ["denoising", "noising"])
def test_attribution_patching_is_exact_where_the_metric_is_linear(direction):
    _, setup = setup_for("post")  # no final norm: the logits are linear in the last decoder layer's output
    exact = patch_grids(setup, "exact", direction).grids
    estimated = patch_grids(setup, "attribution", direction).grids
    np.testing.assert_allclose(estimated["decoder residual"].values[-1], exact["decoder residual"].values[-1], atol=1e-4)
    np.testing.assert_allclose(estimated["decoder heads"].values[0], exact["decoder heads"].values[0], atol=1e-4)
    assert not np.allclose(estimated["encoder residual"].values, exact["encoder residual"].values, atol=1e-2)  # a preview


def test_bad_pairs_and_options_are_refused_in_one_line():
    model, setup = setup_for("post")
    with pytest.raises(InterventionError, match="the clean source has 6 pieces and the corrupted one 5"):
        prepare_patching(model, CLEAN, [5, 6, 8, 9, 3], step=0, target_ids=TARGET)
    with pytest.raises(InterventionError, match="step 9 is not one of the clean translation's 5 steps"):
        prepare_patching(model, CLEAN, CORRUPTED, step=8, target_ids=TARGET, compared_id=17)
    with pytest.raises(InterventionError, match="the direction is one of denoising, noising"):
        patch_grids(setup, "exact", "sideways")
    with pytest.raises(InterventionError, match="the method is one of exact, attribution"):
        patch_grids(setup, "guess")


def test_number_on_the_default_model_shows_at_the_article(default_bundle):
    result = activation_patching(default_bundle, "the cat sees the dog", "the cats see the dog")
    labels = result.labels
    assert (result.step, labels.clean_token, labels.compared_token, labels.target) == (0, "▁le", "▁les", ["<s>"])
    assert labels.clean[1:3] == ["▁cat", "▁sees"] and labels.corrupted[1:3] == ["▁cats", "▁see"]
    embeddings = result.grids["encoder residual"].values[0]
    assert embeddings[0] == pytest.approx(0.0, abs=1e-4) and embeddings[1] > 0.5  # "cat" carries the number
    assert result.grids["decoder residual"].values[-1, 0] == pytest.approx(1.0, abs=1e-4)
