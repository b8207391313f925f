"""The one session object the views listen to: the active model and the decoding being explored.

Views never reach into the model's modules; they read ``session.bundle`` metadata and the decoding
``Trace`` that the session emits. Everything that changes what is shown goes through a method
here, which emits a signal.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from model.checkpoint import ModelBundle
from model.device import set_cpu_threads
from model.stepper import DecodingError, DecodingOptions, Stepper
from model.trace import Trace


class Session(QObject):
    model_changed = Signal(object)  # ModelBundle or None
    trace_changed = Signal(object)  # Trace or None
    message = Signal(str)  # something the user should read (truncation, a forced token, an error)

    def __init__(self):
        super().__init__()
        self.bundle: ModelBundle | None = None
        self.stepper: Stepper | None = None
        self.trace: Trace | None = None
        self.text = ""
        self.options = DecodingOptions()
        self.hypothesis_rank: int | None = None  # the beam hypothesis shown, when one was clicked
        self.total_steps = 0  # length of the decoding as far as it has gone (the step slider's end)

    # --- the model ------------------------------------------------------------------------------
    def set_model(self, bundle: ModelBundle | None) -> None:
        if bundle is not None:
            set_cpu_threads(1)  # decoding here, in the window's thread, leaves the cores to training
        self.bundle = bundle
        self.stepper = None
        self.trace = None
        self.trace_changed.emit(None)
        self.model_changed.emit(bundle)
        if bundle is not None and self.text and self.stepper is None:
            self.translate(self.text)  # the sentence being explored, through the new model

    def describe_model(self) -> str:
        if self.bundle is None:
            return "No model"
        return self.bundle.describe()

    # --- decoding -------------------------------------------------------------------------------
    def translate(self, text: str, options: DecodingOptions | None = None, run: bool = True) -> bool:
        """Start decoding ``text``; with ``run`` decode to the end. False (and a message) when it cannot."""
        self.text = text
        if options is not None:
            self.options = options
        if self.bundle is None:
            self.message.emit("Open or train a model first (File ▸ Open model…, or the Train tab).")
            return False
        if not text.strip():
            self.stepper, self.trace = None, None
            self.trace_changed.emit(None)
            self.message.emit("Type a sentence to translate.")
            return False
        try:
            self.stepper = Stepper(self.bundle, text, self.options)
        except (DecodingError, ValueError) as error:
            self.message.emit(str(error))
            return False
        self.hypothesis_rank = 0 if self.stepper.beam is not None else None
        self.total_steps = 0
        for text_message in self.stepper.messages:
            self.message.emit(text_message[0].upper() + text_message[1:] + ".")
        if run:
            self.stepper.run()
        self._publish()
        return True

    def _publish(self) -> None:
        stepper = self.stepper
        if stepper is None:
            return
        if stepper.finished or len(stepper.steps) > self.total_steps:
            self.total_steps = len(stepper.steps)
        self.trace = stepper.trace()
        self.trace_changed.emit(self.trace)

    @property
    def current_step(self) -> int:
        return len(self.stepper.steps) if self.stepper is not None else 0

    @property
    def finished(self) -> bool:
        return self.stepper is None or self.stepper.finished

    def step_forward(self) -> bool:
        if self.stepper is None or self.stepper.finished:
            return False
        self.stepper.step()
        self._publish()
        return True

    def step_back(self) -> bool:
        if self.stepper is None or not self.stepper.back():
            return False
        self._publish()
        return True

    def run_to_end(self) -> None:
        if self.stepper is not None:
            self.stepper.run()
            self._publish()

    def reset(self) -> None:
        if self.stepper is not None:
            self.stepper.reset()
            self._publish()

    def go_to_step(self, n_steps: int) -> None:
        """Show the decoding after ``n_steps`` tokens (what the step slider sets)."""
        if self.stepper is None:
            return
        self.stepper.jump(n_steps)
        self._publish()

    def force(self, step_index: int, token_id: int) -> None:
        """What-if: make step ``step_index`` choose ``token_id`` and decode on from there."""
        if self.stepper is None:
            return
        try:
            self.stepper.force(step_index, token_id)
        except (DecodingError, ValueError) as error:
            self.message.emit(str(error))
            return
        self.stepper.run()
        self.hypothesis_rank = None
        self.total_steps = 0
        token = self.bundle.target_tokenizer.piece(token_id)
        self.message.emit(f"Step {step_index + 1} forced to “{token}”; decoded on from there.")
        self._publish()

    def show_hypothesis(self, rank: int) -> None:
        """Step through beam hypothesis ``rank`` (0 = best) to its end and show its attention."""
        if self.stepper is None or self.stepper.beam is None:
            return
        try:
            self.stepper.follow_hypothesis(rank)
        except DecodingError as error:
            self.message.emit(str(error))
            return
        self.hypothesis_rank = rank
        self.total_steps = 0
        self.stepper.run()
        self._publish()
