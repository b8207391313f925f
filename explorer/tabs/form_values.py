"""The Train form's values as plain data: which preset setting each field shows (a model row: the field its family's
option sets; the others: SETTING_FIELDS), and reading or setting a box of any kind (spin box, combo box, check box)
from a preset or a saved setting."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QSpinBox, QWidget

from explorer.settings_values import SettingsValues
from model.family import family_named
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

# Form field -> (preset group, preset key), for the fields outside the model's options.
SETTING_FIELDS = {
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


def preset_value(preset: Preset, name: str) -> Any:
    """The preset's value for a form field; None keeps the box's value (another family's row, or a model setting the
    preset leaves to the config); a training setting the preset leaves unset reads as the box's "none" (0)."""
    if name not in SETTING_FIELDS:  # a model row: the field its option sets in the preset's family
        option = next((o for o in family_named(preset.family).options if o.dest == name), None)
        return None if option is None else preset.model.get(option.fields[0])
    group, key = SETTING_FIELDS[name]
    value = getattr(preset, group).get(key)
    if name == "epochs" and value is not None and value >= NO_EPOCH_LIMIT:
        return 0
    if name == "lr_decay":
        return value or "rsqrt"
    return 0 if value is None else value


def get_value(widget: QWidget) -> Any:
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    return widget.value()  # type: ignore[attr-defined]


def set_value(widget: QWidget, value: Any) -> None:
    """Set a box from a preset's value (a saved setting is checked first: ``saved_value``)."""
    if isinstance(widget, QCheckBox):
        widget.setChecked(value in (True, "true"))
    elif isinstance(widget, QComboBox):
        if widget.findText(str(value)) >= 0:
            widget.setCurrentText(str(value))
    else:
        widget.setValue(type(widget.value())(float(value)))  # type: ignore[attr-defined]


def saved_value(settings: SettingsValues, key: str, widget: QWidget) -> Any:
    """The value saved under ``key`` for a box if it is one the box can show (its type, within its range, one of its
    items); None when none is saved, or when the saved one is damaged (then reported as such)."""
    if isinstance(widget, QCheckBox):
        return settings.boolean(key, None)
    if isinstance(widget, QComboBox):
        return settings.choice(key, None, (widget.itemText(i) for i in range(widget.count())))
    if isinstance(widget, QSpinBox):
        return settings.integer(key, None, widget.minimum(), widget.maximum())
    if isinstance(widget, QDoubleSpinBox):
        return settings.number(key, None, widget.minimum(), widget.maximum())
    return None


def save_changed(settings: SettingsValues, fields: dict[str, QWidget], changed: set[str]) -> None:
    """Remember the fields the user changed from the preset (the rest follows the preset)."""
    names = sorted(name for name in changed if name in fields)
    settings.setValue("train/changed", ",".join(names))
    for name in names:
        settings.setValue(f"train/{name}", get_value(fields[name]))


def restore_changed(settings: SettingsValues, fields: dict[str, QWidget]) -> set[str]:
    """Set the fields the user had changed to their saved values; their names. A damaged value leaves the preset's
    (its field counts as unchanged, so the damaged value is never saved again); a field of another version is
    skipped."""
    restored = set()
    changed = (name.strip() for line in settings.texts("train/changed") for name in line.split(","))
    for name in filter(None, changed):
        value = saved_value(settings, f"train/{name}", fields[name]) if name in fields else None
        if value is not None:
            set_value(fields[name], value)
            restored.add(name)
    return restored
