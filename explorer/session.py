"""The one session object the views listen to: the active model and the decoding being explored.

It owns the sentence and the decoding options, and it alone decodes: when the model changes it decodes
the sentence again through the new one (replacing a sentence the model cannot read by an example it
can, and saying so). Views read the decoding ``Trace`` it emits (tokens, attention, candidates, the
beam), never the model; everything that changes what is shown goes through a method here, which
emits a signal.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from explorer.runtime import for_light_work
from model.data.corpora import CorpusError, generate_builtin
from model.data.corpora.files import read_moses, read_tsv
from model.data.tokenizer import UNK_ID
from model.decoding.stepper import DecodingOptions, Stepper
from model.decoding.trace import Trace
from model.errors import UserError
from model.io.checkpoint import ModelBundle

WORD_MARK = "▁"  # SentencePiece's word-start piece: a lone one says nothing about the words
UNREADABLE_SHARE = 0.5  # a sentence more than half of whose pieces are unknown cannot be read by the model
EXAMPLE_CANDIDATES = 20  # sentences tried from the history or the corpus
MAX_EXAMPLE_PIECES = 24  # an example stays short enough to read its attention
MAX_CORPUS_FILE_BYTES = 50 * 1024 * 1024  # a larger corpus file is not read just to find an example


class Session(QObject):
    model_changed = Signal(object)  # ModelBundle or None
    trace_changed = Signal(object)  # Trace or None
    message = Signal(str)  # something the user should read (truncation, a forced token, an error)
    text_replaced = Signal(str, str)  # (the sentence decoded instead of the user's, why): the controls show it

    def __init__(self):
        super().__init__()
        self.bundle: ModelBundle | None = None
        self.stepper: Stepper | None = None
        self.trace: Trace | None = None
        self.text = ""
        self.options = DecodingOptions()
        self.masked_heads: tuple = ()  # model.nn.masking.Head: knocked out in the active model
        self.total_steps = 0  # length of the decoding as far as it has gone (the step slider's end)
        self._trained: ModelBundle | None = None  # the last model trained in this session

    # --- the model ------------------------------------------------------------------------------
    def set_model(self, bundle: ModelBundle | None, trained: bool = False) -> None:
        """Make ``bundle`` the active model; ``trained``: it was just trained here (and is not saved yet)."""
        if trained or bundle is not self._trained:
            self._trained = bundle if trained else None  # a model replaced is not kept alive here
        if bundle is not None:
            for_light_work()  # decoding here, in the window's thread, leaves the cores to training
        self.bundle = bundle
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
        return self.bundle is not None and self.bundle is self._trained and self.bundle.path is None

    # --- whether the model can read a sentence ----------------------------------------------------
    def unknown_share(self, text: str) -> float:
        """Share of the sentence's source pieces (lone word marks aside) that the active model's source
        tokenizer does not know (<unk>); 0 without a model or text."""
        if self.bundle is None:
            return 0.0
        tokenizer = self.bundle.source_tokenizer
        unk_id = getattr(tokenizer, "unk_id", UNK_ID)  # a pretrained tokenizer's own
        ids = [i for i in tokenizer.encode(text) if tokenizer.piece(i) != WORD_MARK]
        return sum(i == unk_id for i in ids) / len(ids) if ids else 0.0

    def can_read(self, text: str) -> bool:
        return self.unknown_share(text) <= UNREADABLE_SHARE

    def example_sentence(self) -> tuple[str, str] | None:
        """A short source sentence the active model can read, and where it comes from: a sample
        translation of its training history, or a sentence of its corpus (a built-in one is generated
        again; a file is read if it is still there). None when nothing fits."""
        bundle = self.bundle
        if bundle is None:
            return None
        for text, origin in self._example_candidates(bundle):
            text = " ".join(str(text).split())
            if text and len(bundle.source_tokenizer.encode(text)) <= MAX_EXAMPLE_PIECES and self.unknown_share(text) == 0.0:
                return text, origin
        return None

    @staticmethod
    def _example_candidates(bundle: ModelBundle):
        for text in bundle.examples:  # a pretrained model's: its task prefix, a mask token
            yield text, "an example for this kind of model"
        for validation in reversed(bundle.history.get("validations") or []):
            for sample in (validation.get("samples") or [])[:EXAMPLE_CANDIDATES]:
                if sample:
                    yield sample[0], "its training history's sample translations"
        corpus = bundle.corpus
        if corpus is None:
            return
        try:
            if corpus.is_builtin:
                pairs = generate_builtin(corpus.name, EXAMPLE_CANDIDATES, corpus.seed)
            elif Path(corpus.name).is_file() and Path(corpus.name).stat().st_size <= MAX_CORPUS_FILE_BYTES:
                pairs = (
                    read_moses(corpus.name, corpus.target_path, skip_malformed=True)
                    if corpus.target_path
                    else read_tsv(corpus.name, skip_malformed=True)
                ).pairs[:EXAMPLE_CANDIDATES]
            else:
                return  # the corpus file has moved, or is too large to read for one example
        except (CorpusError, OSError):  # the file moved or became unreadable: no example from it
            return
        for pair in pairs:
            yield pair.source, f"its corpus ({corpus.describe()})"

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
            self.stepper = Stepper(self.bundle, text, replace(self.options, masked_heads=self.masked_heads))
        except UserError as error:
            self.message.emit(str(error))
            return False
        self.total_steps = 0
        for text_message in self.stepper.messages:
            self.message.emit(text_message[0].upper() + text_message[1:] + ".")
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
        share, example = self.unknown_share(text), self.example_sentence()
        quoted = text if len(text) <= 60 else text[:57].rstrip() + "…"
        unknown = f"{share:.0%} of the pieces of “{quoted}” are unknown (<unk>) to this model's source vocabulary"
        if example is None:
            self.translate(text)
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

    def toggle_head(self, head) -> None:
        """Knock ``head`` (a masking.Head) out, or put it back, and decode the sentence again at once."""
        from model.nn.masking import Head, check_heads, describe_heads

        assert isinstance(head, Head)
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
        token = self.bundle.target_tokenizer.piece(token_id)
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
