"""A second open model that follows the Explore controller's decoding: the same sentence, stepping together.

The Explore tab's "Side by side" view puts the explored model next to this one (e.g. the Transformer's best
cross-attention head next to the RNN's attention). It listens to the Explore controller: a new sentence is decoded
again here with the same options, and each step forward or back, jump or reset moves this decoding to the same step
(when the explored decoding has ended, this one runs to its own end). Which head each side shows is chosen once per
model, in a job of the runner, by its alignment with toy-fr's gold alignments (model/inspection/comparison.py: the
app's one best head, on ``aer_pairs`` held-out toy-fr test pairs drawn with ``aer_seed``, 200 and 0 by default as
everywhere, both named beside the AER); a sentence drawn from toy-fr keeps its gold pair, so each side also gets its
AER on that sentence.
It emits ``changed`` with the panels to draw (or an empty list) and the note to show above them, and ``message``
with what the user should read.
A snapshot of the opened model's training (explorer/controllers/timeline.py) shows the head chosen for the opened
model, and is named by its snapshot: on the left when it is explored, on the right when it is put beside it. Its
heading says that head is the final model's, with the AER it has there, and the snapshot's own AER of it on the same
pairs (measured in a job per snapshot: an early snapshot's head is uniform, whatever the final model's aligns); an
output the snapshot was made to write (*Same output*) is labelled as forced, with whose it is.
"""

from __future__ import annotations

from dataclasses import replace

from psygnal import Signal

from explorer.controllers.background import model_name
from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Runner
from model.data.corpora import Pair, toy_fr
from model.decoding.stepper import Stepper
from model.decoding.trace import Trace
from model.errors import UserError
from model.family import Bundle
from model.inspection.alignment import AER_PAIRS, AER_SEED, AlignmentReport, measured_aer
from model.inspection.comparison import FRESH_SEED, HeadChoice, Panel, best_alignment_head, gold_pair, make_panel, sentence_aer
from model.io.models import open_model
from model.kinds import AttentionKind
from model.timeline.traces import forced_stepper

OPEN_CHANNEL = "compare-open"
GOLD_NOTE = "Gold alignment known for this sentence: each side's AER is read teacher-forced on its reference."
NO_GOLD_NOTE = "A typed sentence has no gold alignment: “toy-fr sentence” draws one that has (each side's AER is then shown)."
FINAL_MODEL = "the final model"  # what a snapshot calls the model as opened (the timeline's last snapshot)
EXPLORED_OUTPUT = "the output explored (Same output)"  # what a snapshot is made to write with Same output


def can_compare(bundle: Bundle) -> str:
    """Why a model cannot be put side by side ('' when it can): the view compares cross-attention."""
    can = bundle.family.capabilities
    if AttentionKind.CROSS not in can.kinds:
        return f"{model_name(bundle)} has no cross-attention to compare (it is {can.architecture.value})"
    return ""


