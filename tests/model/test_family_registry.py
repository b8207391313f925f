"""The family registry (model/family.py, model/nn/registry.py): each family's options schema names real config
fields, the command line's and the form's values map onto them (the more specific option winning), and reading the
registry imports no PyTorch."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from model.data.corpora import CorpusSpec
from model.errors import UserError
from model.family import Architecture, FamilyError, families, family_named, family_of_config, trainable_family_names
from model.nn.registry import build_network
from model.training.pipeline import TokenizerOptions, prepare
from model.training.presets import BUILTIN_PRESETS
from tests.conftest import tiny_bundle


def test_the_app_trains_three_families_and_each_option_sets_a_config_field():
    assert trainable_family_names()[:3] == ("transformer", "rnn", "classifier")
    for family in families():
        if not family.capabilities.trainable:
            continue
        names = {f.name for f in dataclasses.fields(family.config_class)}
        for option in family.options:
            assert set(option.fields) <= names, (family.name, option.dest)
            if option.choices:
                assert getattr(family.config_class(), option.fields[0]) in option.choices


def test_the_more_specific_option_wins_a_contradiction_is_refused_and_an_inverted_flag_sets_false():
    transformer = family_named("transformer")
    fields = transformer.config_fields({"encoder_layers": 2, "decoder_layers": 5, "layers": 4, "tie_embeddings": True})
    assert fields == {"n_encoder_layers": 2, "n_decoder_layers": 5, "tie_embeddings": False}
    assert transformer.config_fields({"encoder_layers": 3, "layers": 1}) == {"n_encoder_layers": 3, "n_decoder_layers": 1}
    classifier = family_named("classifier")
    assert classifier.config_fields({"encoder_layers": 3}) == {"n_layers": 3}
    assert classifier.config_fields({"encoder_layers": 3, "layers": 3}) == {"n_layers": 3}
    with pytest.raises(UserError, match="--encoder-layers and --layers both set n_layers: give one of them"):
        classifier.config_fields({"encoder_layers": 3, "layers": 1})


def test_every_preset_builds_its_family_and_describes_itself():
    for preset in BUILTIN_PRESETS.values():
        family = family_named(preset.family)
        config = family.build_config(preset.model, 100, 100, labels=("sentence", ["no", "yes"]))
        assert family_of_config(config) is family
        assert build_network(config).parameter_count() > 0
        assert preset.describe().endswith(f"; {preset.minutes:g} min budget")


def test_capabilities_follow_the_architecture():
    for family in families():
        can = family.capabilities
        assert can.architecture.has_encoder == (can.architecture is not Architecture.DECODER_ONLY)
        if can.beam_search:  # a decoder searches (a decoder-only model from its prompt)
            assert can.architecture.has_decoder


def test_an_unknown_family_is_a_clear_error():
    with pytest.raises(FamilyError, match="unknown model family 'lstm'; choose one of transformer, rnn, classifier"):
        family_named("lstm")


def test_reading_the_registry_imports_no_pytorch():
    code = "import sys, model.nn.registry, model.training.presets; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    "family, corpus, layers",
    [
        ("transformer", "copy", "2 encoder, 2 decoder"),
        ("rnn", "copy", "bidirectional GRU encoder, GRU decoder"),
        ("classifier", "toy-fr-tags", "2 encoder"),
    ],
)
def test_the_info_panel_rows_of_every_family(family, corpus, layers):
    """File ▸ Model info… read another family's config fields (a Transformer has no ``cell``) and failed for all but
    the RNN: each family's rows come from its own config now."""
    if family == "classifier":
        small = dict(n_layers=2, d_model=32, n_heads=4, d_ff=64, dropout=0.0)
        bundle, _ = prepare(CorpusSpec(corpus, size=200, seed=1), TokenizerOptions(vocab_size=200), small, family=family)
    else:
        bundle, _ = tiny_bundle(corpus, size=200, family=family)
    rows = dict(bundle.info())
    assert rows["Layers"] == layers
    assert rows["Family"] == f"{bundle.family.title} ({family}, trained by this app)"
    expected_positions = "none: the recurrence carries the order" if family == "rnn" else "sinusoidal"
    assert rows["Positions"] == expected_positions
    assert ("Classes" in rows) == (family == "classifier")
