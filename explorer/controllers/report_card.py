"""The explanation report card of the explored model, graded in a job of the runner (model/grading/).

``compute(n_sentences, sanity_pairs, shuffled_steps)`` grades every attribution method on N held-out pairs of the
model's corpus, on a copy of the model taken when the run starts (the window keeps decoding with its own), after
training a model on shuffled targets for the data randomisation check when ``shuffled_steps`` > 0. The job reports
``progress(stage, done, total)`` (the shuffled-target training's steps, the sentences, the sanity checks' models) and
checks its token between batches of passes, so Cancel stops it within a batch; a new model cancels the run and clears
the card. ``save(path)`` writes the card shown as a CSV or its one-page figure, by the suffix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from explorer.controllers.background import end_run, working_copy
from explorer.controllers.compare import model_name
from explorer.controllers.events import Event
from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Job, Runner
from model.errors import UserError
from model.family import Bundle
from model.figures.report_card import save_card
from model.grading.card import ReportCard
from model.grading.cases import GradingError, check_gradable, grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.sanity import shuffled_targets_model

CHANNEL = "report-card"
SHUFFLED = "shuffled targets"  # the training stage, as the progress event names it


class ReportCardController:
    """Events: ``progress(stage, done, total)``, ``ready(ReportCard or None)``, ``message(text)``,
    ``running_changed(bool)``."""

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.progress = Event("progress")
        self.ready = Event("ready")
        self.message = Event("message")
        self.running_changed = Event("running_changed")
        self.card: ReportCard | None = None
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(self._on_model_changed)

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL)

    def unavailable(self) -> str:
        """Why the explored model cannot be graded ('' when it can)."""
        bundle = self.explore.bundle
        if bundle is None:
            return "Open or train a model first: the report card grades the session's model."
        try:
            check_gradable(bundle)
        except GradingError as error:
            return f"The report card cannot grade this model: {error}."
        if bundle.corpus is None:
            return "This model does not say which corpus it was trained on: the report card needs held-out pairs of it."
        return ""

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
        work = working_copy(bundle, "The report card", self.message)  # the window keeps decoding with its own model
        if work is None:
            return False
        self.card = None
        self.ready.emit(None)
        self.runner.submit(
            CHANNEL,
            lambda job: self._grade(job, work, n_sentences, sanity_pairs, shuffled_steps),
            on_done=self._on_card,
            on_progress=self.progress.emit,
            on_error=lambda text: self.message.emit(f"The report card could not be made: {text}"),
            on_end=lambda: self.running_changed.emit(False),
        )
        self.running_changed.emit(True)
        return True

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
            written = save_card(self.card, path)
        except (UserError, OSError) as error:
            self.message.emit(f"The report card could not be saved: {error}")
            return None
        self.message.emit(f"Saved the report card to {written}.")
        return written

    def _on_model_changed(self, _bundle: Bundle | None) -> None:
        self._end_run()
        self.card = None
        self.ready.emit(None)

    def _end_run(self) -> bool:
        return end_run(self.runner, CHANNEL, self.running_changed)

    def _on_card(self, card: ReportCard) -> None:
        self.card = card
        self.ready.emit(card)

    # --- the job ------------------------------------------------------------------------------------
    @staticmethod
    def _grade(job: Job, bundle: Any, n_sentences: int, sanity_pairs: int, shuffled_steps: int) -> ReportCard:
        """In the job's thread: the shuffled-target model (when asked), then the card."""
        shuffled, note = None, ""
        if shuffled_steps:
            shuffled = shuffled_targets_model(
                bundle, shuffled_steps, check=job.check, on_step=lambda done, total: job.progress(SHUFFLED, done, total)
            )
            note = f"{shuffled_steps} steps on shuffled {bundle.corpus.name} targets"
        corpus, pairs = grading_pairs(bundle, None, n_sentences, 0)
        settings = CardSettings(sanity_pairs=sanity_pairs, shuffled=shuffled, shuffled_note=note)
        name = model_name(bundle)
        return grade(bundle, pairs, settings, corpus=corpus, model_name=name, progress=job.progress, check=job.check)