class CompareController:
    """Events: ``changed(panels, note)`` (list[Panel]: the explored model first, then the second; empty: nothing to
    show, the note then says why), ``message(text)``, ``running_changed(bool)`` (a model or a best head is measured)."""

    changed = Signal(list, str)
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore = explore
        self.runner = runner
        self.bundle: Bundle | None = None  # the second model
        self.stepper: Stepper | None = None
        self.text = ""
        self.choices: dict[int, tuple[Bundle, HeadChoice]] = {}  # id(bundle) -> (bundle, the head shown)
        self.overrides: dict[int, tuple[int, int | str]] = {}  # id(bundle) -> (layer, head) the user chose instead
        self.beside_name = ""  # what the second model is called instead of its file's name (a snapshot's name)
        self.beside_like: Bundle | None = None  # the model whose head choice the second one shows (a snapshot's)
        self.same_output = False  # the second model made to write the explored decoding's tokens (a snapshot)
        self.forced_stepper: Stepper | None = None  # the explored decoding, when the timeline made it write the output explored
        self._own: dict[int, tuple[Bundle, AlignmentReport | None]] = {}  # id(snapshot) -> its AER of every head
        self.known_pairs: dict[str, Pair] = {}  # toy-fr sentences drawn here, with their gold alignments
        self._aer: dict[tuple, float | None] = {}  # (id(bundle), sentence, head) -> the sentence's AER
        self._fresh = toy_fr.ToyFrenchGenerator(FRESH_SEED)
        self.aer_pairs, self.aer_seed = AER_PAIRS, AER_SEED  # the pairs each best head is measured on
        self._was_running = False
        self._channels: set[str] = {OPEN_CHANNEL}  # the runner's channels of this controller's jobs
        explore.trace_changed.connect(self._on_trace_changed)
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(lambda _bundle: self._aer.clear())  # keyed by id: another snapshot, other AERs

    @property
    def running(self) -> bool:
        """Whether a model is being opened or a best-aligning head measured."""
        return any(self.runner.is_running(channel) for channel in self._channels)

    def _set_running(self) -> None:
        if self.running != self._was_running:
            self._was_running = self.running
            self.running_changed.emit(self.running)

    # --- the second model -----------------------------------------------------------------------
    def set_model(self, bundle: Bundle, name: str = "", like: Bundle | None = None, same_output: bool = False) -> bool:
        """Put ``bundle`` beside the explored model, called ``name`` (its file's name when ""), showing the head
        chosen for ``like`` (its own when None), made to write the explored decoding's tokens with ``same_output``
        (else its own); False (and a message) when it cannot be compared."""
        why = can_compare(bundle)
        if why:
            self.message.emit(why + ".")
            return False
        self.bundle, self.stepper, self.text = bundle, None, ""
        self.beside_name, self.beside_like, self.same_output = name, like, same_output
        self._choose_head(self._model_of(bundle))
        opened = self.explore.opened
        if opened is not None and not can_compare(opened):
            self._choose_head(opened)
        self._follow()
        return True

    def open(self, path: str) -> None:
        """Load a model file or a shipped model in a job, then put it beside the explored model."""
        self.runner.submit(
            OPEN_CHANNEL,
            lambda job: open_model(path),
            on_done=self.set_model,
            on_error=lambda text: self.message.emit(f"Could not open {path}: {text}"),
            on_end=self._set_running,
            joinable=False,  # a file read that never ends never holds the window's closing
        )
        self._set_running()

    def unavailable(self) -> str:
        """Why there is nothing side by side ('' when there is)."""
        explore = self.explore
        if explore.bundle is None:
            return "Open or train a model first: it is shown on the left."
        why = can_compare(explore.bundle)
        if why:
            return f"{why}: the side-by-side view compares cross-attention."
        if self.bundle is None:
            return (
                "Choose a model to put beside it (e.g. the RNN with Bahdanau attention, rnn-bahdanau, beside the "
                "Transformer, default): both decode the sentence and step together."
            )
        if explore.trace is None:
            return "Translate a sentence: both models decode it, step by step together."
        return ""

    def cancel(self) -> None:
        """Stop opening a model to put beside (the one beside, if any, stays)."""
        self.runner.cancel(OPEN_CHANNEL)

    def clear(self) -> None:
        """Nothing beside the explored model (a model still being opened is dropped)."""
        self.runner.cancel(OPEN_CHANNEL, drop=True)
        self.bundle, self.stepper, self.text = None, None, ""
        self.beside_name, self.beside_like, self.same_output = "", None, False
        self._set_running()
        self._publish()

    @property
    def active(self) -> bool:
        return self.bundle is not None

    def _on_model_changed(self, bundle: Bundle | None) -> None:
        if self.bundle is not None and bundle is not None and not can_compare(bundle):
            self._choose_head(bundle)
        self._publish()

    def _model_of(self, bundle: Bundle) -> Bundle:
        """The model whose head choice ``bundle`` shows: the opened model for a snapshot of it, else itself."""
        explore = self.explore
        if bundle is explore.bundle and explore.opened is not None:
            return explore.opened
        if bundle is self.bundle and self.beside_like is not None:
            return self.beside_like
        return bundle

    def name_of(self, bundle: Bundle) -> str:
        """The name a panel gives ``bundle``: its file's, with the snapshot explored, or the one it was put beside as."""
        explore = self.explore
        if bundle is explore.bundle and explore.opened is not None:
            return model_name(explore.opened) + (f", {explore.snapshot}" if explore.snapshot else "")
        if bundle is self.bundle and self.beside_name:
            return self.beside_name
        return model_name(bundle)

    def _choose_head(self, bundle: Bundle) -> None:
        """The head shown for ``bundle``: its last layer's mean at once, its best alignment head when measured."""
        key = id(bundle)
        if key in self.choices:
            return
        kept = (bundle, self.bundle, self.explore.bundle, self.explore.opened, self.beside_like)
        shown = {id(b) for b in kept if b is not None}
        self.choices = {k: v for k, v in self.choices.items() if k in shown}  # a model replaced is not kept alive
        self.choices[key] = (bundle, HeadChoice(max(bundle.config.n_decoder_layers - 1, 0), "mean", None, 0))

        def done(choice: HeadChoice) -> None:
            if key in self.choices:
                self.choices[key] = (bundle, choice)
                self._publish()

        count, seed = self.aer_pairs, self.aer_seed

        def measure(_job) -> HeadChoice:
            return best_alignment_head(bundle, count, seed)

        channel = f"compare-head-{key}"
        self._channels.add(channel)
        self.runner.submit(
            channel,
            measure,
            on_done=done,
            on_error=lambda text: self.message.emit(
                f"The best alignment head of {model_name(bundle)} could not be measured: {text}"
            ),
            on_end=self._set_running,
        )
        self._set_running()

    def set_head(self, side: int, head: tuple[int, int | str] | None) -> None:
        """Show (layer, head) on ``side`` (0: the explored model, 1: the second); None: its best-aligning head."""
        bundle = self.explore.bundle if side == 0 else self.bundle
        if bundle is None:
            return
        bundle = self._model_of(bundle)
        if head is None:
            self.overrides.pop(id(bundle), None)
        else:
            self.overrides[id(bundle)] = head
        self._publish()

    def head_of(self, bundle: Bundle) -> HeadChoice:
        """The head shown for ``bundle``: the user's choice, else its best-aligning one (the last layer's mean
        until that is measured); a snapshot's is its model's."""
        bundle = self._model_of(bundle)
        if id(bundle) in self.overrides:
            layer, head = self.overrides[id(bundle)]
            return HeadChoice(layer, head, None, 0)
        default = HeadChoice(max(bundle.config.n_decoder_layers - 1, 0), "mean", None, 0)
        return self.choices.get(id(bundle), (bundle, default))[1]

    # --- a snapshot's own AER, and its output -------------------------------------------------------------------
    def own_aer(self, bundle: Bundle, choice: HeadChoice) -> float | None:
        """The AER of the head ``choice`` in ``bundle`` itself (a snapshot showing its final model's head), on the
        pairs the head was chosen on; None until measured (a job, once per snapshot: ``measuring``) or when it cannot be."""
        key = id(bundle)
        if key not in self._own and not self.measuring(bundle):
            self._measure_own(bundle)
        report = self._own.get(key, (bundle, None))[1]
        if report is None or not report.n_pairs:
            return None
        if isinstance(choice.head, int):
            return float(report.head_aer[0, choice.layer, choice.head])
        return float(report.layer_aer[0, choice.layer])

    def measuring(self, bundle: Bundle) -> bool:
        """Whether the AER of ``bundle`` (a snapshot) is being measured."""
        return self.runner.is_running(f"compare-own-{id(bundle)}")

    def _measure_own(self, bundle: Bundle) -> None:
        key, count, seed = id(bundle), self.aer_pairs, self.aer_seed
        shown = {id(b) for b in (self.bundle, self.explore.bundle) if b is not None}
        self._own = {k: v for k, v in self._own.items() if k in shown}  # a snapshot left is not kept alive

        def ended(report: AlignmentReport | None) -> None:
            self._own[key] = (bundle, report)  # None after an error too: not measured again
            self._publish()

        def failed(text: str) -> None:
            self.message.emit(f"The snapshot's AER could not be measured: {text}")
            ended(None)

        channel = f"compare-own-{key}"
        self._channels.add(channel)
        self.runner.submit(
            channel, lambda _job: measured_aer(bundle, count, seed), on_done=ended, on_error=failed, on_end=self._set_running
        )
        self._set_running()

    def forced_output(self, side: int) -> str:
        """Whose output side ``side`` (0: explored, 1: beside) was made to write: '' when its own."""
        explore = self.explore
        explored_forced = self.forced_stepper is not None and self.forced_stepper is explore.stepper
        if side == 0:
            return EXPLORED_OUTPUT if explored_forced else ""
        if not self.same_output:
            return ""
        if explore.bundle is explore.opened and not explored_forced:
            return f"{FINAL_MODEL}'s output"
        return EXPLORED_OUTPUT if explored_forced else "the output of the model on the left"

    # --- sentences with gold alignments ---------------------------------------------------------
    def fresh_sentence(self) -> str:
        """A toy-fr source sentence not seen in training, whose gold alignment is kept for the AER."""
        pair = self._fresh.pair()
        self.known_pairs[" ".join(pair.source.split())] = pair
        return pair.source

    def gold(self, text: str) -> Pair | None:
        return gold_pair(text, self.known_pairs)

    # --- following the Explore controller ------------------------------------------------------------------
    def _on_trace_changed(self, _trace: Trace | None) -> None:
        self._follow()  # with no second model: an empty list, so the view says what is missing

    def _follow(self) -> None:
        explore = self.explore
        if self.bundle is None or explore.trace is None or explore.stepper is None:
            self._publish()
            return
        if self.same_output:  # the same tokens as the explored decoding, so far: the two read alike
            self.text = explore.text
            self.stepper = forced_stepper(self.bundle, explore.text, explore.stepper.target_ids(), explore.options)
            self._publish()
            return
        if self.stepper is None or explore.text != self.text:
            self.text = explore.text
            try:
                self.stepper = Stepper(self.bundle, explore.text, explore.options)
            except UserError:
                try:  # an option this model cannot take (a beam for a decoder-only one): greedy instead
                    self.stepper = Stepper(self.bundle, explore.text, replace(explore.options, strategy="greedy"))
                except UserError as error:
                    self.stepper = None
                    self.message.emit(f"{model_name(self.bundle)} cannot read this sentence: {error}")
                    self.changed.emit([], self.unavailable())
                    return
        if explore.finished:
            self.stepper.run()
        else:
            self.stepper.jump(explore.current_step)
        self._publish()

    def panels(self) -> list[Panel]:
        """The session's model and the second one, at the shared step; [] when either has nothing to show."""
        explore = self.explore
        if self.bundle is None or self.stepper is None or explore.bundle is None or explore.trace is None:
            return []
        if can_compare(explore.bundle):
            return []
        gold = self.gold(explore.text)
        panels = []
        for side, (bundle, trace) in enumerate(((explore.bundle, explore.trace), (self.bundle, self.stepper.trace()))):
            choice = self.head_of(bundle)
            panel = make_panel(self.name_of(bundle), bundle, trace, choice, None)
            if self._model_of(bundle) is not bundle:  # a snapshot: its final model's head, and its own AER of it
                panel.chosen_for = FINAL_MODEL if choice.corpus_aer is not None else ""
                panel.own_aer = self.own_aer(bundle, choice)
                panel.measuring = self.measuring(bundle)
            panel.forced = self.forced_output(side)
            if gold is not None:  # teacher-forced on the reference: measured once per sentence and head, not per step
                key = (id(bundle), gold.source, choice)
                if key not in self._aer:
                    self._aer[key] = sentence_aer(bundle, gold, choice)
                panel.sentence_aer = self._aer[key]
            panels.append(panel)
        return panels

    def note(self, panels: list[Panel]) -> str:
        """What the view says above the panels: why there are none, or whether the sentence's gold alignment is known."""
        if len(panels) != 2:
            return self.unavailable()
        return GOLD_NOTE if self.gold(self.explore.text) is not None else NO_GOLD_NOTE

    def _publish(self) -> None:
        panels = self.panels()
        self.changed.emit(panels, self.note(panels))
