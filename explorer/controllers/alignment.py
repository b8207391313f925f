"""Which reading aligns best: the alignment table of the explored model, computed off the window's thread.

``compute`` scores every measure of cross-attention (model/attribution/measures.py) and every head against
toy-fr's gold word alignments (model/attribution/alignment_table.py) on the pairs every AER of the app is measured
on (``aer_pairs``: 200 held-out toy-fr test pairs drawn with seed 0 by default; the count and seed are the user's),
in a job of the runner's "alignment-table" channel. The table keeps the count and seed, and its best head is the
one ``evaluate``, ``heads`` and ``compare`` report for the same settings. The model scored is the one the user
explores, heads knocked out included, copied first so the measures' hooks never touch the model the window decodes
with. The job's cancel token is read before every pair; a new model (or another snapshot of its training) drops
the run and clears the table (``ready(None)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psygnal import Signal

from explorer.controllers.background import job_bundle
from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Job, Runner, user_message
from model.attribution.alignment_table import AlignmentTable, alignment_table
from model.attribution.measures import NAMES
from model.data.corpora import CorpusSpec
from model.errors import UserError
from model.family import Bundle
from model.inspection.alignment import AER_PAIRS, AER_SEED, aer_pairs
from model.inspection.comparison import aligns_toy_fr
from model.nn.masking import masked_model

DEFAULT_PAIRS = AER_PAIRS  # the app's one default: the same pairs as evaluate, heads and compare
CHANNEL = "alignment-table"
NO_GOLD = (
    "Gold word alignments exist for toy-fr only: the alignment table scores the cross-attention of a model "
    "trained on the built-in toy-fr corpus, and this model is not one."
)


def model_without_gold(bundle: Bundle | None) -> str:
    """Why gold alignments cannot score ``bundle`` ('' when they can)."""
    if bundle is None:
        return "Open or train a model first: its cross-attention is scored against toy-fr's gold alignments."
    return "" if aligns_toy_fr(bundle) else NO_GOLD


def scored_model(explore: ExploreController) -> Any:
    """The model the user explores, heads knocked out included: what ``alignment_table`` reads (a private copy)."""
    bundle = explore.bundle
    assert bundle is not None
    if explore.stepper is not None:
        return explore.stepper.model
    if explore.masked_heads:  # no sentence decoded yet: the heads the user knocked out, all the same
        return masked_model(bundle.model, tuple(explore.masked_heads))
    return bundle.model


def score(job: Job, bundle: Any, corpus: CorpusSpec, n_pairs: int, seed: int, names: tuple[str, ...]) -> AlignmentTable:
    """In the job's thread: the table over ``n_pairs`` held-out pairs of ``corpus`` drawn with ``seed``, progress after
    every pair."""
    pairs = aer_pairs(corpus, n_pairs, seed)
    return alignment_table(
        bundle, pairs, names, on_progress=job.progress, cancelled=job.token.is_cancelled, corpus=corpus.name, seed=seed
    )


class AlignmentController:
    """Events: ``progress(done, total)`` pairs, ``ready(AlignmentTable or None: nothing to show)``, ``message(text)``
    (why nothing runs, a cancelled run, an error), ``running_changed(bool)``."""

    progress = Signal(int, int)
    ready = Signal(object)
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.table: AlignmentTable | None = None  # the last table, for the current model
        self.done_pairs = 0  # pairs the current (or last) run has gone through
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(self._on_model_changed)  # another snapshot: its table is another

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL)

    def unavailable(self) -> str:
        """Why the explored model cannot be scored ('' when it can)."""
        return model_without_gold(self.explore.bundle)

    def compute(self, n_pairs: int = DEFAULT_PAIRS, names: Sequence[str] | None = None, seed: int = AER_SEED) -> bool:
        """Score ``names`` (every measure when None) on ``n_pairs`` held-out toy-fr pairs drawn with ``seed``, in a
        job; a run under way is replaced. False, with a message, when the model cannot be scored."""
        why = self.unavailable()
        if why:
            self.message.emit(why)
            return False
        if n_pairs < 1:
            self.message.emit("The alignment table needs at least one pair.")
            return False
        chosen = tuple(names) if names is not None else tuple(NAMES)
        assert self.explore.bundle is not None and self.explore.bundle.corpus is not None  # unavailable() said so
        corpus = CorpusSpec.from_dict(self.explore.bundle.corpus.to_dict())  # the job's own copy
        try:
            model = scored_model(self.explore)
        except (UserError, RuntimeError, ValueError) as error:  # the knocked-out heads cannot be copied
            self.message.emit(f"The alignment table cannot be computed: {user_message(error)}")
            return False
        copier = job_bundle(self.explore.bundle, "The alignment table", self.message, model)
        if copier is None:
            return False
        was_running = self.running
        self.done_pairs = 0
        self.runner.submit(
            CHANNEL,
            lambda job: score(job, copier(), corpus, int(n_pairs), int(seed), chosen),
            on_progress=self._on_progress,
            on_done=self._on_done,
            on_cancelled=self._on_cancelled,
            on_error=lambda text: self.message.emit(f"The alignment table could not be computed: {text}"),
            on_end=lambda: self.running_changed.emit(False),
        )
        if not was_running:
            self.running_changed.emit(True)
        return True

    def cancel(self) -> None:
        """Stop the run before its next pair; the table shown stays as it was."""
        self.runner.cancel(CHANNEL)

    # --- the job's reports, on the window's thread ------------------------------------------------
    def _on_progress(self, done: int, total: int) -> None:
        self.done_pairs = done
        self.progress.emit(done, total)

    def _on_cancelled(self) -> None:
        self.message.emit(f"Scoring cancelled after {self.done_pairs} pairs: the table shown is unchanged.")

    def _on_done(self, table: AlignmentTable) -> None:
        if not table.n_pairs:
            self.message.emit("No pair's words matched the model's tokens: there was nothing to score.")
        elif not table.measures:
            self.message.emit("None of the chosen measures is defined for this model's cross-attention.")
        else:
            self.table = table
            self.ready.emit(table)

    def _on_model_changed(self, _bundle: Bundle | None) -> None:
        """Another model (or none): the run under way is dropped and the table cleared."""
        if self.runner.cancel(CHANNEL, drop=True):
            self.running_changed.emit(False)
        self.table = None
        self.ready.emit(None)
