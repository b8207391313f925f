"""The Train form's Model group: the family (the paper's Transformer, seed 002's RNN with attention, seed 004's
encoder-only classifier) and its settings. Only the rows of the chosen family are shown; ``options()`` gives
them as the family's config fields (model/nn/registry.py)."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QSpinBox

from model.nn.config import ConfigError, check_heads

FAMILY_LABELS = {
    "transformer": "Transformer (encoder-decoder)",
    "rnn": "RNN with attention (seed 002)",
    "classifier": "Encoder-only classifier (seed 004)",
}
FAMILY_TIPS = {
    "transformer": "The paper's encoder-decoder Transformer: encoder self, decoder masked self and cross-attention",
    "rnn": "A bidirectional RNN encoder and an RNN decoder with Bahdanau or Luong attention: "
    "one cross-attention distribution per step, the history the Transformer's cross-attention comes from",
    "classifier": "The Transformer's encoder with a linear head: a tag for every word, or one class per sentence",
}
# The rows each family shows (the shared ones: dropout, vocabulary).
FAMILY_ROWS = {
    "transformer": ("encoder_layers", "decoder_layers", "d_model", "heads", "d_ff", "norm", "positions", "joint_vocab"),
    "rnn": ("cell", "attention", "local_window", "d_embed", "hidden", "joint_vocab"),
    "classifier": ("encoder_layers", "d_model", "heads", "d_ff", "norm", "positions"),
}

MODEL_FIELDS = (  # the boxes, as the Train form names its fields
    "family",
    "encoder_layers",
    "decoder_layers",
    "d_model",
    "heads",
    "d_ff",
    "cell",
    "attention",
    "local_window",
    "d_embed",
    "hidden",
    "dropout",
    "norm",
    "positions",
    "vocab_size",
    "joint_vocab",
)


def spin(low, high, value, tip, step=1, decimals=None):
    box = QDoubleSpinBox() if decimals is not None else QSpinBox()
    if decimals is not None:
        box.setDecimals(decimals)
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setValue(value)
    box.setToolTip(tip)
    return box


def combo(items: list[str], tip: str) -> QComboBox:
    box = QComboBox()
    box.addItems(items)
    box.setToolTip(tip)
    return box


class ModelGroup(QGroupBox):
    def __init__(self) -> None:
        super().__init__("Model")
        self.form = QFormLayout(self)
        self.family = QComboBox()
        for family, label in FAMILY_LABELS.items():
            self.family.addItem(label, family)
            self.family.setItemData(self.family.count() - 1, FAMILY_TIPS[family], 3)  # Qt.ToolTipRole
        self.family.setToolTip("Which model to train; a tagging or labelled-sentence corpus trains the classifier")
        self.encoder_layers = spin(1, 12, 3, "Encoder layers")
        self.decoder_layers = spin(1, 12, 3, "Decoder layers")
        self.d_model = spin(16, 1024, 128, "Width of every representation (d_model); a multiple of the heads", 16)
        self.heads = spin(1, 16, 4, "Attention heads per layer")
        self.d_ff = spin(16, 4096, 512, "Inner width of the feed-forward sublayers (d_ff)", 64)
        self.cell = combo(["gru", "lstm"], "The RNN cell of the encoder (both directions) and the decoder")
        self.attention = combo(
            ["bahdanau", "luong-dot", "luong-general", "luong-concat"],
            "Bahdanau: additive score of the previous decoder state; Luong: dot, general or concat score of the current one",
        )
        self.local_window = spin(
            0, 50, 0, "Luong's local-p attention: a window of ±D source positions around a predicted one (0 = global)"
        )
        self.local_window.setSpecialValueText("global")
        self.d_embed = spin(16, 1024, 96, "Width of the RNN's word embeddings", 16)
        self.hidden = spin(16, 2048, 192, "Width of the RNN decoder's state (even: the encoder's two directions share it)", 16)
        self.dropout = spin(0.0, 0.9, 0.1, "Dropout on sublayer outputs and embeddings", 0.05, 2)
        self.norm = combo(["post", "pre"], "post: LayerNorm after each residual, as in the paper; pre: before each sublayer")
        self.positions = combo(["sinusoidal", "learned"], "Sinusoidal positional encoding (the paper) or a learned table")
        self.vocab_size = spin(20, 32000, 2000, "SentencePiece vocabulary size (a soft limit)", 100)
        self.joint_vocab = QCheckBox("Joint vocabulary, tied embeddings")
        self.joint_vocab.setChecked(True)
        self.joint_vocab.setToolTip("One tokenizer for both languages; source, target and output share one matrix")
        self.rows = {}
        for name, label in (
            ("family", "Family"),
            ("encoder_layers", "Encoder layers"),
            ("decoder_layers", "Decoder layers"),
            ("d_model", "d_model"),
            ("heads", "Heads"),
            ("d_ff", "d_ff"),
            ("cell", "Cell"),
            ("attention", "Attention"),
            ("local_window", "Local window"),
            ("d_embed", "Embedding width"),
            ("hidden", "Hidden width"),
            ("dropout", "Dropout"),
            ("norm", "Norm"),
            ("positions", "Positions"),
            ("vocab_size", "Vocabulary"),
            ("joint_vocab", ""),
        ):
            self.form.addRow(label, getattr(self, name))
            self.rows[name] = getattr(self, name)
        self.show_family("transformer")

    def current_family(self) -> str:
        return str(self.family.currentData())

    def set_family(self, family: str, allowed: tuple[str, ...]) -> None:
        """Choose ``family`` and offer only the ``allowed`` ones (what the corpus can train)."""
        model = self.family.model()
        for index in range(self.family.count()):
            model.item(index).setEnabled(self.family.itemData(index) in allowed)
        self.family.setCurrentIndex(self.family.findData(family))
        self.show_family(family)

    def show_family(self, family: str) -> None:
        for name, widget in self.rows.items():
            if name in ("family", "dropout", "vocab_size"):
                continue
            self.form.setRowVisible(widget, name in FAMILY_ROWS[family])

    def options(self) -> dict:
        """The chosen family's config fields (other than the vocabulary and what the corpus fixes)."""
        family = self.current_family()
        if family == "rnn":
            if self.hidden.value() % 2:
                raise ConfigError(
                    f"the hidden width must be even (the encoder's two directions share it), got {self.hidden.value()}"
                )
            return dict(
                cell=self.cell.currentText(),
                attention=self.attention.currentText(),
                local_window=self.local_window.value(),
                d_embed=self.d_embed.value(),
                d_hidden=self.hidden.value(),
                dropout=self.dropout.value(),
            )
        check_heads(self.d_model.value(), self.heads.value())
        shared = dict(
            d_model=self.d_model.value(),
            n_heads=self.heads.value(),
            d_ff=self.d_ff.value(),
            dropout=self.dropout.value(),
            norm_placement=self.norm.currentText(),
            positional_encoding=self.positions.currentText(),
        )
        if family == "classifier":
            return dict(shared, n_layers=self.encoder_layers.value())
        return dict(
            shared,
            n_encoder_layers=self.encoder_layers.value(),
            n_decoder_layers=self.decoder_layers.value(),
            tie_embeddings=self.joint_vocab.isChecked(),
        )
