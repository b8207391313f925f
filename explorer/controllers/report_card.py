"""The explanation report card of the explored model, graded in a job of the runner (model/grading/).

``compute(n_sentences, sanity_pairs, shuffled_steps)`` grades every attribution method on N held-out pairs of the
model's corpus, on a copy of the model taken when the run starts (the window keeps decoding with its own), after
training a model on shuffled targets for the data randomisation check when ``shuffled_steps`` > 0. The job reports
``progress(stage, done, total)`` (the shuffled-target training's steps, the sentences, the sanity checks' models) and
checks its token between batches of passes, so Cancel stops it within a batch; a new model cancels the run and clears
the card. ``save(path)`` writes the card shown as a CSV or its one-page figure, by the suffix.

``compute_sentence(sanity_pairs)`` grades the decoding the Explore tab shows instead (model/grading/sentence.py): its
source ids and output tokens up to the trace's step (forced tokens, the beam hypothesis chosen, a sampled output),
through the model that decoded them (heads knocked out as the trace records them), read through
explorer/controllers/followed.py. ``graded`` is the decoding a sentence card grades; when the Explore tab shows
another, the view says so in one line (the card is graded again when asked: every method runs on it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from psygnal import Signal

from explorer.controllers.background import end_run, job_bundle, model_name
from explorer.controllers.explore import ExploreController
from explorer.controllers.followed import WORDS, FollowedDecoding, followed_decoding, unfollowed
from explorer.controllers.runner import Job, Runner
from model.cli.recorded import CardRequest, model_reference, report_card_record
from model.data.corpora import CorpusSpec
from model.errors import UserError
from model.family import Bundle
from model.figures.report_card import save_card
from model.grading.card import ReportCard
from model.grading.cases import GradingError, check_gradable, grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.sanity import shuffled_targets_model
from model.grading.sentence import decoded_case, grade_decoding
from model.provenance.record import Record

CHANNEL = "report-card"
SHUFFLED = "shuffled targets"  # the training stage, as the progress event names it
GRADING_CORPORA = ("toy-fr",)  # the built-in translation corpus a pretrained model may be graded on (gold alignments)
CANNOT_FOLLOW = {WORDS: "it grades pieces"}  # the decoding modes a sentence card cannot follow


class ReportCardController:
    """Events: ``progress(stage, done, total)``, ``ready(ReportCard or None)``, ``message(text)``,
    ``running_changed(bool)``."""

    progress = Signal(str, int, int)
    ready = Signal(object)
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.card: ReportCard | None = None
        self.graded: FollowedDecoding | None = None  # the decoding the card grades (None: a card of the corpus)
        self.corpus_choice = ""  # the corpus a model that says none is graded on (``choose_corpus``)
        self.request = CardRequest()  # what the last Grade asked: the record of the card it makes
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(self._on_model_changed)
        explore.trace_changed.connect(lambda _trace: self._on_trace_changed())
        explore.view_changed.connect(lambda _view: self._on_trace_changed())  # words shown: the card says it grades pieces

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL)

    def unavailable(self, sentence: bool = False) -> str:
        """Why the explored model cannot be graded ('' when it can; ``sentence``: on the decoding shown, which needs no
        corpus)."""
        bundle = self.explore.bundle
        if bundle is None:
            return "Open or train a model first: the report card grades the session's model."
        try:
            check_gradable(bundle)
        except GradingError as error:
            return f"The report card cannot grade this model: {error}."
        if bundle.corpus is None and not sentence and not self.corpus_choice:
            return "This model does not say which corpus it was trained on: the report card needs held-out pairs of it."
        return ""

    def shuffled_unavailable(self) -> str:
        """Why the data randomisation cannot be run for the explored model ('' when it can): its twin on shuffled
        targets is trained here, from the model's own configuration and corpus."""
        bundle = self.explore.bundle
        if bundle is None or (bundle.family.capabilities.trainable and bundle.corpus is not None):
            return ""
        return "The model on shuffled targets is trained here like this one: a model not trained here has no recipe for it."

    def corpora(self) -> list[str]:
        """The corpora a model that says no training corpus may be graded on (the built-in translation corpus); none
        for a model that says its own."""
        bundle = self.explore.bundle
        return [] if bundle is None or bundle.corpus is not None else list(GRADING_CORPORA)

    def choose_corpus(self, name: str) -> None:
        """The corpus to grade a model that says none on ("" : none chosen)."""
        self.corpus_choice = name

    # --- running ----------------------------------------------------------------------------------
    def compute(self, n_sentences: int = 100, sanity_pairs: int = 10, shuffled_steps: int = 0) -> bool:
        """Grade the explored model in a job (a run in progress is cancelled first); False (and a message) when it
        cannot be graded."""
        why = self.unavailable() or ("" if n_sentences >= 1 else "The report card needs at least one sentence.")
        if why:
            self.message.emit(why)
            return False
        self._end_run()
        bundle = self.explore.bundle
        assert bundle is not None  # unavailable() said so otherwise
        copier = job_bundle(bundle, "The report card", self.message)  # the window keeps decoding with its own model
        if copier is None:
            return False
        corpus = CorpusSpec(self.corpus_choice) if bundle.corpus is None and self.corpus_choice else None
        self._start(None, lambda job: self._grade(job, copier(), n_sentences, sanity_pairs, shuffled_steps, corpus))
        self.request = CardRequest(corpus.name if corpus is not None else None, n_sentences, (), sanity_pairs,
                                   None, shuffled_steps or None)  # fmt: skip
        return True

    def compute_sentence(self, sanity_pairs: int = 1) -> bool:
        """Grade the decoding the Explore tab shows, up to its step, in a job (a run in progress is cancelled first);
        False (and a message) when it cannot be graded."""
        why, decoding = self.unavailable(sentence=True), followed_decoding(self.explore)
        if not why and decoding is None:
            why = "Translate a sentence first: the report card of a sentence grades its decoding."
        if why or decoding is None:
            self.message.emit(why)
            return False
        try:
            decoded_case(decoding.bundle, decoding.text, decoding.source_ids, decoding.chosen_ids, decoding.translation)
        except GradingError as error:
            self.message.emit(f"The report card cannot grade this sentence: {error}.")
            return False
        self._end_run()
        sentence_copier = job_bundle(decoding.model_bundle(), "The report card", self.message)  # the decoding's own
        if sentence_copier is None:
            return False
        self._start(decoding, lambda job: self._grade_sentence(job, sentence_copier(), decoding, sanity_pairs))
        return True

    def _start(self, graded: FollowedDecoding | None, grade: Callable[[Job], ReportCard]) -> None:
        """Clear the card shown and run ``grade`` in a job (``graded``: the decoding a sentence card grades)."""
        self.card, self.graded = None, graded
        self.ready.emit(None)
        self.runner.submit(
            CHANNEL,
            grade,
            on_done=self._on_card,
            on_progress=self.progress.emit,
            on_error=lambda text: self.message.emit(f"The report card could not be made: {text}"),
            on_end=lambda: self.running_changed.emit(False),
        )
        self.running_changed.emit(True)

    def _on_trace_changed(self) -> None:
        """A sentence card of another decoding than the one shown says so (graded again when asked)."""
        graded, decoding = self.graded, followed_decoding(self.explore)
        if graded is None or self.card is None or decoding is None:
            return
        if decoding.key == graded.key:
            self.message.emit(" ".join(part for part in (self.card.caption(), self.note()) if part))
            return
        self.message.emit(
            f"This card grades “{graded.translation}”; the Explore tab shows “{decoding.translation}”: press This "
            f"sentence to grade it."
        )

    def note(self) -> str:
        """The line a sentence card shows when it cannot follow the decoding shown ('' when it follows it)."""
        return unfollowed("report card", followed_decoding(self.explore), CANNOT_FOLLOW)

    def cancel(self) -> None:
        """Stop the run in progress (what it still reports is dropped)."""
        if self._end_run():
            self.message.emit("Report card cancelled.")

    def save(self, path: str | Path) -> Path | None:
        """The card shown, as a CSV or its figure by the suffix; None (and the reason) when there is none or it cannot
        be written."""
        if self.card is None:
            self.message.emit("No report card to save yet: press Grade first.")
            return None
        try:
            written = save_card(self.card, path, record=self._record())
        except (UserError, OSError) as error:
            self.message.emit(f"The report card could not be saved: {error}")
            return None
        self.message.emit(f"Saved the report card to {written}.")
        return written

    def _record(self) -> Record | None:
        """The ``report-card`` command of the card shown (model/provenance/), as the command line records it; a
        sentence's card (graded on the decoding shown, which the command does not grade) says so."""
        bundle = self.explore.bundle
        if bundle is None:
            return None
        model = model_reference(bundle)
        record = report_card_record(bundle, model, self.request)
        if self.graded is not None:
            record.beyond_the_command(f"the card of one sentence's decoding (“{self.graded.translation}”)")
        return record

    def _on_model_changed(self, _bundle: Bundle | None) -> None:
        self._end_run()
        self.card, self.graded = None, None
        self.ready.emit(None)

    def _end_run(self) -> bool:
        return end_run(self.runner, CHANNEL, self.running_changed)

    def _on_card(self, card: ReportCard) -> None:
        self.card = card
        self.ready.emit(card)
        if self.graded is not None:
            self._on_trace_changed()  # the caption, and what the card does not follow or that another decoding is shown

    # --- the job ------------------------------------------------------------------------------------
    @staticmethod
    def _grade_sentence(job: Job, bundle: Any, decoding: FollowedDecoding, sanity_pairs: int) -> ReportCard:
        """In the job's thread: the card of one decoding (``bundle``: its model's copy)."""
        settings = CardSettings(sanity_pairs=sanity_pairs)
        name = model_name(bundle)
        args = (decoding.text, decoding.source_ids, decoding.chosen_ids, decoding.translation, settings, name)
        return grade_decoding(bundle, *args, progress=job.progress, check=job.check)

    @staticmethod
    def _grade(
        job: Job, bundle: Any, n_sentences: int, sanity_pairs: int, shuffled_steps: int, corpus: CorpusSpec | None = None
    ) -> ReportCard:
        """In the job's thread: the shuffled-target model (when asked), then the card."""
        shuffled, note = None, ""
        if shuffled_steps:
            shuffled = shuffled_targets_model(
                bundle, shuffled_steps, check=job.check, on_step=lambda done, total: job.progress(SHUFFLED, done, total)
            )
            note = f"{shuffled_steps} steps on shuffled {bundle.corpus.name} targets"
        corpus, pairs = grading_pairs(bundle, corpus, n_sentences, 0)
        settings = CardSettings(sanity_pairs=sanity_pairs, shuffled=shuffled, shuffled_note=note)
        name = model_name(bundle)
        return grade(bundle, pairs, settings, corpus=corpus, model_name=name, progress=job.progress, check=job.check)
