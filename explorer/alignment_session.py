"""Which reading aligns best: the alignment table of the session's model, computed off the window's thread.

``compute`` scores every measure of cross-attention (model/attribution/measures.py) and every head against
toy-fr's gold word alignments (model/attribution/alignment_table.py) on fresh pairs, in a Python thread of
its own (not a daemon: ``stop`` cancels and joins it when the window closes). The model scored is the one the
user explores, heads knocked out included, copied first so the measures' hooks never touch the model the
window decodes with. Each run has its own cancel flag (a ``threading.Event``) read before every pair; a new
model cancels the run and clears the table (``ready(None)``). The worker only reports through private signals
delivered on the window's thread, where a run that was replaced or cancelled is dropped.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from types import SimpleNamespace

from PySide6.QtCore import QObject, Qt, Signal

from explorer.runs import Runs
from explorer.runtime import for_light_work
from explorer.workers import describe_error
from model.errors import UserError

DEFAULT_PAIRS = 30
NO_GOLD = (
    "Gold word alignments exist for toy-fr only: the alignment table scores the cross-attention of a model "
    "trained on the built-in toy-fr corpus, and this model is not one."
)


def model_without_gold(bundle) -> str:
    """Why gold alignments cannot score ``bundle`` ('' when they can)."""
    from model.inspection.comparison import aligns_toy_fr

    if bundle is None:
        return "Open or train a model first: its cross-attention is scored against toy-fr's gold alignments."
    return "" if aligns_toy_fr(bundle) else NO_GOLD


def scored_bundle(session):
    """What ``alignment_table`` reads: a private copy of the model the user explores (heads knocked out
    included) with the session's configuration and tokenizers."""
    bundle = session.bundle
    if session.stepper is not None:
        model = session.stepper.model
    elif session.masked_heads:  # no sentence decoded yet: the heads the user knocked out, all the same
        from model.nn.masking import masked_model

        model = masked_model(bundle.model, tuple(session.masked_heads))
    else:
        model = bundle.model
    return SimpleNamespace(
        model=copy.deepcopy(model).eval(),  # copied here, in the window's thread, while nothing else uses it
        config=bundle.config,
        source_tokenizer=bundle.source_tokenizer,
        target_tokenizer=bundle.target_tokenizer,
    )


class AlignmentSession(QObject):
    progress = Signal(int, int)  # pairs done, pairs in all
    ready = Signal(object)  # model.attribution.alignment_table.AlignmentTable, or None: nothing to show
    message = Signal(str)  # what the user should read (why nothing runs, a cancelled run, an error)
    running = Signal(bool)  # True when a run starts, False when it ends (done, cancelled, failed or dropped)

    # From the worker's thread to the window's (queued): (run, done, total), (run, table, error, cancelled).
    _worker_progressed = Signal(int, int, int)
    _worker_finished = Signal(int, object, str, bool)

    def __init__(self, session) -> None:
        super().__init__()
        self.session = session
        self.table = None  # the last AlignmentTable, for the current model
        self.done_pairs = 0  # pairs the current (or last) run has gone through
        self.runs = Runs("alignment-table", daemon=False)  # numbered runs: an older one's reports are dropped
        self._worker_progressed.connect(self._on_worker_progressed, Qt.ConnectionType.QueuedConnection)
        self._worker_finished.connect(self._on_worker_finished, Qt.ConnectionType.QueuedConnection)
        session.model_changed.connect(self._on_model_changed)

    # --- running ----------------------------------------------------------------------------------
    @property
    def is_running(self) -> bool:
        return self.runs.active

    def unavailable(self) -> str:
        """Why the session's model cannot be scored ('' when it can)."""
        return model_without_gold(self.session.bundle)

    def compute(self, n_pairs: int = DEFAULT_PAIRS, names: Sequence[str] | None = None) -> bool:
        """Score ``names`` (every measure when None) on ``n_pairs`` fresh toy-fr pairs in a worker; a run
        under way is replaced. False, with a message, when the model cannot be scored."""
        why = self.unavailable()
        if why:
            self.message.emit(why)
            return False
        from model.attribution.measures import NAMES

        chosen = tuple(names) if names is not None else NAMES
        try:
            bundle = scored_bundle(self.session)
        except (UserError, RuntimeError, ValueError) as error:  # the knocked-out heads cannot be copied
            self.message.emit(f"The alignment table cannot be computed: {_error_text(error)}")
            return False
        was_running = self.is_running
        self.done_pairs = 0
        self.runs.start(self._work, bundle, int(n_pairs), chosen)
        if not was_running:
            self.running.emit(True)
        return True

    def cancel(self) -> None:
        """Stop the run before its next pair; the table shown stays as it was."""
        if self.runs.cancel is not None:
            self.runs.cancel.set()

    def stop(self, wait_ms: int = 60000) -> bool:
        """Cancel every run and wait (up to ``wait_ms`` in all) for its thread to end; True when they all have.
        For the window's close: nothing is emitted."""
        return self.runs.stop(wait_ms)

    # --- the worker's thread ----------------------------------------------------------------------
    def _work(self, run: int, cancel: threading.Event, bundle, n_pairs: int, names: tuple[str, ...]) -> None:
        """The worker: the table, or an error message; reported through the private signals only."""
        try:
            from model.attribution.alignment_table import alignment_table
            from model.inspection.comparison import alignment_pairs

            for_light_work()  # the cores stay with a training run
            pairs = alignment_pairs(n_pairs)
            table = alignment_table(
                bundle,
                pairs,
                names,
                on_progress=lambda done, total: self._worker_progressed.emit(run, done, total),
                cancelled=cancel.is_set,
            )
        except Exception as error:  # noqa: BLE001 - every failure becomes a message in the window
            self._worker_finished.emit(run, None, _error_text(error), cancel.is_set())
        else:
            self._worker_finished.emit(run, table, "", cancel.is_set())

    # --- back on the window's thread --------------------------------------------------------------
    def _on_worker_progressed(self, run: int, done: int, total: int) -> None:
        if self.runs.is_current(run):
            self.done_pairs = done
            self.progress.emit(done, total)

    def _on_worker_finished(self, run: int, table, error: str, cancelled: bool) -> None:
        if not self.runs.finish(run):
            return  # replaced by a newer run, or dropped with its model
        if error:
            self.message.emit(f"The alignment table could not be computed: {error}")
        elif cancelled:
            self.message.emit(f"Scoring cancelled after {self.done_pairs} pairs: the table shown is unchanged.")
        elif not table.n_pairs:
            self.message.emit("No pair's words matched the model's tokens: there was nothing to score.")
        elif not table.measures:
            self.message.emit("None of the chosen measures is defined for this model's cross-attention.")
        else:
            self.table = table
            self.ready.emit(table)
        self.running.emit(False)

    def _on_model_changed(self, _bundle) -> None:
        """Another model (or none): the run under way is cancelled and the table cleared."""
        was_running = self.runs.drop()
        self.table = None
        if was_running:
            self.running.emit(False)
        self.ready.emit(None)


def _error_text(error: BaseException) -> str:
    """The message of errors a user caused; one line for anything else."""
    return str(error) if isinstance(error, UserError) and str(error) else describe_error(error)
