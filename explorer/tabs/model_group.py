"""The Train form's Model group, built from the family registry (model/family.py): a box listing the families this
app trains (each by its title, its tip as the tooltip) and one row per option a family shows on the form
(``ModelOption`` with ``form=True``); only the rows of the chosen family are shown. ``options()`` gives them as
the family's config fields, checked by building its config, so a choice that cannot work is named at once.

The "Joint vocabulary, tied embeddings" box is a tokenizer option (one vocabulary for both sides) that also sets
``tie_embeddings`` for a family that has that option; a family that learns labels reads one text and shows none.
"""

from __future__ import annotations

from typing import Any, overload

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QSpinBox, QWidget

from model.family import Family, ModelOption, families, family_named

TIE_EMBEDDINGS = "tie_embeddings"  # the option the joint-vocabulary box sets, in a family that has it


@overload
def spin(low: float, high: float, value: float, tip: str, step: float = 1, decimals: None = None) -> QSpinBox: ...


@overload
def spin(low: float, high: float, value: float, tip: str, step: float, decimals: int) -> QDoubleSpinBox: ...


def spin(
    low: float, high: float, value: float, tip: str, step: float = 1, decimals: int | None = None
) -> QSpinBox | QDoubleSpinBox:
    """A spin box over [low, high] (a QDoubleSpinBox with ``decimals``, else whole numbers)."""
    if decimals is not None:
        double = QDoubleSpinBox()
        double.setDecimals(decimals)
        double.setRange(low, high)
        double.setSingleStep(step)
        double.setValue(value)
        double.setToolTip(tip)
        return double
    box = QSpinBox()
    box.setRange(int(low), int(high))
    box.setSingleStep(int(step))
    box.setValue(int(value))
    box.setToolTip(tip)
    return box


def combo(items: list[str], tip: str) -> QComboBox:
    box = QComboBox()
    box.addItems(items)
    box.setToolTip(tip)
    return box


def trainable_families() -> list[Family]:
    return [family for family in families() if family.capabilities.trainable]


def option_box(option: ModelOption, initial: Any) -> QWidget:
    """The box of one option: a combo box for choices, a check box for a flag, else a spin box in its range."""
    if option.choices:
        choices = combo(list(option.choices), option.help)
        if initial in option.choices:
            choices.setCurrentText(str(initial))
        return choices
    if option.type is bool:
        check = QCheckBox(option.label)
        check.setToolTip(option.help)
        check.setChecked(bool(initial))
        return check
    low = option.minimum if option.minimum is not None else 0
    high = option.maximum if option.maximum is not None else 1_000_000
    start = initial if initial is not None else low
    if option.type is float:
        return spin(low, high, start, option.help, option.step, 2)
    box = spin(low, high, start, option.help, option.step)
    if option.dest == "local_window":
        box.setSpecialValueText("global")  # Luong's local-p window: 0 is global attention
    return box


def initial_value(option: ModelOption, owners: list[Family]) -> Any:
    """A box's value before any preset: a family's default for the field it sets, else none."""
    for family in owners:
        if option.fields[0] in family.default_model:
            return family.default_model[option.fields[0]]
    return None


class ModelGroup(QGroupBox):
    def __init__(self) -> None:
        super().__init__("Model")
        self.form = QFormLayout(self)
        self.family = QComboBox()
        for family in trainable_families():
            self.family.addItem(family.form_label, family.name)
            self.family.setItemData(self.family.count() - 1, family.tip, Qt.ItemDataRole.ToolTipRole)
        self.family.setToolTip("Which model to train; a tagging or labelled-sentence corpus trains the classifier")
        self.form.addRow("Family", self.family)
        self.rows: dict[str, QWidget] = {}  # option dest -> its box, shared by the families that declare it
        self.family_rows: dict[str, tuple[str, ...]] = {}  # family name -> the dests of its rows
        for family in trainable_families():
            shown = [option for option in family.options if option.form]
            self.family_rows[family.name] = tuple(option.dest for option in shown)
            for option in shown:
                if option.dest not in self.rows:
                    owners = [f for f in trainable_families() if option.dest in f.option_dests()]
                    self.rows[option.dest] = box = option_box(option, initial_value(option, owners))
                    self.form.addRow("" if option.type is bool else option.label, box)
        self.vocab_size = spin(20, 32000, 2000, "SentencePiece vocabulary size (a soft limit)", 100)
        self.joint_vocab = QCheckBox("Joint vocabulary, tied embeddings")
        self.joint_vocab.setChecked(True)
        self.joint_vocab.setToolTip("One tokenizer for both languages; source, target and output share one matrix")
        self.form.addRow("Vocabulary", self.vocab_size)
        self.form.addRow("", self.joint_vocab)
        self.family.currentIndexChanged.connect(lambda _index: self.show_family(self.current_family()))
        self.show_family(self.current_family())

    def fields(self) -> dict[str, QWidget]:
        """Every box of the group by the form's name for it (the option's dest): presets and saved changes set them."""
        return {"family": self.family, **self.rows, "vocab_size": self.vocab_size, "joint_vocab": self.joint_vocab}

    def current_family(self) -> str:
        return str(self.family.currentData())

    def offer_families(self, wanted: str, task: str) -> None:
        """Offer the families that learn ``task`` (what the corpus is for); keep the chosen one if it is among
        them, else choose ``wanted`` (the corpus's preset's)."""
        items = self.family.model()
        allowed = [family.name for family in trainable_families() if task in family.tasks]
        for index in range(self.family.count()):
            items.item(index).setEnabled(self.family.itemData(index) in allowed)  # type: ignore[attr-defined]
        family = self.current_family() if self.current_family() in allowed else wanted
        self.family.setCurrentIndex(self.family.findData(family))
        self.show_family(family)

    def show_family(self, name: str) -> None:
        family = family_named(name)
        for dest, box in self.rows.items():
            self.form.setRowVisible(box, dest in self.family_rows[name])
        self.form.setRowVisible(self.joint_vocab, not family.capabilities.labels)

    def options(self) -> dict[str, Any]:
        """The chosen family's config fields (other than the vocabulary and what the corpus fixes); a ConfigError
        (a UserError) names a choice its config refuses."""
        family = family_named(self.current_family())
        given = {dest: read_box(self.rows[dest]) for dest in self.family_rows[family.name]}
        if TIE_EMBEDDINGS in family.option_dests():
            option = next(option for option in family.options if option.dest == TIE_EMBEDDINGS)
            joint = self.joint_vocab.isChecked()
            given[TIE_EMBEDDINGS] = not joint if option.flag_inverts else joint
        fields = family.config_fields(given)
        family.build_config(fields, self.vocab_size.value(), self.vocab_size.value(), joint_vocab=self.joint_vocab.isChecked())
        return fields


def read_box(box: QWidget) -> Any:
    if isinstance(box, QCheckBox):
        return box.isChecked()
    if isinstance(box, QComboBox):
        return box.currentText()
    assert isinstance(box, (QSpinBox, QDoubleSpinBox))
    return box.value()
