"""The family protocol (model/family.py) and how the registry fills: the app's own families are there from the first
question asked of ``model.family`` (no import of ``model.nn`` first, and still no PyTorch), a family's config takes
its own options only, and every trainable network offers what the trainer calls (checked statically for the app's
own families by model/training/family_conformance.py; here at run time, the test-defined toy family included)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from model.errors import UserError
from model.family import family_named, trainable_family_names
from model.network import DecodingNetwork, LabellingNetwork, Network, TeacherForcedNetwork, TrainableNetwork
from model.nn.registry import build_network
from model.training.step import batch_logits
from tests.toy_family import TOY_NAME, toy_bundle, toy_family_registered


def _fresh_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_registry_loads_the_apps_families_when_first_asked_without_pytorch():
    """``family_named("transformer")`` right after ``import model.family`` failed with an empty list of choices: the
    families registered only as a side effect of importing ``model.nn``."""
    code = (
        "import sys, model.family as f\n"
        "print(f.family_named('transformer').title, '|', ','.join(f.trainable_family_names()), '|', 'torch' in sys.modules)"
    )
    assert _fresh_python(code) == "encoder-decoder Transformer | transformer,rnn,classifier | False"


@pytest.mark.parametrize("question", ["families()", "trainable_family_names()"])
def test_every_question_fills_the_registry_first(question):
    code = f"import sys\nfrom model.family import *\nprint(len({question}), 'model.nn.registry' in sys.modules)"
    assert _fresh_python(code) == "3 True"


def test_a_family_registered_first_comes_after_the_apps_own():
    code = (
        "import model.family as f\n"
        "f.register(f.Family('mine', 'mine', dict, 'x.Y', f.Capabilities(f.Architecture.ENCODER_ONLY, (), f.Positions.NONE,"
        " trainable=True)))\n"
        "print(','.join(f.trainable_family_names()))"
    )
    assert _fresh_python(code) == "transformer,rnn,classifier,mine"


def test_a_config_takes_its_familys_own_fields_only():
    rnn = family_named("rnn")
    with pytest.raises(UserError, match=r"the rnn family's model has no n_encoder_layers; its options set .*d_hidden"):
        rnn.build_config({"n_encoder_layers": 2, "d_hidden": 32}, 50, 50)
    assert rnn.build_config({"d_hidden": 32}, 50, 50).to_dict()["d_hidden"] == 32
    assert "n_layers" in family_named("classifier").option_fields() and "cell" in rnn.option_fields()


SMALL = {
    "transformer": dict(n_encoder_layers=1, n_decoder_layers=1, d_model=16, n_heads=2, d_ff=32),
    "rnn": dict(d_embed=16, d_hidden=16),
    "classifier": dict(n_layers=1, d_model=16, n_heads=2, d_ff=32),
}


@pytest.mark.parametrize("name", ["transformer", "rnn", "classifier", TOY_NAME])
def test_every_trainable_network_is_what_the_trainer_drives(name):
    with toy_family_registered():
        family = family_named(name)
        if name == TOY_NAME:
            network = toy_bundle().model
        else:
            network = build_network(family.build_config(SMALL[name], 30, 30, labels=("tagging", ["A", "B"])))
        assert name in trainable_family_names()
        assert isinstance(network, Network) and isinstance(network, TrainableNetwork)
        labels = family.capabilities.labels
        assert isinstance(network, LabellingNetwork if labels else TeacherForcedNetwork)
        assert isinstance(network, DecodingNetwork) == family.capabilities.architecture.has_decoder
        source = torch.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])  # [B, S]
        target = torch.tensor([[1, 2, 1, 0], [2, 1, 0, 0]]) if labels else torch.tensor([[2, 5, 6, 7, 3], [2, 8, 3, 0, 0]])
        scores, gold = batch_logits(network, source, target)  # what a training step computes
        assert scores.shape[0] == gold.shape[0] == (5 if labels else 6) and torch.isfinite(scores).all()
