"""A second open model that follows the session's decoding: the same sentence, stepping together.

The Explore tab's "Side by side" view puts the session's model next to this one (e.g. the Transformer's best
cross-attention head next to the RNN's attention). It listens to the session: a new sentence is decoded again
here with the same options, and each step forward or back, jump or reset moves this decoding to the same step
(when the session's decoding has ended, this one runs to its own end). Which head each side shows is chosen
once per model, in a worker, by its alignment with toy-fr's gold alignments (model/inspection/comparison.py);
a sentence drawn from toy-fr keeps its gold pair, so each side also gets its AER on that sentence.
It emits ``changed`` with the panels to draw (or an empty list), and ``message`` with what the user should read.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from explorer.workers import start_task
from model.data.corpora import Pair, toy_fr
from model.decoding.stepper import Stepper
from model.errors import UserError
from model.inspection.comparison import FRESH_SEED, HeadChoice, Panel, best_alignment_head, gold_pair, make_panel, sentence_aer
from model.kinds import AttentionKind


def model_name(bundle) -> str:
    """The name a user knows a model by: its file's stem, or its description."""
    return Path(bundle.path).stem if bundle.path else bundle.describe().split(":")[0]


def can_compare(bundle) -> str:
    """Why a model cannot be put side by side ('' when it can): the view compares cross-attention."""
    can = bundle.family.capabilities
    if AttentionKind.CROSS not in can.kinds:
        return f"{model_name(bundle)} has no cross-attention to compare (it is {can.architecture.value})"
    return ""


