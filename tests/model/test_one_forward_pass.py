"""Every tool reads the model's own forward pass, never a second copy of it (issue 40).

A change to one sublayer of the app's Transformer is made in two ways: its feed-forward module in encoder layer 1 is
swapped for one whose output is doubled (a change to the module's code, ``forward``), and, in a second copy, the same
change is made in the weights (W2 and b2 doubled). A tool that runs the model's own ``forward`` gives the same readings
for both, and readings that differ from the unchanged model's; a tool that kept a rewritten pass (reading the weights
through its own code) would show the patched model as if nothing had changed. Checked for the contribution measures
(norm-based, ALTI, ALTI+, value zeroing, gradient × input, attention × gradient), the neuron view's vectors, the corpus
index's vectors and the logit lens.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
import torch

from model.attribution.measures import compute_measure
from model.corpus.extract import read_batch
from model.corpus.layout import Layer
from model.interventions.logit_lens import logit_lens
from model.kinds import AttentionKind
from model.neuron.vectors import sentence_vectors
from model.nn.masking import Head
from model.nn.transformer import FeedForward, Transformer

FACTOR = 2.0
SOURCE = [5, 6, 7, 8, 9, 3]
CHOSEN = [10, 11, 12, 13, 3]


class DoubledFeedForward(FeedForward):
    """The feed-forward sublayer with its output doubled in code (what a change to the model's forward is)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return FACTOR * super().forward(x)


def _variants(model: Transformer) -> dict[str, Transformer]:
    """The model unchanged, with encoder layer 1's feed-forward doubled in code, and the same change in its weights."""
    patched = copy.deepcopy(model)
    patched.encoder_layers[0].feed_forward.__class__ = DoubledFeedForward
    weighted = copy.deepcopy(model)
    with torch.no_grad():
        contract = weighted.encoder_layers[0].feed_forward.contract
        contract.weight.mul_(FACTOR)
        contract.bias.mul_(FACTOR)
    return {"plain": model, "patched": patched, "weighted": weighted}


def _measure(name: str) -> Callable:
    return lambda subject, model: compute_measure(model, SOURCE, CHOSEN, name).values


def _neuron(subject, model) -> dict:
    vectors = sentence_vectors(model, SOURCE, CHOSEN)
    return {f"{kind.value}.{part}": getattr(vectors.of(kind), part) for kind in vectors.kinds for part in ("queries", "keys")}


def _corpus(subject, model) -> dict:
    pairs = subject.pairs
    own = dataclasses.replace(subject.bundle, model=model)
    heads = [Head(kind, 1, 0) for kind in AttentionKind]
    return read_batch(own, pairs, [Layer("encoder", 2), Layer("decoder", 1)], heads).arrays


def _logit_lens(subject, model) -> dict:
    found = logit_lens(model, SOURCE, CHOSEN)
    return {"chosen": found.chosen_probabilities}


TOOLS = {
    **{f"measure {name}": _measure(name) for name in ("norm", "alti", "alti+", "value-zeroing", "grad-input", "attn-grad")},
    "neuron view": _neuron,
    "corpus index": _corpus,
    "logit lens": _logit_lens,
}


@dataclasses.dataclass
class Subject:
    bundle: object
    pairs: list


@pytest.fixture(scope="module")
def subject(toy_fr_bundle):
    bundle, splits = toy_fr_bundle
    return Subject(bundle, list(splits.test[:3]))


def _arrays(readings: dict) -> dict[str, np.ndarray]:
    return {str(key): np.asarray(value, dtype=np.float64) for key, value in readings.items()}


@pytest.mark.parametrize("tool", list(TOOLS))
def test_a_change_to_one_sublayer_changes_every_tools_reading(subject, tool):
    read = TOOLS[tool]
    readings = {label: _arrays(read(subject, model)) for label, model in _variants(subject.bundle.model).items()}
    plain, patched, weighted = readings["plain"], readings["patched"], readings["weighted"]
    assert set(patched) == set(weighted) == set(plain) and patched
    for key in patched:
        np.testing.assert_allclose(patched[key], weighted[key], rtol=1e-4, atol=1e-5, err_msg=f"{tool}: {key}")
    moved = max(float(np.nanmax(np.abs(patched[key] - plain[key]))) for key in patched if patched[key].shape == plain[key].shape)
    assert moved > 1e-3, f"{tool} did not see the change"
