"""The Train form's values as plain data: which preset setting each field shows, and reading or setting a
box of any kind (spin box, combo box, check box) from a preset or a saved setting."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox

from model.training.presets import NO_EPOCH_LIMIT, Preset

CORPUS_TIPS = {
    "toy-fr": "English→French from a grammar and a bilingual lexicon, with gold word alignments",
    "copy": "Copy a sequence of symbols: cross-attention should be diagonal",
    "reverse": "Reverse a sequence of symbols: cross-attention should be anti-diagonal",
    "sort": "Sort a sequence of symbols",
    "toy-fr-tags": "toy-fr's English sentences with the part of speech of every word (exact gold tags): a tagger",
    "toy-fr-negation": "toy-fr's English sentences, each negated or affirmative: a sentence classifier",
    "toy-fr-number": "toy-fr's English sentences, each with a singular or plural subject: a sentence classifier",
    "toy-fr-relative": "toy-fr's English sentences, with or without a relative clause: a sentence classifier",
}

# Form field -> (preset group, preset key).
PRESET_FIELDS = {
    "encoder_layers": ("model", "n_encoder_layers"),
    "decoder_layers": ("model", "n_decoder_layers"),
    "d_model": ("model", "d_model"),
    "heads": ("model", "n_heads"),
    "d_ff": ("model", "d_ff"),
    "dropout": ("model", "dropout"),
    "cell": ("model", "cell"),
    "attention": ("model", "attention"),
    "local_window": ("model", "local_window"),
    "d_embed": ("model", "d_embed"),
    "hidden": ("model", "d_hidden"),
    "vocab_size": ("tokenizer", "vocab_size"),
    "max_minutes": ("training", "max_minutes"),
    "batch_size": ("training", "batch_size"),
    "batch_tokens": ("training", "batch_tokens"),
    "warmup": ("training", "warmup_steps"),
    "lr_factor": ("training", "lr_factor"),
    "lr_decay": ("training", "lr_decay"),
    "average_steps": ("training", "average_steps"),
    "valid_every": ("training", "valid_every"),
    "patience": ("training", "patience"),
    "epochs": ("training", "epochs"),
    "max_steps": ("training", "max_steps"),
}


def preset_value(preset: Preset, name: str):
    """The preset's value for a form field; a setting the preset leaves unset reads as the box's "none" (0)."""
    group, key = PRESET_FIELDS[name]
    values = getattr(preset, group)
    if key not in values and group == "model":  # another family's setting: the box keeps its value (hidden)
        return values.get("n_layers") if key == "n_encoder_layers" else None
    value = values.get(key)
    if name == "epochs" and value is not None and value >= NO_EPOCH_LIMIT:
        return 0
    if name == "lr_decay":
        return value or "rsqrt"
    return 0 if value is None else value


def get_value(widget):
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    return widget.value()


def set_value(widget, value) -> None:
    """Set a box from a preset or a saved setting (saved ones come back as strings)."""
    if isinstance(widget, QCheckBox):
        widget.setChecked(value in (True, "true"))
    elif isinstance(widget, QComboBox):
        if widget.findText(str(value)) >= 0:
            widget.setCurrentText(str(value))
    else:
        try:
            widget.setValue(type(widget.value())(float(value)))
        except (TypeError, ValueError):
            pass  # a damaged setting: the preset's value stays
