"""The model families this app trains and saves, by the name a checkpoint records: each one's config class
and network class, so that checkpoints, the training pipeline and the command line build any of them the
same way.

- "transformer": the encoder-decoder Transformer of the paper (model/nn/transformer.py);
- "rnn": an RNN encoder-decoder with Bahdanau or Luong attention (model/nn/rnn.py);
- "classifier": seed 004's encoder-only Transformer, a tagger or sentence classifier (model/nn/classifier.py).
"""

from __future__ import annotations

from typing import Any

from model.errors import UserError
from model.family import FAMILIES
from model.nn.classifier import ClassifierConfig, EncoderClassifier
from model.nn.config import TransformerConfig
from model.nn.rnn import RNNAttention
from model.nn.rnn_config import RNNConfig
from model.nn.transformer import Transformer

NETWORKS: dict[str, tuple[type, type]] = {
    "transformer": (TransformerConfig, Transformer),
    "rnn": (RNNConfig, RNNAttention),
    "classifier": (ClassifierConfig, EncoderClassifier),
}
# What each family learns from (model/data/corpora: a corpus's task).
FAMILY_TASKS = {"transformer": ("translation",), "rnn": ("translation",), "classifier": ("tagging", "classification")}
assert tuple(NETWORKS) == FAMILIES, "model/family.py names the families a checkpoint may hold"


class FamilyError(UserError):
    """A model family this version does not know."""


def config_class(family: str) -> Any:
    if family not in NETWORKS:
        raise FamilyError(f"unknown model family {family!r}; choose one of {', '.join(NETWORKS)}")
    return NETWORKS[family][0]


def config_from_dict(family: str, data: dict) -> Any:
    """The family's config from its saved fields (a ConfigError when they cannot describe a working model)."""
    return config_class(family).from_dict(data)


def build_network(config: Any) -> Any:
    """An untrained network of the family the config belongs to."""
    for config_type, network_type in NETWORKS.values():
        if isinstance(config, config_type):
            return network_type(config)
    raise FamilyError(f"no model family has a config of type {type(config).__name__}")
