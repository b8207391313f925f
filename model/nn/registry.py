"""The app's own model families, registered (model/family.py) under the names its checkpoints record:

- "transformer": the encoder-decoder Transformer of the paper (model/nn/transformer.py);
- "rnn": an RNN encoder-decoder with Bahdanau or Luong attention (model/nn/rnn.py);
- "classifier": seed 004's encoder-only Transformer, a tagger or sentence classifier (model/nn/classifier.py).

The registry names the networks by path, so reading it does not import PyTorch. Each entry declares its options
once: the command line's ``train`` flags, the Train form's rows and the presets'
descriptions are all read from them.
"""

from __future__ import annotations

from typing import Any

from model.family import (
    Architecture,
    Capabilities,
    Family,
    FamilyError,
    ModelOption,
    Objective,
    Positions,
    QueriesKeys,
    family_named,
    family_of_config,
    register,
)
from model.kinds import AttentionKind
from model.nn.classifier_config import ClassifierConfig
from model.nn.config import TRANSFORMER_POSITIONS, TransformerConfig
from model.nn.rnn_config import RNNConfig

__all__ = ["CLASSIFIER", "RNN", "TRANSFORMER", "FamilyError", "build_network", "config_class", "config_from_dict", "family_named"]

_DROPOUT = ModelOption("dropout", ("dropout",), "Dropout", float, "Dropout on sublayer outputs and embeddings", (), 0.0, 0.9, 0.05)
_MAX_LEN = ModelOption("max_len", ("max_len",), "Longest sequence", int, "longest sequence in pieces", (), 8, 4096, form=False)
_D_MODEL = ModelOption(
    "d_model", ("d_model",), "d_model", int, "Width of every representation (d_model); a multiple of the heads", (), 16, 1024, 16
)
_HEADS = ModelOption("heads", ("n_heads",), "Heads", int, "Attention heads per layer", (), 1, 16)
_D_FF = ModelOption("d_ff", ("d_ff",), "d_ff", int, "Inner width of the feed-forward sublayers (d_ff)", (), 16, 4096, 64)
_NORM = ModelOption(
    "norm",
    ("norm_placement",),
    "Norm",
    str,
    "post: LayerNorm after each residual, as in the paper; pre: before each sublayer",
    ("post", "pre"),
)
_POSITIONS = ModelOption(
    "positions",
    ("positional_encoding",),
    "Positions",
    str,
    "Sinusoidal positional encoding (the paper) or a learned table",
    ("sinusoidal", "learned"),
)
_TRANSFORMER_POSITIONS = ModelOption(
    "positions",
    ("positional_encoding",),
    "Positions",
    str,
    "How the model knows order: the paper's sinusoidal table, a learned table, rotary (RoPE), ALiBi, T5's relative bias, or none",
    TRANSFORMER_POSITIONS,
)
_RANDOMISED = ModelOption(
    "randomised_positions",
    ("randomised_positions",),
    "Randomised positions",
    bool,
    "train with each sequence's positions drawn at random from the whole table, in order (Ruoss et al. 2023; "
    "sinusoidal or learned positions)",
    form=False,
)
_ENCODER_LAYERS = ModelOption("encoder_layers", ("n_encoder_layers",), "Encoder layers", int, "Encoder layers", (), 1, 12)
_DECODER_LAYERS = ModelOption("decoder_layers", ("n_decoder_layers",), "Decoder layers", int, "Decoder layers", (), 1, 12)


def _transformer_summary(options: dict) -> str:
    return (
        f"{options['n_encoder_layers']}+{options['n_decoder_layers']} layers, d_model {options['d_model']}, "
        f"{options['n_heads']} heads, d_ff {options['d_ff']}"
    )


TRANSFORMER = register(
    Family(
        name="transformer",
        title="encoder-decoder Transformer",
        label="Transformer (encoder-decoder)",
        config_class=TransformerConfig,
        network="model.nn.transformer.Transformer",
        capabilities=Capabilities(
            Architecture.ENCODER_DECODER,
            (AttentionKind.ENCODER, AttentionKind.DECODER, AttentionKind.CROSS),
            Positions.TABLE,
            trainable=True,
            head_masking=True,
            objective=Objective.TRANSLATION,
            measured_pass="model.attribution.own_pass.measured_pass",  # imported when a measure asks
            numpy_engine=True,
            hooked_pass="model.interventions.own.hooked_pass",  # imported when a tool asks
            queries_keys=QueriesKeys.OWN,
            hides_pieces=True,
        ),
        options=(
            _ENCODER_LAYERS,
            _DECODER_LAYERS,
            ModelOption(
                "layers",
                ("n_encoder_layers", "n_decoder_layers"),
                "Layers",
                int,
                "encoder and decoder layers (sets both; a classifier's layers)",
                (),
                1,
                12,
                form=False,
            ),
            _D_MODEL,
            _HEADS,
            _D_FF,
            _DROPOUT,
            _NORM,
            _TRANSFORMER_POSITIONS,
            _RANDOMISED,
            ModelOption(
                "tie_embeddings",
                ("tie_embeddings",),
                "Tied embeddings",
                bool,
                "separate embedding and output matrices",
                form=False,
                flag_inverts=True,
            ),
            _MAX_LEN,
        ),
        summary=_transformer_summary,
        tip="The paper's encoder-decoder Transformer: encoder self, decoder masked self and cross-attention",
    )
)


