"""The decoding controls of the Explore tab: the source sentence (Enter translates), the strategy
(greedy, beam with its width, sampling with temperature / top-k / top-p / seed), Step back,
Step forward, Run to end, Reset and a slider over the steps, each with a shortcut."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from model.decoding.stepper import DecodingOptions

# QLineEdit keeps 32,767 characters by default and silently drops the rest of a paste; this cap is far
# above any model's input (the model then says where it cut), and reaching it is said in the tooltip.
MAX_SOURCE_CHARS = 1_000_000
SOURCE_TIP = "The source sentence; Enter translates it"


def _spin(box, low, high, value, tip, step=None):
    box.setRange(low, high)
    box.setValue(value)
    box.setToolTip(tip)
    if step:
        box.setSingleStep(step)
    return box


class DecodeControls(QWidget):
    translate_requested = Signal(str)
    step_forward = Signal()
    step_back = Signal()
    run_to_end = Signal()
    reset = Signal()
    step_chosen = Signal(int)  # the slider: show the decoding after this many steps
    languages_chosen = Signal(str, str)  # a multilingual model's source and target language codes

    def __init__(self):
        super().__init__()
        self.source = QLineEdit()
        self.source.setPlaceholderText("Type a sentence and press Enter, e.g. “the black cat sees the small dog”")
        self.source.setToolTip(SOURCE_TIP)
        self.source.setMaxLength(MAX_SOURCE_CHARS)
        self.source.textChanged.connect(self._on_source_changed)
        self.source.setClearButtonEnabled(True)
        self.source.returnPressed.connect(lambda: self.translate_requested.emit(self.source.text()))
        self.translate_button = self._button(
            "Translate", "Translate the sentence (Enter)", lambda: self.translate_requested.emit(self.source.text())
        )
        self.strategy = QComboBox()
        self.strategy.addItems(["greedy", "beam", "sample"])
        self.strategy.setToolTip(
            "Greedy takes the most likely token; beam keeps several hypotheses; sample draws from the distribution"
        )
        self.beam_width = _spin(QSpinBox(), 1, 16, 4, "Beam width: hypotheses kept at each step")
        self.temperature = _spin(QDoubleSpinBox(), 0.05, 5.0, 1.0, "Sampling temperature (<1 sharper)", 0.1)
        self.top_k = _spin(QSpinBox(), 0, 1000, 0, "Sample among the k most likely tokens only (0 = all)")
        self.top_p = _spin(QDoubleSpinBox(), 0.01, 1.0, 1.0, "Nucleus: the smallest set with this probability", 0.05)
        self.seed = _spin(QSpinBox(), 0, 2**31 - 1, 0, "Sampling seed: the same seed draws the same tokens")
        self.strategy.currentTextChanged.connect(self._on_strategy_changed)
        for box in (self.beam_width, self.temperature, self.top_k, self.top_p, self.seed):
            box.valueChanged.connect(self._on_options_changed)

        self.back_button = self._button("◀ Back", "Step back one token (Alt+Left)", self.step_back.emit, "Alt+Left")
        self.forward_button = self._button("Step ▶", "Decode one more token (Alt+Right)", self.step_forward.emit, "Alt+Right")
        self.run_button = self._button("Run ▶▶", "Decode to the end (Alt+End)", self.run_to_end.emit, "Alt+End")
        self.reset_button = self._button("⟲ Reset", "Back to the start of decoding (Alt+Home)", self.reset.emit, "Alt+Home")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("Scrub through the decoding steps")
        self.slider.setRange(0, 0)
        self.slider.valueChanged.connect(self._on_slider_moved)
        self.step_label = QLabel("step 0 / 0")
        self._updating = False
        self.source_language, self.target_language = QComboBox(), QComboBox()
        self.source_language.setToolTip("The source language: its code marks the sentence the encoder reads")
        self.target_language.setToolTip("The target language: decoding is made to start with its code (a forced first token)")
        self.language_label, self.language_arrow = QLabel("Languages:"), QLabel("→")
        self.language_widgets: tuple[QWidget, ...] = (
            self.language_label,
            self.source_language,
            self.language_arrow,
            self.target_language,
        )
        for box in (self.source_language, self.target_language):
            box.activated.connect(
                lambda _index: self.languages_chosen.emit(self.source_language.currentText(), self.target_language.currentText())
            )

        first = QHBoxLayout()
        first.addWidget(QLabel("Source:"))
        first.addWidget(self.source, 1)
        first.addWidget(self.translate_button)
        first.addSpacing(16)
        for widget in (self.reset_button, self.back_button, self.forward_button, self.run_button):  # one row: 1024 px
            first.addWidget(widget)
        second = QHBoxLayout()
        options: tuple[QWidget, ...] = (
            QLabel("Strategy:"),
            self.strategy,
            QLabel("width"),
            self.beam_width,
            QLabel("T"),
            self.temperature,
            QLabel("top-k"),
            self.top_k,
            QLabel("top-p"),
            self.top_p,
            QLabel("seed"),
            self.seed,
        )
        for option in options:
            second.addWidget(option)
        second.addSpacing(16)
        for language_widget in self.language_widgets:
            second.addWidget(language_widget)
        self.show_languages([], None, None)
        second.addWidget(self.slider, 1)
        second.addWidget(self.step_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(first)
        layout.addLayout(second)
        self._on_strategy_changed(self.strategy.currentText())

    def show_languages(self, codes: list[str], source: str | None, target: str | None) -> None:
        """A multilingual model's language codes in the two boxes, the current ones chosen; hidden for any other."""
        for box, current in ((self.source_language, source), (self.target_language, target)):
            box.blockSignals(True)
            box.clear()
            box.addItems(codes)
            box.setCurrentIndex(codes.index(current) if current in codes else -1)
            box.blockSignals(False)
        for language_widget in self.language_widgets:
            language_widget.setVisible(bool(codes))

    def _on_language_chosen(self, _index: int) -> None:
        self.languages_chosen.emit(self.source_language.currentText(), self.target_language.currentText())

    def _button(self, text, tip, slot, shortcut=None) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        if shortcut:
            button.setShortcut(QKeySequence(shortcut))
        return button

    def _on_source_changed(self, text: str) -> None:
        """Say so when the text fills the field: whatever was typed or pasted beyond it was left out."""
        if len(text) >= MAX_SOURCE_CHARS:
            self.source.setToolTip(
                f"The source holds at most {MAX_SOURCE_CHARS:,} characters: the rest of the text was left out. Enter translates it"
            )
        else:
            self.source.setToolTip(SOURCE_TIP)

    def _on_strategy_changed(self, strategy: str) -> None:
        self.beam_width.setEnabled(strategy == "beam")
        for box in (self.temperature, self.top_k, self.top_p, self.seed):
            box.setEnabled(strategy == "sample")
        self._on_options_changed()

    def _on_options_changed(self, *_args) -> None:
        """A new strategy or setting decodes the sentence again at once."""
        if self.source.text().strip():
            self.translate_requested.emit(self.source.text())

    def options(self) -> DecodingOptions:
        return DecodingOptions(
            strategy=self.strategy.currentText(),
            temperature=self.temperature.value(),
            top_k=self.top_k.value(),
            top_p=self.top_p.value(),
            seed=self.seed.value(),
            beam_width=self.beam_width.value(),
        )

    def set_steps(self, current: int, total: int, finished: bool) -> None:
        """Show ``current`` of ``total`` steps without emitting step_chosen."""
        self._updating = True
        self.slider.setRange(0, max(total, current))
        self.slider.setValue(current)
        self._updating = False
        self.step_label.setText(f"step {current} / {max(total, current)}")
        self.back_button.setEnabled(current > 0)
        self.reset_button.setEnabled(current > 0)
        self.forward_button.setEnabled(not finished)
        self.run_button.setEnabled(not finished)

    def _on_slider_moved(self, value: int) -> None:
        if not self._updating:
            self.step_chosen.emit(value)
