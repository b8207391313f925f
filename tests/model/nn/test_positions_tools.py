"""Every tool on a Transformer of each positional scheme that works inside self-attention (issue 42): they run the
model's own pass, so they need no change; known answers where there is one:

* patching everything restores the clean run (1.0), patching nothing keeps the corrupted one (0.0);
* the logit lens's last reading is the model's own prediction;
* logit attribution's parts sum to the logit (no "positions" part: nothing is added to the stream);
* every contribution measure gives shares whose rows sum to at most 1, DecoderLens reads every encoder layer.
"""

from __future__ import annotations

import numpy as np
import pytest

from model.attribution.measures import MEASURES, compute_measure, unsupported
from model.decoding.stepper import Stepper
from model.interventions.decoder_lens import bundle_decoder_lens
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import activation_patching
from tests.conftest import tiny_bundle

TEXT, CORRUPTED = "a b c d", "a b d d"


@pytest.fixture(scope="module", params=["rope", "alibi", "relative", "none"])
def bundle(request):
    return tiny_bundle("copy", size=200, steps=40, positional_encoding=request.param)[0]


def test_patching_everything_restores_the_clean_run(bundle):
    result = activation_patching(bundle, TEXT, CORRUPTED)
    residual = next(grid for component, grid in result.grids.items() if "resid" in str(component) and "encoder" in str(component))
    assert np.isfinite(residual.values).all()
    first_layer = residual.values[0]  # the stream entering layer 1, one position at a time: the differing one restores it
    assert np.isclose(first_layer.max(), 1.0, atol=1e-4) and np.isclose(np.sort(first_layer)[0], 0.0, atol=1e-4)


def test_the_lens_attribution_decoder_lens_and_every_measure_run(bundle):
    lens = bundle_logit_lens(bundle, TEXT)
    stepper = Stepper(bundle, TEXT)
    stepper.run()
    assert lens.chosen_ids.tolist() == stepper.target_ids()
    assert (lens.chosen_ranks[-1] == 0).all()  # the last reading is the model's output: its choice ranks first
    attribution = bundle_logit_attribution(bundle, TEXT)
    assert np.abs(attribution.remainder).max() < 1e-4 and "positions" not in attribution.parts
    assert len(bundle_decoder_lens(bundle, TEXT).layers) == bundle.config.n_encoder_layers
    source, chosen = list(stepper.source_ids), stepper.target_ids()
    for name in MEASURES:
        if unsupported(bundle.model, name):
            continue
        result = compute_measure(bundle.model, source, chosen, name, max_points=9)
        for shares in result.shares.values():
            assert np.isfinite(shares).all() and (shares.sum(-1) <= 1 + 1e-4).all(), name