class CompareSession(QObject):
    changed = Signal(object)  # list[Panel]: the session's model first, then the second (empty: nothing to show)
    message = Signal(str)

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.bundle = None  # the second model
        self.stepper: Stepper | None = None
        self.text = ""
        self.choices: dict[int, tuple[object, HeadChoice]] = {}  # id(bundle) -> (bundle, the head shown)
        self.overrides: dict[int, tuple[int, int | str]] = {}  # id(bundle) -> (layer, head) the user chose instead
        self.known_pairs: dict[str, Pair] = {}  # toy-fr sentences drawn here, with their gold alignments
        self._aer: dict[tuple, float | None] = {}  # (id(bundle), sentence, head) -> the sentence's AER
        self._tasks: set = set()
        self._fresh = toy_fr.ToyFrenchGenerator(FRESH_SEED)
        session.trace_changed.connect(self._on_trace_changed)
        session.model_changed.connect(self._on_model_changed)

    # --- the second model -----------------------------------------------------------------------
    def set_model(self, bundle) -> bool:
        """Put ``bundle`` beside the session's model; False (and a message) when it cannot be compared."""
        why = can_compare(bundle)
        if why:
            self.message.emit(why + ".")
            return False
        self.bundle, self.stepper, self.text = bundle, None, ""
        self._choose_head(bundle)
        if self.session.bundle is not None and not can_compare(self.session.bundle):
            self._choose_head(self.session.bundle)
        self._follow()
        return True

    def open(self, path: str) -> None:
        """Load a model file or a shipped model in a worker, then put it beside the session's model."""
        from model.io.models import open_model

        def done(bundle) -> None:
            self._tasks.discard(task)
            self.set_model(bundle)

        def failed(text: str) -> None:
            self._tasks.discard(task)
            self.message.emit(f"Could not open {path}: {text}")

        task = start_task(lambda: open_model(path), done, failed, daemon=True)
        self._tasks.add(task)

    def unavailable(self) -> str:
        """Why there is nothing side by side ('' when there is)."""
        session = self.session
        if session.bundle is None:
            return "Open or train a model first: it is shown on the left."
        why = can_compare(session.bundle)
        if why:
            return f"{why}: the side-by-side view compares cross-attention."
        if self.bundle is None:
            return (
                "Choose a model to put beside it (e.g. the RNN with Bahdanau attention, rnn-bahdanau, beside the "
                "Transformer, default): both decode the sentence and step together."
            )
        if session.trace is None:
            return "Translate a sentence: both models decode it, step by step together."
        return ""

    def clear(self) -> None:
        self.bundle, self.stepper, self.text = None, None, ""
        self.changed.emit([])

    @property
    def active(self) -> bool:
        return self.bundle is not None

    def _on_model_changed(self, bundle) -> None:
        if self.bundle is not None and bundle is not None and not can_compare(bundle):
            self._choose_head(bundle)
        self.changed.emit(self.panels())

    def _choose_head(self, bundle) -> None:
        """The head shown for ``bundle``: its last layer's mean at once, its best alignment head when measured."""
        key = id(bundle)
        if key in self.choices:
            return
        shown = {id(b) for b in (bundle, self.bundle, self.session.bundle) if b is not None}
        self.choices = {k: v for k, v in self.choices.items() if k in shown}  # a model replaced is not kept alive
        self.choices[key] = (bundle, HeadChoice(max(bundle.config.n_decoder_layers - 1, 0), "mean", None, 0))

        def done(choice: HeadChoice) -> None:
            self._tasks.discard(task)
            if key in self.choices:
                self.choices[key] = (bundle, choice)
                self._publish()

        def failed(text: str) -> None:
            self._tasks.discard(task)
            self.message.emit(f"The best alignment head of {model_name(bundle)} could not be measured: {text}")

        task = start_task(lambda: best_alignment_head(bundle), done, failed, daemon=True)
        self._tasks.add(task)

    def set_head(self, side: int, head: tuple[int, int | str] | None) -> None:
        """Show (layer, head) on ``side`` (0: the session's model, 1: the second); None: its best-aligning head."""
        bundle = self.session.bundle if side == 0 else self.bundle
        if bundle is None:
            return
        if head is None:
            self.overrides.pop(id(bundle), None)
        else:
            self.overrides[id(bundle)] = head
        self._publish()

    def head_of(self, bundle) -> HeadChoice:
        """The head shown for ``bundle``: the user's choice, else its best-aligning one (the last layer's mean
        until that is measured)."""
        if id(bundle) in self.overrides:
            layer, head = self.overrides[id(bundle)]
            return HeadChoice(layer, head, None, 0)
        default = HeadChoice(max(bundle.config.n_decoder_layers - 1, 0), "mean", None, 0)
        return self.choices.get(id(bundle), (bundle, default))[1]

    # --- sentences with gold alignments ---------------------------------------------------------
    def fresh_sentence(self) -> str:
        """A toy-fr source sentence not seen in training, whose gold alignment is kept for the AER."""
        pair = self._fresh.pair()
        self.known_pairs[" ".join(pair.source.split())] = pair
        return pair.source

    def gold(self, text: str) -> Pair | None:
        return gold_pair(text, self.known_pairs)

    # --- following the session ------------------------------------------------------------------
    def _on_trace_changed(self, trace) -> None:
        self._follow()  # with no second model: an empty list, so the view says what is missing

    def _follow(self) -> None:
        session = self.session
        if self.bundle is None or session.trace is None or session.stepper is None:
            self.changed.emit([])
            return
        if self.stepper is None or session.text != self.text:
            self.text = session.text
            try:
                self.stepper = Stepper(self.bundle, session.text, session.options)
            except UserError:
                try:  # an option this model cannot take (a beam for a decoder-only one): greedy instead
                    self.stepper = Stepper(self.bundle, session.text, replace(session.options, strategy="greedy"))
                except UserError as error:
                    self.stepper = None
                    self.message.emit(f"{model_name(self.bundle)} cannot read this sentence: {error}")
                    self.changed.emit([])
                    return
        if session.finished:
            self.stepper.run()
        else:
            self.stepper.jump(session.current_step)
        self._publish()

    def panels(self) -> list[Panel]:
        """The session's model and the second one, at the shared step; [] when either has nothing to show."""
        session = self.session
        if self.bundle is None or self.stepper is None or session.bundle is None or session.trace is None:
            return []
        if can_compare(session.bundle):
            return []
        gold = self.gold(session.text)
        panels = []
        for bundle, trace in ((session.bundle, session.trace), (self.bundle, self.stepper.trace())):
            choice = self.head_of(bundle)
            panel = make_panel(model_name(bundle), bundle, trace, choice, None)
            if gold is not None:  # teacher-forced on the reference: measured once per sentence and head, not per step
                key = (id(bundle), gold.source, choice)
                if key not in self._aer:
                    self._aer[key] = sentence_aer(bundle, gold, choice)
                panel.sentence_aer = self._aer[key]
            panels.append(panel)
        return panels

    def _publish(self) -> None:
        self.changed.emit(self.panels())
