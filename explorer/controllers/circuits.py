"""The circuit of the pair the Patching sub-tab shows (model/circuits/), computed in a job of the runner.

Patching says which single head or position matters; the circuit says which paths carry the prediction, across
cross-attention. The pair (clean and corrupted sentence, step) is the Patching sub-tab's (``want``); the options are
the Circuits sub-tab's (``set_options``: method, integration points, target, source positions). While that sub-tab is
shown (``set_active``), a pair, options or model it has not computed yet is computed at once, superseding a job under
way; ``find`` computes now. A clean sentence that is the one the Explore tab decodes is read along that decoding's
output, through its model (explorer/controllers/followed.py ``pair_read``); each job reads its own copy of the model.

A node of the circuit clicked opens its head in the Explore tab's views (``open_node``: the kind, layer and head chosen
there, and the circuit's step when it read the Explore tab's decoding). A model whose hooked pass has no circuits, an
empty sentence or a bad pair is one line (``message``), and nothing else changes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from psygnal import Signal

from explorer.controllers.background import model_name, submit_on_copy
from explorer.controllers.explore import ExploreController
from explorer.controllers.followed import pair_read
from explorer.controllers.runner import Job, Runner
from model.circuits.result import CircuitResult, Options, circuit_of
from model.cli.recorded import circuit_command, circuit_record, language_flags, model_reference
from model.errors import UserError
from model.family import Bundle, InterventionTool
from model.figures.attention import FigureOptions
from model.figures.circuit import save_circuit
from model.interventions.given import given_patching
from model.interventions.hooked import InterventionError
from model.interventions.served_pass import unserved_reason
from model.kinds import AttentionKind
from model.provenance.record import Record

CHANNEL = "circuits"
CIRCUITS = InterventionTool.CIRCUITS
NODE_KINDS = {  # a head node's (side, kind) -> the attention the Explore tab shows it in
    ("encoder", "self"): AttentionKind.ENCODER,
    ("decoder", "self"): AttentionKind.DECODER,
    ("decoder", "cross"): AttentionKind.CROSS,
}

Pair = tuple[str, str, int | None]  # clean, corrupted, step (from 0; None: the first the two differ at)


class CircuitsController:
    """Events: ``ready(result or None)``, ``message(text)``, ``progress(text)``, ``running_changed(bool)``,
    ``pair_shown(clean, corrupted, step or None)`` (the pair the sub-tab computes), ``node_opened(kind, layer, head)``."""

    ready = Signal(object)
    message = Signal(str)
    progress = Signal(str)
    running_changed = Signal(bool)
    pair_shown = Signal(str, str, object)
    node_opened = Signal(object, int, int)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.options = Options()
        self.wanted: Pair | None = None
        self.active = False
        self.result: CircuitResult | None = None
        self.computed_for: tuple[Any, Pair, Options] | None = None  # (what it read, the pair, the options) shown or under way
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(self._on_model_changed)
        explore.trace_changed.connect(lambda _trace: self._compute_if_stale())

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL)

    def unavailable(self) -> str:
        """Why the explored model has no circuits ('' when it has)."""
        bundle = self.explore.bundle
        if bundle is None:
            return "Open or train a model first: a circuit is found in the session's model."
        why = unserved_reason(bundle.model, CIRCUITS)
        return f"Circuits: {why}." if why else ""

    def want(self, clean: str, corrupted: str, step: int | None = None) -> bool:
        """The pair the Patching sub-tab shows: computed at once while the Circuits sub-tab is shown (True: a job)."""
        self.wanted = (clean, corrupted, step)
        self.pair_shown.emit(clean, corrupted, step)
        return self._compute_if_stale()

    def set_options(self, options: Options) -> bool:
        self.options = options
        return self._compute_if_stale()

    def set_active(self, active: bool) -> bool:
        self.active = active
        return self._compute_if_stale()

    def _compute_if_stale(self) -> bool:
        wanted, bundle = self.wanted, self.explore.bundle
        if not self.active or wanted is None or bundle is None or not wanted[0].strip() or not wanted[1].strip():
            return False
        if self.unavailable() or self._shown_already(pair_read(self.explore, wanted[0]), wanted):
            return False
        return self.find(*wanted)

    def _shown_already(self, read: tuple[Any, tuple[int, ...] | None], wanted: Pair) -> bool:
        """Whether the circuit shown (or under way) is the one ``wanted`` read so gives: the same model, pair and options,
        and the same decoded output up to the circuit's step (a step of the Explore tab past it changes nothing the
        circuit reads, so a step is not a new job)."""
        computed = self.computed_for
        if computed is None or computed[1:] != (wanted, self.options) or computed[0][0] is not read[0]:
            return False
        (_model, before), (_same, now), result = computed[0], read, self.result
        if before == now:
            return True
        if result is None or before is None or now is None:
            return False  # a job under way, or a greedy translation against a decoding followed
        upto = result.step + 1
        return len(now) >= upto and tuple(now[:upto]) == tuple(before[:upto])

    def find(self, clean: str, corrupted: str, step: int | None = None) -> bool:
        """The circuit of ``clean`` and ``corrupted`` at ``step`` with the options chosen, in a job; False with a
        message when the model cannot or the input is bad."""
        why = self.unavailable()
        if why:
            self.message.emit(why)
            return False
        texts = clean.strip(), corrupted.strip()
        if not all(texts):
            self.message.emit(f"Circuits: the {'clean' if not texts[0] else 'corrupted'} sentence is empty: type one")
            return False
        bundle = self.explore.bundle
        assert bundle is not None  # unavailable() said so otherwise
        self.wanted = (clean, corrupted, step)
        read = pair_read(self.explore, clean)
        options = self.options
        self.computed_for = (read, self.wanted, options)
        self.result = None
        self.ready.emit(None)  # the last pair's circuit is not this one's
        self.message.emit("")
        model, targets = read

        def work(job: Job, copied: Any) -> None:
            def say(text: str) -> None:
                job.check()
                job.progress(f"Circuit: {text}…")

            say("the reference runs")
            setup = given_patching(copied, *texts, step, targets)
            job.deliver(self._on_result, circuit_of(setup, options, say))

        return submit_on_copy(self, CHANNEL, work, bundle, "Circuits", "The circuit could not be found", model)

    def choose(self, **changes: Any) -> bool:
        """Options changed (``method``, ``steps``, ``over``, ``target``, ``split_positions``)."""
        try:
            options = replace(self.options, **changes)
        except TypeError as error:
            raise InterventionError(f"not an option of the circuits: {error}") from None
        return self.set_options(options)

    def open_node(self, name: str) -> bool:
        """A node of the circuit: its head shown in the Explore tab's views (True), or a line saying what it is."""
        result = self.result
        node = result.graph.nodes.get(name) if result is not None else None
        if result is None or node is None:
            return False
        kind = NODE_KINDS.get((node.side, node.kind))
        if kind is None or node.layer is None or node.head is None:
            self.message.emit(f"{node.label}: not a head, so no attention to open (the circuit's edges say what it passes on).")
            return False
        self.explore.choose_view(kind=kind, layer=node.layer, head=node.head)
        self.node_opened.emit(kind, node.layer, node.head)  # the tab shows the grid: this sub-tab hidden, nothing recomputed
        _model, followed = self.computed_for[0] if self.computed_for is not None else (None, None)
        if followed is not None:  # the circuit read the Explore tab's decoding: its step shown there too
            self.explore.go_to_step(result.step + 1)
        return True

    def save(self, path: str | Path) -> Path | None:
        """The circuit shown to ``path``: its figure (.png, .svg, .pdf) or its data (.csv, .json, .graphml), as the
        ``circuit`` command writes them; None with a message when there is none or it cannot be written."""
        result, bundle = self.result, self.explore.bundle
        if result is None:
            self.message.emit("No circuit to save yet.")
            return None
        try:
            options = FigureOptions(model_name=model_name(bundle) if bundle is not None else "")
            written = save_circuit(result, path, options, record=self._record(result))
        except UserError as error:
            self.message.emit(f"The circuit could not be saved: {error}")
            return None
        self.message.emit(f"Saved the circuit to {written}.")
        return written

    def _record(self, result: CircuitResult) -> Record | None:
        """The ``circuit`` command of the pair shown, as the command line records it; what it cannot draw (the Explore
        tab's own decoding of the clean sentence, when it is not the greedy one) named."""
        bundle, computed = self.explore.bundle, self.computed_for
        if bundle is None or computed is None:
            return None
        (_model, followed), (clean, corrupted, step), options = computed
        model = model_reference(bundle)
        command = circuit_command(model, clean, corrupted, step, options, language_flags(bundle))
        record = circuit_record(result, bundle, model, command, clean, corrupted)
        trace = self.explore.trace
        forced = trace is not None and bool(trace.forced.any())
        if followed is not None and (self.explore.options.strategy != "greedy" or self.explore.masked_heads or forced):
            record.beyond_the_command("the Explore tab's decoding of the clean sentence")
        return record

    def _on_result(self, result: CircuitResult) -> None:
        self.result = result
        self.ready.emit(result)

    def _on_model_changed(self, _bundle: Bundle | None) -> None:
        if self.runner.cancel(CHANNEL, drop=True) and not self.running:
            self.running_changed.emit(False)
        self.result, self.computed_for = None, None
        self.ready.emit(None)
        self._compute_if_stale()
