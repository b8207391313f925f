"""The length experiment in the window (model/lengths/): each positional scheme's model trained alike and read at every
length, in a job of the runner (every core, as training) with progress and Cancel; its result kept; a point of its
curves opens that scheme's model and a sentence of that length (the first it decoded wrongly, else the first read) in
the Explore tab, so the attention where it fails can be seen.

``run(settings)`` starts (a run in progress is cancelled first; bad settings are one message); the job reports
``progress(stage, done, total)`` ("rope: training", steps; "rope: reading", lengths) and checks its token between
steps. Each run writes its models in a folder of its own under ``folder`` (a temporary one by default).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from psygnal import Signal

from explorer.controllers.background import end_run
from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Job, Runner
from explorer.runtime import for_training
from model.cli.recorded import lengths_record
from model.errors import UserError
from model.figures.lengths import save_lengths
from model.io.models import open_model
from model.lengths.experiment import LengthError, LengthResult, LengthRow, LengthSettings, check_settings, run_lengths

CHANNEL = "lengths"


class LengthsController:
    """Events: ``progress(stage, done, total)``, ``ready(LengthResult or None)``, ``message(text)``,
    ``running_changed(bool)``, ``opened(scheme, length)`` (a point's model and sentence are in the Explore tab)."""

    progress = Signal(str, int, int)
    ready = Signal(object)
    message = Signal(str)
    running_changed = Signal(bool)
    opened = Signal(str, int)

    def __init__(self, explore: ExploreController, runner: Runner, folder: str | Path | None = None) -> None:
        self.explore, self.runner = explore, runner
        self.folder = Path(folder) if folder is not None else Path(tempfile.gettempdir()) / "transformer-explorer-lengths"
        self.result: LengthResult | None = None

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL)

    def run(self, settings: LengthSettings) -> bool:
        """Start the experiment in a job; False (and a message) for settings it cannot run with."""
        try:
            check_settings(settings)
        except LengthError as error:
            self.message.emit(f"The length experiment cannot run: {error}.")
            return False
        end_run(self.runner, CHANNEL, self.running_changed)
        self.result = None
        self.ready.emit(None)
        folder = self.folder / time.strftime("%Y%m%d-%H%M%S")
        self.runner.submit(
            CHANNEL,
            lambda job: self._run(job, settings, folder),
            on_done=self._on_done,
            on_progress=self.progress.emit,
            on_error=lambda text: self.message.emit(f"The length experiment stopped: {text}"),
            on_end=lambda: self.running_changed.emit(False),
            policy=for_training,
        )
        self.running_changed.emit(True)
        self.message.emit(f"Training {len(settings.schemes)} models, {settings.steps:,} steps each…")
        return True

    @staticmethod
    def _run(job: Job, settings: LengthSettings, folder: Path) -> LengthResult:
        return run_lengths(settings, folder, job.progress, job.check)

    def _on_done(self, result: LengthResult) -> None:
        self.result = result
        self.ready.emit(result)
        minutes = sum(result.seconds.values()) / 60
        self.message.emit(f"The length experiment ran in {minutes:.1f} minutes: click a point to open its model and sentence.")

    def cancel(self) -> None:
        if end_run(self.runner, CHANNEL, self.running_changed):
            self.message.emit("Length experiment cancelled.")

    def row(self, scheme: str, length: int) -> LengthRow | None:
        if self.result is None:
            return None
        return next((row for row in self.result.of(scheme) if row.length == length), None)

    def open_point(self, scheme: str, length: int) -> bool:
        """Open ``scheme``'s model and the sentence of ``length`` it got wrong (else the first read) in Explore."""
        row = self.row(scheme, length)
        if row is None or self.result is None:
            self.message.emit("Run the length experiment first: a point opens its model and sentence.")
            return False
        try:
            bundle = open_model(self.result.models[scheme])
        except (UserError, OSError) as error:
            self.message.emit(f"The {scheme} model could not be opened: {error}")
            return False
        self.explore.set_source(row.example)  # the model opens on this sentence (not an example swapped in for another)
        self.explore.set_model(bundle)
        what = "a sentence it decoded wrongly" if row.wrong else "a sentence"
        # the Explore tab's controls show the sentence, and its hint where it came from (text_replaced)
        self.explore.show_token(row.example, "encoder", None, f"the length experiment: {what} of {length} pieces, read by {scheme}")
        self.opened.emit(scheme, length)
        verdict = "decoded it wrongly" if row.wrong else "decoded every sentence of it right"
        self.message.emit(f"{scheme} at length {length}: exact match {row.exact_match:.0%}; the model {verdict}.")
        return True

    def save(self, path: str | Path) -> Path | None:
        if self.result is None:
            self.message.emit("No length experiment to save yet: press Run first.")
            return None
        try:
            written = save_lengths(self.result, path, record=lengths_record(self.result.settings))
        except (UserError, OSError) as error:
            self.message.emit(f"The length experiment could not be saved: {error}")
            return None
        self.message.emit(f"Saved the length experiment to {written}.")
        return written
