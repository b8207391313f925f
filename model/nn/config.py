"""The one configuration of an encoder-decoder Transformer, with the reason for each field.

A config is plain data: it is saved inside every checkpoint as JSON and rebuilt from it, so every
field must be a JSON-friendly scalar.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from model.errors import UserError

NORM_PLACEMENTS = ("post", "pre")
POSITIONAL_ENCODINGS = ("sinusoidal", "learned")  # the absolute tables (the encoder-only classifier takes these)
# The Transformer's schemes (model/nn/positions.py registers one class each, in this order)
TRANSFORMER_POSITIONS = (*POSITIONAL_ENCODINGS, "rope", "alibi", "relative", "none")


class ConfigError(UserError):
    """A configuration that cannot describe a working model."""


def check_whole_numbers(config, names: tuple[str, ...]) -> None:
    """Each named field is a positive whole number (a ConfigError naming the first that is not)."""
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{name} must be a positive whole number, got {value!r}")


def check_special_ids(config, vocabulary: int) -> None:
    """Padding, BOS and EOS are piece ids of a vocabulary of ``vocabulary`` pieces."""
    for name in ("pad_id", "bos_id", "eos_id"):
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < vocabulary:
            raise ConfigError(f"{name} must be a piece id of the vocabulary (0 to {vocabulary - 1}), got {value!r}")


def check_dropout(value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ConfigError(f"dropout must be a number, got {value!r}")
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"dropout must be in [0, 1), got {value}")


def check_sequences(config) -> None:
    """A joint vocabulary is one size for both sides, and a sequence has room for BOS and EOS."""
    if config.joint_vocab and config.source_vocab_size != config.target_vocab_size:
        raise ConfigError("a joint vocabulary needs equal source and target vocabulary sizes")
    if config.max_len < 2:
        raise ConfigError("max_len must leave room for BOS and EOS")


def config_fields(cls, data) -> dict:
    """A saved config's fields, refused when it is not a JSON object or names a field ``cls`` does not have."""
    if not isinstance(data, dict):
        raise ConfigError(f"a config must be a JSON object, got {type(data).__name__}")
    unknown = set(data) - {f.name for f in fields(cls)}
    if unknown:
        raise ConfigError(f"unknown config fields: {', '.join(sorted(unknown))}")
    return data


def check_heads(d_model: int, n_heads: int) -> None:
    """Each head gets d_model / n_heads dimensions, so the heads must divide d_model."""
    if d_model % n_heads:
        raise ConfigError(f"d_model ({d_model}) must be divisible by the number of heads ({n_heads}): a multiple of it")


@dataclass
class TransformerConfig:
    source_vocab_size: int = 1000  # pieces of the source tokenizer (pad/unk/bos/eos included)
    target_vocab_size: int = 1000  # pieces of the target tokenizer; equal to the source when joint
    n_encoder_layers: int = 3  # the paper uses 6; small models train in minutes on a CPU
    n_decoder_layers: int = 3
    d_model: int = 128  # width of every residual stream and embedding
    n_heads: int = 4  # d_model must split evenly into heads of d_k = d_model / n_heads
    d_ff: int = 512  # inner width of the position-wise feed-forward network (paper: 4 x d_model)
    dropout: float = 0.1  # on sublayer outputs and on embeddings + positions, as in the paper
    max_len: int = 128  # longest sequence (in pieces, BOS/EOS included) the positions cover
    norm_placement: str = "post"  # "post": LayerNorm(x + sublayer(x)) as in the paper; "pre": x + sublayer(LayerNorm(x))
    # "sinusoidal" (fixed, the paper), "learned" (a table), or inside self-attention: "rope", "alibi", "relative" (T5's
    # bias), "none" (model/nn/positions.py)
    positional_encoding: str = "sinusoidal"
    # Ruoss et al. (ACL 2023): in training, a sequence's positions are a sorted random draw from 0..max_len − 1 (every
    # row of a table is trained), read in order 0..L − 1 afterwards; a table's schemes only
    randomised_positions: bool = False
    tie_embeddings: bool = True  # share source, target and output matrices when the vocabulary is joint
    joint_vocab: bool = True  # one tokenizer for both languages (needed to share the source embedding)
    pad_id: int = 0  # padding piece: never attended to and never predicted
    bos_id: int = 2  # begins every target sequence
    eos_id: int = 3  # ends every sequence

    def __post_init__(self) -> None:
        self.validate()

    @property
    def d_k(self) -> int:
        """Width of one attention head."""
        return self.d_model // self.n_heads

    def validate(self) -> None:
        positive = (
            "source_vocab_size",
            "target_vocab_size",
            "n_encoder_layers",
            "n_decoder_layers",
            "d_model",
            "n_heads",
            "d_ff",
            "max_len",
        )
        check_whole_numbers(self, positive)
        for name in ("tie_embeddings", "joint_vocab", "randomised_positions"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        check_dropout(self.dropout)
        check_special_ids(self, min(self.source_vocab_size, self.target_vocab_size))
        check_heads(self.d_model, self.n_heads)
        if self.positional_encoding == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"sinusoidal positions need an even d_model, got {self.d_model}")
        if self.norm_placement not in NORM_PLACEMENTS:
            raise ConfigError(f"norm_placement must be one of {NORM_PLACEMENTS}, got {self.norm_placement!r}")
        if self.positional_encoding not in TRANSFORMER_POSITIONS:
            raise ConfigError(f"positional_encoding must be one of {TRANSFORMER_POSITIONS}, got {self.positional_encoding!r}")
        if self.randomised_positions and self.positional_encoding not in POSITIONAL_ENCODINGS:
            raise ConfigError(
                f"randomised positions draw rows of a positional table: sinusoidal or learned, not {self.positional_encoding}"
            )
        if self.positional_encoding == "rope" and self.d_k % 2:
            raise ConfigError(f"rotary positions turn pairs of a head's dimensions: d_model / heads must be even, got {self.d_k}")
        check_sequences(self)

    def to_dict(self) -> dict:
        """Its fields as JSON values; ``randomised_positions`` only when set, so that the files written before the field
        existed (a model and the timeline recorded with it, which must match) read the same."""
        fields_ = asdict(self)
        if not self.randomised_positions:
            del fields_["randomised_positions"]
        return fields_

    @classmethod
    def from_dict(cls, data: dict) -> TransformerConfig:
        return cls(**config_fields(cls, data))

    def layer_summary(self) -> str:
        """The info panel's line on its layers."""
        return f"{self.n_encoder_layers} encoder, {self.n_decoder_layers} decoder"

    def describe(self) -> str:
        """One line for status bars and logs."""
        return (
            f"{self.n_encoder_layers}+{self.n_decoder_layers} layers x {self.n_heads} heads, "
            f"d_model {self.d_model}, d_ff {self.d_ff}, {self.norm_placement}-norm, "
            f"{self.positional_encoding} positions{' (randomised in training)' if self.randomised_positions else ''}"
        )
