"""The Explore controller: the active model and the decoding being explored (no Qt: the views observe its events).

It owns the sentence and the decoding options, and it alone decodes: when the model changes it decodes the
sentence again through the new one (replacing a sentence the model cannot read by an example it can, and saying
so: explorer/controllers/examples.py). Views read the decoding ``Trace`` it emits (tokens, attention, candidates,
the beam), never the model; everything that changes what is shown goes through a method here, which emits an event.

What the views show (the kind of attention, the layer, the head or an aggregate, words or pieces) is ``view``, an
``ExploreView`` (model/inspection/view.py) kept here, the one source of truth: the tab's boxes, the views, the Neuron
view and the exports read it, and every choice (a box, a grid cell, a phase change clicked in *Over training*) goes
through ``choose_view``, which emits ``view_changed``.

A model opened with a timeline of its training can be explored as it was at a snapshot (explorer/controllers/
timeline.py): ``bundle`` is then that snapshot's model and ``opened`` the model opened (what is saved, and what the
session keeps); the sentence, options, step and heads knocked out stay as they were.
"""

from __future__ import annotations

from dataclasses import replace

from psygnal import Signal

from explorer.controllers.examples import can_read, example_sentence, unknown_share
from explorer.runtime import for_light_work
from model.decoding.stepper import DecodingOptions, Stepper
from model.decoding.trace import Trace
from model.errors import UserError
from model.family import Bundle
from model.inspection.view import ExploreView
from model.nn.masking import Head, check_heads, describe_heads


