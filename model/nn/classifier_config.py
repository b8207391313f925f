"""The configuration of seed 004's encoder-only classifier (model/nn/classifier.py): its sizes, task and classes.
Kept apart from the network so that the family registry (model/nn/registry.py) reads it without PyTorch."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from model.nn.config import (
    NORM_PLACEMENTS,
    POSITIONAL_ENCODINGS,
    ConfigError,
    check_dropout,
    check_heads,
    check_special_ids,
    check_whole_numbers,
    config_fields,
)

CLASSIFIER_TASKS = ("tagging", "sentence")


@dataclass
class ClassifierConfig:
    vocab_size: int = 1000  # pieces of the tokenizer (pad/unk/bos/eos included)
    class_names: list[str] = field(default_factory=lambda: ["no", "yes"])  # the labels, in the head's output order
    task: str = "tagging"  # "tagging": a class per position (seed 004's shape); "sentence": one class per text (pooled)
    n_layers: int = 2  # encoder layers; the seed's example has one
    d_model: int = 64  # width of the residual stream and embeddings
    n_heads: int = 4  # d_model must split evenly into heads of d_k = d_model / n_heads
    d_ff: int = 256  # inner width of the feed-forward network
    dropout: float = 0.1
    max_len: int = 128  # longest input in pieces (EOS included)
    norm_placement: str = "post"  # as the encoder-decoder's: "post" (the paper) or "pre"
    positional_encoding: str = "sinusoidal"  # "sinusoidal" (fixed) or "learned"
    pad_id: int = 0  # padding piece: never attended to
    bos_id: int = 2  # unused by the classifier; kept so every family's config names the same special ids
    eos_id: int = 3  # ends every input

    def __post_init__(self) -> None:
        self.validate()

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    # The names every family's config answers to (the stepper, checkpoints and views read them).
    @property
    def source_vocab_size(self) -> int:
        return self.vocab_size

    @property
    def target_vocab_size(self) -> int:
        return self.vocab_size

    @property
    def n_encoder_layers(self) -> int:
        return self.n_layers

    @property
    def n_decoder_layers(self) -> int:
        return 0

    def validate(self) -> None:
        check_whole_numbers(self, ("vocab_size", "n_layers", "d_model", "n_heads", "d_ff", "max_len"))
        if not isinstance(self.class_names, list) or not all(isinstance(n, str) and n for n in self.class_names):
            raise ConfigError("class_names must be a list of non-empty names")
        if len(self.class_names) < 2 or len(set(self.class_names)) != len(self.class_names):
            raise ConfigError(f"a classifier needs at least two distinct classes, got {self.class_names!r}")
        if self.task not in CLASSIFIER_TASKS:
            raise ConfigError(f"task must be one of {CLASSIFIER_TASKS}, got {self.task!r}")
        check_dropout(self.dropout)
        check_special_ids(self, self.vocab_size)
        check_heads(self.d_model, self.n_heads)
        if self.norm_placement not in NORM_PLACEMENTS:
            raise ConfigError(f"norm_placement must be one of {NORM_PLACEMENTS}, got {self.norm_placement!r}")
        if self.positional_encoding not in POSITIONAL_ENCODINGS:
            raise ConfigError(f"positional_encoding must be one of {POSITIONAL_ENCODINGS}, got {self.positional_encoding!r}")
        if self.positional_encoding == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"sinusoidal positions need an even d_model, got {self.d_model}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ClassifierConfig:
        return cls(**config_fields(cls, data))

    def layer_summary(self) -> str:
        """The info panel's line on its layers."""
        return f"{self.n_layers} encoder"

    def describe(self) -> str:
        what = "tagger" if self.task == "tagging" else "sentence classifier"
        return (
            f"encoder-only {what}, {self.n_layers} layers x {self.n_heads} heads, d_model {self.d_model}, "
            f"d_ff {self.d_ff}, {self.n_classes} classes"
        )
