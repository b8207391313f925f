"""The neuron view's state and work (no Qt): one head's query row inside, for the sentence the Explore tab decodes.

It follows the Explore tab: the kind, layer and head it shows (``follow``; a mean or max over heads shows head 1, and
says so), the decoding step (decoder and cross-attention rows follow the step being decoded until a query is chosen:
``set_query``), the model explored (a snapshot of its training, heads knocked out: the decoding's own model). The
queries and keys of every head of the sentence (model/neuron/) are computed in a job of the runner ("neuron" channel,
a private copy of the model made here, on the window's thread; about 0.02 s for the shipped models, half a second for
a 6+6-layer d_model 512 one), once per decoded sentence: a step back or forth reads the first rows of what was computed
for the longest decoding seen. The heads table reads each head's term shares (``head_terms``) from the same vectors.

Events: ``changed(row or None)`` (a NeuronRow: the view draws it), ``queries_changed(labels, chosen)``, ``terms_ready()``
(the heads table can show the term shares), ``message(text)`` (why nothing is shown, an error), ``running_changed(bool)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from psygnal import Signal

from explorer.controllers.background import job_copier
from explorer.controllers.explore import ExploreController
from explorer.controllers.followed import WORDS, followed_decoding, unfollowed
from explorer.controllers.runner import Job, Runner
from model.cli.recorded import model_reference, neuron_record
from model.data.token_labels import display_labels
from model.files import OutputError
from model.kinds import AttentionKind
from model.neuron.tables import row_rows, write_rows
from model.neuron.terms import HeadTerms, NeuronRow, head_terms, neuron_row
from model.neuron.vectors import NeuronError, SentenceVectors, sentence_vectors, splits_positions, unavailable
from model.provenance.embed import write_sidecar
from model.provenance.record import Record

CHANNEL = "neuron"
CANNOT_FOLLOW = {WORDS: "it shows pieces: the model's queries and keys are the pieces'"}  # the modes it cannot follow
SUFFIXES = (".png", ".svg", ".pdf", ".csv")


class NeuronController:
    """Its events are the module docstring's."""

    changed = Signal(object)
    queries_changed = Signal(list, object)
    terms_ready = Signal()
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.kind, self.layer, self.head = AttentionKind.CROSS, 0, 0
        self.head_note = ""  # why the head shown is not the one chosen (an aggregate was chosen)
        self.query: int | None = None  # chosen by the user; None: the step being decoded (the first source piece)
        self.active = False  # the neuron view or the heads table is shown
        self.vectors: SentenceVectors | None = None  # of the longest decoding of the sentence computed
        self.computed_for: tuple | None = None  # (model, source ids, target ids) of ``vectors`` or of the job under way
        self.row: NeuronRow | None = None
        explore.model_changed.connect(lambda _bundle: self._forget())
        explore.weights_changed.connect(lambda _bundle: self._forget())
        explore.trace_changed.connect(lambda _trace: self.update())

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL)

    def unavailable(self) -> str:
        """Why the explored model has no neuron view ('' when it has)."""
        bundle = self.explore.bundle
        if bundle is None:
            return "Open or train a model first: the neuron view reads its queries and keys."
        why = unavailable(bundle.model)
        return why[:1].upper() + why[1:] + "." if why else ""

    def splits(self) -> bool:
        """Whether the explored model's scores split into positional terms (the heads table's column)."""
        bundle = self.explore.bundle
        return bundle is not None and not self.unavailable() and splits_positions(bundle.model)

    # --- what is shown ----------------------------------------------------------------------------
    def set_active(self, active: bool) -> None:
        """The view (or the heads table) is shown: the sentence's vectors are computed when stale."""
        self.active = active
        if active:
            self.update()

    def follow(self, kind: AttentionKind, layer: int, head: int | str) -> None:
        """The Explore tab's kind, layer and head (a string: an aggregate, shown as head 1)."""
        self.head_note = "" if isinstance(head, int) else f"The {head} of the heads has no queries: showing head 1."
        if kind != self.kind:  # another kind's queries are other tokens
            self.query = None
        self.kind, self.layer, self.head = kind, layer, head if isinstance(head, int) else 0
        self._publish()

    def set_query(self, query: int | None) -> None:
        """The query row shown (from 0); None: follow the step being decoded."""
        self.query = query
        self._publish()

    def _forget(self) -> None:
        self.runner.cancel(CHANNEL, drop=True)
        self.vectors, self.computed_for, self.row, self.query = None, None, None, None
        self.changed.emit(None)
        self.message.emit(self.unavailable())

    # --- the sentence's vectors -------------------------------------------------------------------
    def _wanted(self) -> tuple | None:
        """(model, source ids, target ids) of the decoding shown; None without one."""
        stepper, trace = self.explore.stepper, self.explore.trace
        if stepper is None or trace is None or self.unavailable():
            return None
        return stepper.model, tuple(stepper.source_ids), tuple(int(i) for i in trace.chosen_ids)

    def _covers(self, wanted: tuple) -> bool:
        """Whether the vectors computed (or under way) hold ``wanted``'s: same model and source, a longer decoding."""
        done = self.computed_for
        return done is not None and done[:2] == wanted[:2] and done[2][: len(wanted[2])] == wanted[2]

    def update(self) -> None:
        """Compute the decoding's vectors when stale (in a job) and show the row."""
        wanted = self._wanted()
        if wanted is None:
            self._publish()
            return
        if not self._covers(wanted) and self.active:
            self._compute(wanted)
        self._publish()

    def _compute(self, wanted: tuple) -> None:
        model, source_ids, target_ids = wanted
        copier = job_copier(model, "Reading the queries and keys", self.message)  # the window goes on with its own
        if copier is None:
            return
        was_running = self.running
        self.computed_for, self.vectors = wanted, None

        def work(job: Job) -> SentenceVectors:
            job.progress("Reading the heads' queries and keys…")
            return sentence_vectors(copier(), source_ids, target_ids, private=True)

        self.runner.submit(CHANNEL, work, on_done=self._on_vectors, on_error=self._on_error, on_end=self._on_end)
        if not was_running:
            self.running_changed.emit(True)

    def _on_vectors(self, vectors: SentenceVectors) -> None:
        self.vectors = vectors
        self.terms_ready.emit()
        self._publish()

    def _on_error(self, text: str) -> None:
        self.computed_for = None  # computed again at the next change
        self.message.emit(f"The neuron view could not be computed: {text}")

    def _on_end(self) -> None:
        if not self.running:
            self.running_changed.emit(False)

    def current_vectors(self) -> SentenceVectors | None:
        """The vectors of the decoding shown (the first rows of a longer one's); None while not computed."""
        wanted = self._wanted()
        if wanted is None or self.vectors is None or not self._covers(wanted):
            return None
        return self.vectors.prefix(len(wanted[2]))

    def head_terms(self, kind: AttentionKind) -> HeadTerms | None:
        """Every head's term shares of ``kind`` for the decoding shown; None while not computed, or not split."""
        vectors = self.current_vectors()
        if vectors is None or kind not in vectors.kinds or not vectors.of(kind).split or not vectors.of(kind).shape[2]:
            return None
        return head_terms(vectors.of(kind))

    # --- the row ----------------------------------------------------------------------------------
    def _query_row(self, n_queries: int) -> int:
        if self.query is not None:
            return min(self.query, n_queries - 1)
        return n_queries - 1 if self.kind.follows_decoding else 0

    def _publish(self) -> None:
        """The row of the chosen head and query (or None, with the reason) to the view."""
        trace, vectors = self.explore.trace, self.current_vectors()
        why = self.unavailable()
        self.row = None
        if not why and trace is not None and vectors is not None:
            if not trace.has(self.kind):
                why = f"This model has no {self.kind.label}."
            else:
                labels = trace.axis_labels(self.kind)
                queries = labels[0]
                if not queries:
                    why = "Decode a step first: the decoder's queries come one per step."
                else:
                    query = self._query_row(len(queries))
                    self.queries_changed.emit(display_labels(queries), query)
                    try:
                        self.row = neuron_row(vectors, self.kind, self.layer, self.head, query, labels)
                    except NeuronError as error:
                        why = str(error)
        elif not why and trace is None:
            why = "Translate a sentence: the neuron view shows its queries and keys."
        self.changed.emit(self.row)
        notes = [self.head_note, unfollowed("neuron view", followed_decoding(self.explore), CANNOT_FOLLOW)]
        self.message.emit(why or " ".join(note for note in notes if note))

    # --- export -----------------------------------------------------------------------------------
    def save(self, path: str | Path, options: Any = None, dpi: float = 300) -> Path:
        """The row shown to ``path``: its figure (.png, .svg, .pdf; ``options``: model.figures' FigureOptions) or its
        numbers (.csv), written atomically."""
        if self.row is None:
            raise OutputError("nothing to save yet: translate a sentence and choose a head")
        suffix = Path(path).suffix.lower()
        if suffix not in SUFFIXES:
            raise OutputError(f"{Path(path).name}: save as .png, .svg, .pdf (the figure) or .csv (every number)")
        record = self._record(options, dpi)
        if suffix == ".csv":
            written = write_rows(row_rows(self.row), path)
            write_sidecar(written, record)
            return written
        from model.figures.neuron import neuron_figure  # deferred: matplotlib loads with the first export
        from model.figures.saving import save_figure

        trace = self.explore.trace
        source, output = (trace.source_text, trace.target_tokens) if trace is not None else ("", [])
        return save_figure(neuron_figure(self.row, options, source, output), path, dpi, record)

    def _record(self, options: Any, dpi: float) -> Record | None:
        """The ``neuron`` command of the row shown (model/provenance/), as the command line records it: the decoded
        output given as its ``--target`` when the decoding is not greedy."""
        bundle, trace, row = self.explore.bundle, self.explore.trace, self.row
        if bundle is None or trace is None or row is None:
            return None
        decoding = followed_decoding(self.explore)
        modes = [mode for mode in (decoding.modes if decoding is not None else ()) if mode != WORDS]
        target = trace.target_text if modes and trace.target_text else None
        model = model_reference(bundle)
        query = self._query_row(len(trace.axis_labels(self.kind)[0])) + 1 if trace.has(self.kind) else 1
        record = neuron_record(bundle, model, self.explore.text, str(self.kind), self.layer + 1, self.head + 1, query,
                               target, options, dpi)  # fmt: skip
        if trace.n_steps < self.explore.total_steps:  # the command reads the whole decoding; its caption names it all
            record.beyond_the_command(f"the decoding at step {trace.n_steps} of {self.explore.total_steps}")
        return record