class ExploreController:
    """Events: ``model_changed(bundle or None)``, ``trace_changed(trace or None)``, ``message(text)`` (something
    the user should read: truncation, a forced token, an error), ``text_replaced(sentence, why)`` (the sentence
    decoded instead of the user's: the controls show it), ``snapshot_changed(name)`` (the snapshot of the opened
    model's training explored now, "" for none: before the trace it decodes), ``weights_changed(bundle)`` (another
    snapshot's model is explored: what was measured of the last one is stale), ``view_changed(view)`` (what the views
    show was chosen: ``view``); ``running``/``running_changed`` as every controller has (always False here)."""

    model_changed = Signal(object)
    trace_changed = Signal(object)
    message = Signal(str)
    text_replaced = Signal(str, str)
    running_changed = Signal(bool)  # never emitted: decoding runs on the window's thread
    snapshot_changed = Signal(str)
    weights_changed = Signal(object)
    view_changed = Signal(object)

    def __init__(self) -> None:
        self.view = ExploreView()  # what the user chose to see (fitted to each trace when drawn)
        self.bundle: Bundle | None = None  # the model explored: the one opened, or a snapshot of its training
        self.opened: Bundle | None = None  # the model opened or trained (what is saved)
        self.snapshot = ""  # the snapshot explored ("step 1,200 of 9,000"), "" when the model has no timeline
        self.stepper: Stepper | None = None
        self.trace: Trace | None = None
        self.text = ""
        self.options = DecodingOptions()
        self.masked_heads: tuple[Head, ...] = ()  # knocked out in the active model
        self.sentence_noted = False  # the last sentence decoded had a note (unknown pieces, a cut): the status bar says it
        self.total_steps = 0  # length of the decoding as far as it has gone (the step slider's end)
        self.focused_source: int | None = None  # a source piece pointed at (a corpus search's result), marked in the tab
        self._trained: Bundle | None = None  # the last model trained in this session

    @property
    def running(self) -> bool:
        """Nothing of the Explore controller runs in the background: it decodes on the window's thread at once."""
        return False

    # --- the model ------------------------------------------------------------------------------
    def set_model(self, bundle: Bundle | None, trained: bool = False) -> None:
        """Make ``bundle`` the active model; ``trained``: it was just trained here (and is not saved yet)."""
        if trained or bundle is not self._trained:
            self._trained = bundle if trained else None  # a model replaced is not kept alive here
        if bundle is not None:
            for_light_work()  # decoding here, in the window's thread, leaves the cores to training
        self.bundle = self.opened = bundle
        self.snapshot = ""
        self.masked_heads = ()  # another model's heads are other heads
        self.stepper = None
        self.trace = None
        self.trace_changed.emit(None)
        self.model_changed.emit(bundle)
        if bundle is not None and self.text.strip():
            self.translate_readable(self.text)  # the sentence being explored, through the new model

    def set_source(self, text: str, options: DecodingOptions | None = None) -> None:
        """The sentence (and options) to decode once there is a model, without decoding now."""
        self.text = text
        if options is not None:
            self.options = options

    def has_unsaved_training(self) -> bool:
        """Whether the active model was trained in this session and never saved (replacing it loses it)."""
        return self.opened is not None and self.opened is self._trained and self.opened.path is None

    # --- what the views show ------------------------------------------------------------------------
    def choose_view(self, view: ExploreView | None = None, **changes) -> None:
        """Show ``view`` (the current one when None) with ``changes`` (kind, layer, head, word_level, hypothesis): the
        one path of every choice of what the views show; ``view_changed`` when it changed."""
        chosen = replace(view if view is not None else self.view, **changes)
        if chosen != self.view:
            self.view = chosen
            self.view_changed.emit(chosen)

    # --- a snapshot of the opened model's training -------------------------------------------------
    def name_snapshot(self, name: str) -> None:
        """Name the snapshot explored now (the model as opened is the timeline's last): the views' titles follow."""
        self.snapshot = name
        self.snapshot_changed.emit(name)
        if self.trace is not None:
            self.trace_changed.emit(self.trace)

    def show_snapshot(self, bundle: Bundle, name: str, stepper: Stepper | None, total_steps: int = 0) -> None:
        """Explore ``bundle``, the opened model as it was at the snapshot ``name``, with ``stepper`` its decoding of the
        sentence (made in a job, with this controller's text, options and heads knocked out, at its step; None when
        nothing is decoded), ``total_steps`` long to its end."""
        changed = bundle is not self.bundle
        self.bundle, self.snapshot = bundle, name
        if changed:
            self.weights_changed.emit(bundle)
        self.snapshot_changed.emit(name)
        self.stepper = stepper
        if stepper is None:
            self.trace = None
            self.trace_changed.emit(None)
            return
        self.total_steps = total_steps
        self._publish()

    def decoding_state(self) -> tuple[str, DecodingOptions, int | None]:
        """(the sentence, the options with the heads knocked out, the step shown or None at the decoding's end): what
        a snapshot's decoding repeats."""
        step = None if self.finished else self.current_step
        return self.text, replace(self.options, masked_heads=self.masked_heads), step

    # --- whether the model can read a sentence ----------------------------------------------------
    def unknown_share(self, text: str) -> float:
        """Share of the sentence's source pieces the active model's source tokenizer does not know (<unk>)."""
        return unknown_share(self.bundle, text)

    def can_read(self, text: str) -> bool:
        return can_read(self.bundle, text)

    # --- decoding -------------------------------------------------------------------------------
    def translate(self, text: str, options: DecodingOptions | None = None, run: bool = True, unknown_said: bool = False) -> bool:
        """Start decoding ``text``; with ``run`` decode to the end. False (and a message) when it cannot.
        ``unknown_said``: the caller says itself how much of the text the model does not know."""
        self.text = text
        self.focused_source = None
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
            self.stepper = Stepper(self.bundle, text, replace(self.options, masked_heads=self.masked_heads))
        except UserError as error:
            self.message.emit(str(error))
            return False
        self.total_steps = 0
        notes = [note for note in self.stepper.messages if not (unknown_said and note == self.stepper.unknown_note)]
        if notes:  # one line, so that none hides another (a cut sentence and unknown pieces)
            self.message.emit(" ".join(note[0].upper() + note[1:] + "." for note in notes))
        elif self.sentence_noted:  # the last sentence's note no longer holds: the window clears it
            self.message.emit("")
        self.sentence_noted = bool(notes)
        if run:
            self.stepper.run()
        self._publish()
        return True

    def translate_readable(self, text: str) -> None:
        """Decode ``text``; one mostly unknown to the model's source tokenizer (a corpus of another language
        or symbols) is replaced by an example the model can read, and ``text_replaced`` says why."""
        if self.bundle is None or self.can_read(text):
            self.translate(text)
            return
        share, example = self.unknown_share(text), example_sentence(self.bundle)
        quoted = text if len(text) <= 60 else text[:57].rstrip() + "…"
        unknown = f"{share:.0%} of the pieces of “{quoted}” are unknown (<unk>) to this model's source vocabulary"
        if example is None:
            self.translate(text, unknown_said=True)
            self.text_replaced.emit(
                text,
                f"{unknown}, and no example sentence was found for it: type a sentence "
                "in the language (or symbols) it was trained on.",
            )
            return
        sentence, origin = example
        self.translate(sentence)
        self.text_replaced.emit(sentence, f"{unknown}: showing “{sentence}”, from {origin}, instead.")
        self.message.emit(f"Example sentence replaced by one this model can read, from {origin}.")

    def show_token(self, text: str, side: str, position: int | None, origin: str) -> bool:
        """Decode ``text`` (from ``origin``, e.g. a corpus index) to its end and point at one of its tokens: a source
        piece (``side`` "encoder") is marked among the source pieces; decoder position p (its input piece) is shown at
        the step that reads it, p + 1 tokens decoded. The controls show the sentence (``text_replaced``)."""
        if not self.translate(text):
            return False
        if position is not None and side == "encoder":
            self.focused_source = position
            self._publish()
        elif position is not None:
            self.go_to_step(position + 1)
        self.text_replaced.emit(text, f"Opened {origin}.")  # after the views are drawn: the tab's hint says it
        return True

    def toggle_head(self, head: Head) -> None:
        """Knock ``head`` out, or put it back, and decode the sentence again at once."""
        heads = set(self.masked_heads) ^ {head}
        wanted = tuple(sorted(heads, key=Head.sort_key))
        if self.bundle is not None:
            try:
                check_heads(self.bundle.model, wanted)
            except UserError as error:
                self.message.emit(str(error))
                return
        self.masked_heads = wanted
        what = "knocked out" if head in heads else "put back"
        self.message.emit(f"{head.describe()} {what}; heads out: {describe_heads(self.masked_heads)}.")
        if self.text.strip():
            self.translate(self.text)

    def choose_languages(self, source: str, target: str) -> None:
        """The open (multilingual) model reads ``source`` and writes ``target``, and the sentence is decoded again;
        a code it does not have is refused in one line."""
        if self.bundle is None:
            return
        try:
            self.bundle.choose_languages(source or None, target or None)
        except UserError as error:
            self.message.emit(str(error))
            return
        self.message.emit(f"Reading {source}, writing {target}: decoding starts with the code {target}, forced.")
        if self.text.strip():
            self.translate(self.text)

    def restore_heads(self) -> None:
        """Every head back, and the sentence decoded again."""
        if self.masked_heads:
            self.masked_heads = ()
            self.message.emit("Every head is back.")
            if self.text.strip():
                self.translate(self.text)

    def _publish(self) -> None:
        stepper = self.stepper
        if stepper is None:
            return
        if stepper.finished or len(stepper.steps) > self.total_steps:
            self.total_steps = len(stepper.steps)
        self.trace = stepper.trace()
        self.trace_changed.emit(self.trace)

    @property
    def hypothesis_rank(self) -> int | None:
        """The beam hypothesis being shown (0 = best); None off the beam."""
        return self.trace.hypothesis_rank if self.trace is not None else None

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
        except UserError as error:
            self.message.emit(str(error))
            return
        self.stepper.run()
        self.total_steps = 0
        token = self.stepper.bundle.target_tokenizer.piece(token_id)
        self.message.emit(f"Step {step_index + 1} forced to “{token}”; decoded on from there.")
        self._publish()

    def show_hypothesis(self, rank: int) -> None:
        """Step through beam hypothesis ``rank`` (0 = best) to its end and show its attention."""
        if self.stepper is None or self.stepper.beam is None:
            return
        try:
            self.stepper.follow_hypothesis(rank)
        except UserError as error:
            self.message.emit(str(error))
            return
        self.total_steps = 0
        self.stepper.run()
        self._publish()
