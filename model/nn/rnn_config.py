"""The one configuration of an RNN encoder-decoder with attention (model/nn/rnn.py), with the reason for each field.

Like TransformerConfig it is plain data saved inside every checkpoint as JSON and rebuilt from it, so every
field is a JSON-friendly scalar. It also answers to the names the rest of the app reads from any family's
config (``d_model``, ``n_heads``, ``d_k``, layer counts): an RNN has one cross-attention "layer" with one head.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from model.nn.config import ConfigError, check_dropout, check_sequences, check_special_ids, check_whole_numbers, config_fields

CELLS = ("gru", "lstm")
ATTENTIONS = ("bahdanau", "luong-dot", "luong-general", "luong-concat")
ATTENTION_NAMES = {
    "bahdanau": "Bahdanau",
    "luong-dot": "Luong dot",
    "luong-general": "Luong general",
    "luong-concat": "Luong concat",
}


@dataclass
class RNNConfig:
    source_vocab_size: int = 1000  # pieces of the source tokenizer (pad/unk/bos/eos included)
    target_vocab_size: int = 1000  # pieces of the target tokenizer; equal to the source when joint
    joint_vocab: bool = True  # one tokenizer for both languages: source and target share one embedding
    cell: str = "gru"  # "gru" (Bahdanau's gated unit) or "lstm" (Luong's), for the encoder and the decoder
    d_embed: int = 128  # width of the piece embeddings
    d_hidden: int = 256  # decoder state width; the bi-encoder gives each direction half, so annotations are as wide
    attention: str = "bahdanau"  # the score: additive of the previous state (Bahdanau) or Luong's of the current one
    local_window: int = 0  # 0: global attention; D >= 1: Luong's local-p attention over [p_t - D, p_t + D]
    dropout: float = 0.1  # on embeddings and on each step's output, in training only
    max_len: int = 128  # longest sequence (in pieces, BOS/EOS included) a sentence may have
    pad_id: int = 0  # padding piece: never attended to and never predicted
    bos_id: int = 2  # begins every target sequence
    eos_id: int = 3  # ends every sequence

    def __post_init__(self) -> None:
        self.validate()

    # The names every family's config answers to (the learning-rate schedule, the stepper and the views read them).
    @property
    def d_model(self) -> int:
        """The width the learning-rate schedule scales by: the decoder state's."""
        return self.d_hidden

    @property
    def n_heads(self) -> int:
        return 1

    @property
    def d_k(self) -> int:
        return self.d_hidden

    @property
    def n_encoder_layers(self) -> int:
        return 1

    @property
    def n_decoder_layers(self) -> int:
        return 1

    def validate(self) -> None:
        check_whole_numbers(self, ("source_vocab_size", "target_vocab_size", "d_embed", "d_hidden", "max_len"))
        if not isinstance(self.joint_vocab, bool):
            raise ConfigError(f"joint_vocab must be true or false, got {self.joint_vocab!r}")
        if not isinstance(self.local_window, int) or isinstance(self.local_window, bool) or self.local_window < 0:
            raise ConfigError(f"local_window must be 0 (global attention) or a positive whole number D, got {self.local_window!r}")
        check_dropout(self.dropout)
        check_special_ids(self, min(self.source_vocab_size, self.target_vocab_size))
        if self.cell not in CELLS:
            raise ConfigError(f"cell must be one of {CELLS}, got {self.cell!r}")
        if self.attention not in ATTENTIONS:
            raise ConfigError(f"attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if self.d_hidden % 2:
            raise ConfigError(
                f"d_hidden must be even, got {self.d_hidden}: the bidirectional encoder gives each direction d_hidden / 2"
            )
        check_sequences(self)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RNNConfig:
        return cls(**config_fields(cls, data))

    def layer_summary(self) -> str:
        """The info panel's line on its layers."""
        return f"bidirectional {self.cell.upper()} encoder, {self.cell.upper()} decoder"

    def describe(self) -> str:
        """One line for status bars and logs."""
        cell = self.cell.upper()
        scope = f"local-p, D={self.local_window}" if self.local_window else "global"
        return (
            f"{cell} bi-encoder + {cell} decoder, {ATTENTION_NAMES[self.attention]} attention ({scope}), "
            f"d_embed {self.d_embed}, d_hidden {self.d_hidden}"
        )
