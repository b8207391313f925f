"""The size limits a model file's config is checked against before anything is built, for every family's config: its
own saved fields (an RNN's d_hidden, a classifier's class names) and the sizes every config answers to (an RNN's
d_model is its state's width), each refused in one line naming the size."""

from __future__ import annotations

import json

import pytest

from model.data.corpora import CorpusSpec
from model.io import checkpoint
from model.io.checkpoint import CheckpointError
from model.training.pipeline import TokenizerOptions, prepare
from tests.conftest import tiny_bundle
from tests.model.io.test_model_files import split, with_config


def refused(data: bytes, tmp_path) -> str:
    path = tmp_path / "crafted.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


@pytest.fixture(scope="module")
def rnn_file() -> bytes:
    bundle, _ = tiny_bundle("copy", size=200, family="rnn")
    return checkpoint.to_bytes(bundle)


def test_an_rnn_s_own_sizes_and_its_derived_width_are_checked(rnn_file, tmp_path):
    assert "d_embed (100,000) is beyond what this app can load (8,192)" in refused(with_config(rnn_file, d_embed=100_000), tmp_path)
    # d_hidden 10,000 is within its own limit (16,384) but is the RNN's d_model, beyond 8,192
    assert "d_model (10,000) is beyond what this app can load (8,192)" in refused(with_config(rnn_file, d_hidden=10_000), tmp_path)
    assert checkpoint.from_bytes(rnn_file).family.name == "rnn"  # the file as saved loads


def test_a_classifier_s_classes_are_counted(tmp_path):
    bundle, _ = prepare(
        CorpusSpec("toy-fr-negation", size=100, seed=1),
        TokenizerOptions(vocab_size=100),
        dict(n_layers=1, d_model=16, n_heads=2, d_ff=32, dropout=0.0),
        family="classifier",
    )
    data = checkpoint.to_bytes(bundle)
    names = json.loads(split(data)[0]["__metadata__"]["config"])["class_names"]
    many = with_config(data, class_names=[f"class {i}" for i in range(100_001)])
    assert "class_names (100,001) is beyond what this app can load (100,000)" in refused(many, tmp_path)
    assert checkpoint.from_bytes(data).config.class_names == names