def _rnn_summary(options: dict) -> str:
    window = f", local window {options['local_window']}" if options.get("local_window") else ""
    return f"RNN: {options['cell'].upper()} {options['d_hidden']} wide, {options['attention']} attention{window}"


RNN = register(
    Family(
        name="rnn",
        title="RNN encoder-decoder with attention",
        label="RNN with attention (seed 002)",
        config_class=RNNConfig,
        network="model.nn.rnn.RNNAttention",
        capabilities=Capabilities(Architecture.ENCODER_DECODER, (AttentionKind.CROSS,), Positions.RECURRENCE, trainable=True),
        options=(
            ModelOption(
                "cell", ("cell",), "Cell", str, "The RNN cell of the encoder (both directions) and the decoder", ("gru", "lstm")
            ),
            ModelOption(
                "attention",
                ("attention",),
                "Attention",
                str,
                "Bahdanau: additive score of the previous decoder state; Luong: dot, general or concat score of the current one",
                ("bahdanau", "luong-dot", "luong-general", "luong-concat"),
            ),
            ModelOption(
                "local_window",
                ("local_window",),
                "Local window",
                int,
                "Luong's local-p attention: a window of ±D source positions around a predicted one (0 = global)",
                (),
                0,
                50,
            ),
            ModelOption("d_embed", ("d_embed",), "Embedding width", int, "Width of the RNN's word embeddings", (), 16, 1024, 16),
            ModelOption(
                "hidden",
                ("d_hidden",),
                "Hidden width",
                int,
                "Width of the RNN decoder's state (even: the encoder's two directions share it)",
                (),
                16,
                2048,
                16,
            ),
            _DROPOUT,
            _MAX_LEN,
        ),
        summary=_rnn_summary,
        # A bidirectional GRU encoder (96 a direction) and a GRU decoder, Bahdanau's additive attention: sized so
        # that the shipped toy-fr model stays under 5 MB.
        default_model=dict(cell="gru", attention="bahdanau", local_window=0, d_embed=96, d_hidden=192, dropout=0.1),
        tip=(
            "A bidirectional RNN encoder and an RNN decoder with Bahdanau or Luong attention: one cross-attention "
            "distribution per step, the history the Transformer's cross-attention comes from"
        ),
    )
)


def _classifier_summary(options: dict) -> str:
    return f"encoder-only: {options['n_layers']} layers, d_model {options['d_model']}, {options['n_heads']} heads"


CLASSIFIER = register(
    Family(
        name="classifier",
        title="encoder-only Transformer",
        label="Encoder-only classifier (seed 004)",
        config_class=ClassifierConfig,
        network="model.nn.classifier.EncoderClassifier",
        capabilities=Capabilities(
            Architecture.ENCODER_ONLY,
            (AttentionKind.ENCODER,),
            Positions.TABLE,
            trainable=True,
            labels=True,
            head_masking=True,
            objective=Objective.LABELS,
            beam_search=False,
            queries_keys=QueriesKeys.OWN,
            hooked_pass="model.interventions.encoder_stack.classifier_pass",  # its encoder's hook points (when asked)
            measured_pass="model.attribution.own_pass.encoder_measured_pass",  # its encoder's (imported when asked)
            hides_pieces=True,  # a pad id is masked as padding: the report card hides a piece in place (positions kept)
        ),
        tasks=("tagging", "classification"),
        quality_measure="macro-F1",
        options=(
            ModelOption("encoder_layers", ("n_layers",), "Encoder layers", int, "Encoder layers", (), 1, 12),
            ModelOption("layers", ("n_layers",), "Layers", int, "the classifier's layers", (), 1, 12, form=False),
            _D_MODEL,
            _HEADS,
            _D_FF,
            _DROPOUT,
            _NORM,
            _POSITIONS,
            _MAX_LEN,
        ),
        summary=_classifier_summary,
        # Small: a tag or a sentence class needs far less than a translation.
        default_model=dict(n_layers=2, d_model=64, n_heads=4, d_ff=256, dropout=0.1),
        tip="The Transformer's encoder with a linear head: a tag for every word, or one class per sentence",
    )
)


def config_class(family: str) -> Any:
    """The config class of the family named ``family`` (a FamilyError when none is)."""
    return family_named(family).config_class


def config_from_dict(family: str, data: dict) -> Any:
    """The family's config from its saved fields (a ConfigError when they cannot describe a working model)."""
    return config_class(family).from_dict(data)


def build_network(config: Any) -> Any:
    """An untrained network of the family the config belongs to."""
    return family_of_config(config).network_class(config)
