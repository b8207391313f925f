"""The timeline bar of the Explore tab, shown when the open model has a timeline of its training: Play/Pause, a
slider over the snapshots, the snapshot's name, training loss and validation scores, and the choice of a second
snapshot to compare with (as the signed difference of the focus and grid, or side by side).

It shows what it is given and says what the user asked through its signals; while playing, its timer asks for the
next snapshot (``tick``) once every ``interval_s``. Dragging the slider asks for every position it passes.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QFrame, QHBoxLayout, QLabel, QPushButton, QSlider, QStyle, QVBoxLayout

from explorer.widgets.elided_label import ElidedLabel

NO_COMPARISON = "(none)"
MODES = (("difference", "as a difference"), ("side by side", "side by side"))


class TimelineBar(QFrame):
    index_chosen = Signal(int)  # the slider's snapshot (from 0)
    play_toggled = Signal(bool)  # True: play, False: pause
    tick = Signal()  # while playing: time for the next snapshot
    compare_chosen = Signal(object, str)  # (snapshot index or None, mode)
    loop_toggled = Signal(bool)
    same_output_toggled = Signal(bool)

    def __init__(self, interval_s: float = 1.0) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setToolTip("This model was recorded while it trained: move the slider to see it as it was at each snapshot")
        self.names: list[str] = []
        self.title = QLabel("<b>Over training</b>")
        self.play_button = QPushButton("Play")  # the style's media icons: no font glyph to miss (DejaVu has no "⏸")
        self.play_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaPlay))
        self.play_button.setCheckable(True)
        self.play_button.setToolTip("Animate through the snapshots, one a second (from the first when at the last)")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("The snapshot explored: every view decodes the sentence with the model as it was then")
        self.slider.setTickPosition(QSlider.TickPosition.TicksBelow)
        self.slider.setPageStep(1)
        self.name = ElidedLabel()
        self.name.setStyleSheet("font-weight: bold;")
        self.name.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details = ElidedLabel()
        self.details.setToolTip("What the recording kept of this snapshot: its training loss and its validation scores")
        self.busy = QLabel()
        self.busy.setStyleSheet("color: palette(mid); font-style: italic;")
        self.compare_box = QComboBox()
        self.compare_box.setToolTip("A second snapshot: the focus and grid show the explored one minus it, or both side by side")
        self.mode_box = QComboBox()
        for mode, text in MODES:
            self.mode_box.addItem(text, mode)
        self.loop = QCheckBox("Loop")
        self.loop.setToolTip("Play from the first snapshot again at the end (else stop at the last)")
        self.same_output = QCheckBox("Same output")
        self.same_output.setChecked(True)
        self.same_output.setToolTip(
            "Every snapshot is made to write the output explored (✎ marks only your own forced tokens), so views and "
            "steps compare; unchecked, each snapshot writes its own (an early one often stops at once)"
        )
        # Long names, scores and snapshot lists never widen the window: the labels take what the row leaves them, ended
        # with "…" when cut (the whole text in their tooltips), the box is as wide as about 16 characters.
        self.compare_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.compare_box.setMinimumContentsLength(16)
        self._layout()
        self.timer = QTimer(self)
        self.timer.setInterval(int(interval_s * 1000))
        self.timer.timeout.connect(self.tick)
        self.slider.valueChanged.connect(self.index_chosen)
        self.play_button.toggled.connect(self.play_toggled)
        self.loop.toggled.connect(self.loop_toggled)
        self.same_output.toggled.connect(self.same_output_toggled)
        self.compare_box.activated.connect(self._on_compare_chosen)
        self.mode_box.activated.connect(self._on_compare_chosen)

    def _layout(self) -> None:
        top = QHBoxLayout()
        for widget, stretch in ((self.title, 0), (self.play_button, 0), (self.slider, 1), (self.name, 0)):
            top.addWidget(widget, stretch)
        bottom = QHBoxLayout()
        bottom.addWidget(self.details, 1)
        bottom.addWidget(self.busy)
        for other in (QLabel("Compare with:"), self.compare_box, self.mode_box, self.same_output, self.loop):
            bottom.addWidget(other)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addLayout(bottom)

    # --- what is shown ---------------------------------------------------------------------------
    def set_snapshots(self, names: list[str]) -> None:
        """The timeline's snapshots, named ("step 1,200 of 9,000"), oldest first."""
        self.names = list(names)
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(len(names) - 1, 0))
        self.slider.blockSignals(False)
        self.compare_box.clear()
        self.compare_box.addItem(NO_COMPARISON, None)
        for index, name in enumerate(names):
            self.compare_box.addItem(f"{index}: {name.split(' of ')[0]}", index)
        self.set_playing(False)

    def show_snapshot(self, index: int, details: str) -> None:
        """The slider at snapshot ``index``, named, with its training loss and validation scores."""
        self.slider.blockSignals(True)
        self.slider.setValue(index)
        self.slider.blockSignals(False)
        name = self.names[index] if 0 <= index < len(self.names) else ""
        if index == len(self.names) - 1:  # one parenthesis: 'step 9 of 9 (final: the weights of step 8; the model as opened)'
            name = f"{name[:-1]}; the model as opened)" if name.endswith(")") else f"{name} (the model as opened)"
        self.name.setText(name)
        self.details.setText(f"Snapshot {index} of 0–{len(self.names) - 1}: {details}")  # from 0, as the command counts
        self.name.setToolTip(self.name.full_text)
        self.details.setToolTip(self.details.full_text)

    def set_playing(self, playing: bool) -> None:
        self.play_button.blockSignals(True)
        self.play_button.setChecked(playing)
        self.play_button.blockSignals(False)
        self.play_button.setText("Pause" if playing else "Play")
        icon = QStyle.StandardPixmap.SP_MediaPause if playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_button.setIcon(self.style().standardIcon(icon))
        if playing:
            self.timer.start()
        else:
            self.timer.stop()

    def set_busy(self, busy: bool) -> None:
        self.busy.setText("decoding…" if busy else "")

    def set_comparison(self, index: int | None, mode: str) -> None:
        """The second snapshot shown (None: none) and how."""
        position = self.compare_box.findData(index) if index is not None else 0
        self.compare_box.setCurrentIndex(max(position, 0))
        self.mode_box.setCurrentIndex(max(self.mode_box.findData(mode), 0))

    def _on_compare_chosen(self, _position: int) -> None:
        self.compare_chosen.emit(self.compare_box.currentData(), self.mode_box.currentData())
