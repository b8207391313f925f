"""Head importance and the pruning curve of the explored model, measured in a job of the runner.

The core measures (model/attribution/importance.py): every head's importance (Michel et al., 2019: the expected
|∂L/∂ξ_h| of a gate on its output, normalised per layer), then exact match and BLEU of greedy translations as heads
are knocked out from the least important up, one more at a time. Both run in a job of the "head-importance"
channel, over fresh pairs of the model's built-in corpus (or the test split of its corpus file; a pretrained folder,
which names none, is measured on the corpus chosen for it: ``corpora``, ``choose_corpus``), on a copy of the model
taken when the run starts, so the window's model is never used by two threads at once. What the loss and the scores
are is the model's objective's (model/attribution/objectives.py).

``cancel()`` cancels the job's token, which the core reads between sentences and between scoring batches; what the
job still reports is dropped. A new model (or another snapshot of its training) cancels the run and clears the
results.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from psygnal import Signal

from explorer.controllers.background import end_run, job_bundle
from explorer.controllers.explore import ExploreController
from explorer.controllers.runner import Cancelled, Job, Runner
from model.attribution.importance import (
    HeadImportance,
    PruningPoint,
    check_importance,
    head_importance,
    measured_pairs,
    pruning_curve,
)
from model.data.corpora import CorpusSpec
from model.errors import UserError
from model.family import Bundle
from model.kinds import AttentionKind
from model.training.evaluation import Interrupted

FRESH_SEED = 12345  # generation seed of the fresh pairs (the command line's default: the same sentences)
IMPORTANCE, PRUNING = "importance", "pruning curve"  # the stages, as the progress event names them
CHANNEL = "head-importance"
# The built-in corpus a model that names none (a pretrained folder) may be measured on: its sentences are a translation
# model's sources and references, a language model's and a masked-LM's texts
IMPORTANCE_CORPORA = ("toy-fr",)


class ImportanceController:
    """Events: ``progress(stage, done, total)`` (IMPORTANCE or PRUNING), ``importance_ready(HeadImportance or
    None)``, ``curve_ready(list[PruningPoint] or None)``, ``message(text)``, ``running_changed(bool)``,
    ``corpora_changed(list[str])`` (another model: the corpora it may be measured on, none for one that names its own)."""

    corpora_changed = Signal(object)
    progress = Signal(str, int, int)
    importance_ready = Signal(object)
    curve_ready = Signal(object)
    message = Signal(str)
    running_changed = Signal(bool)

    def __init__(self, explore: ExploreController, runner: Runner) -> None:
        self.explore, self.runner = explore, runner
        self.importance: HeadImportance | None = None  # the last importance of the explored model
        self.curve: list[PruningPoint] | None = None  # the last pruning curve of the explored model
        self.n_sentences = 0  # sentences of the last run started
        self.corpus_choice = ""  # the corpus a model that names none is measured on ("": none chosen)
        explore.model_changed.connect(self._on_model_changed)
        explore.weights_changed.connect(self._on_model_changed)  # another snapshot: its heads matter otherwise

    @property
    def running(self) -> bool:
        return self.runner.is_running(CHANNEL)

    def unavailable(self) -> str:
        """Why the explored model cannot be measured ('' when it can)."""
        bundle = self.explore.bundle
        if bundle is None:
            return "Open or train a model first: head importance is measured on the session's model."
        try:
            check_importance(bundle.model)  # the capability table's answer, in its words
        except UserError as error:
            return f"{str(error)[:1].upper()}{str(error)[1:]}."
        if bundle.corpus is None and not self.corpus_choice:
            return "This model does not say which corpus it was trained on: choose the corpus whose sentences it is measured on."
        return ""

    def corpora(self) -> list[str]:
        """The corpora a model that names no training corpus may be measured on; none for a model that names its own."""
        bundle = self.explore.bundle
        return [] if bundle is None or bundle.corpus is not None else list(IMPORTANCE_CORPORA)

    def choose_corpus(self, name: str) -> None:
        """The corpus to measure a model that names none on ("": none chosen)."""
        self.corpus_choice = name

    def importance_table(self, kind: AttentionKind) -> np.ndarray | None:
        """The last per-layer normalised importance of ``kind`` [layers, heads] (a copy), or None."""
        if self.importance is None or kind not in self.importance.normalised:
            return None
        return np.array(self.importance.normalised[kind], copy=True)

    # --- running ----------------------------------------------------------------------------------
    def compute(self, n_sentences: int = 100) -> bool:
        """Measure every head's importance over ``n_sentences`` fresh pairs, then the pruning curve, in a job; a run
        in progress is cancelled first. False (and a message) when the model cannot be measured."""
        why = self.unavailable()
        if why:
            self.message.emit(why)
            return False
        if n_sentences < 1:
            self.message.emit("Head importance needs at least one sentence.")
            return False
        self._end_run()  # a run in progress gives way to this one (and says so)
        bundle = self.explore.bundle
        assert bundle is not None  # unavailable() said so otherwise
        copier = job_bundle(bundle, "Head importance", self.message)  # the window keeps its own model
        if copier is None:
            return False
        self.n_sentences = n_sentences
        self.importance, self.curve = None, None
        corpus = bundle.corpus if bundle.corpus is not None else CorpusSpec(self.corpus_choice)
        self.runner.submit(
            CHANNEL,
            lambda job: self._measure(job, copier(), corpus, n_sentences),
            on_progress=self.progress.emit,
            on_error=lambda text: self.message.emit(f"Head importance could not be measured: {text}"),
            on_end=lambda: self.running_changed.emit(False),
        )
        self.running_changed.emit(True)
        if self.explore.masked_heads:
            self.message.emit("Head importance is measured with every head: the heads knocked out are counted too.")
        return True

    def cancel(self) -> None:
        """Stop the run in progress (its results, if any arrive, are dropped)."""
        if self._end_run():
            self.message.emit("Head importance cancelled.")

    def _on_model_changed(self, _bundle: Bundle | None) -> None:
        self._end_run()
        self.importance, self.curve = None, None
        self.importance_ready.emit(None)
        self.curve_ready.emit(None)
        self.corpora_changed.emit(self.corpora())

    def _end_run(self) -> bool:
        """Cancel the job and drop whatever more it reports; True when a run was in progress."""
        return end_run(self.runner, CHANNEL, self.running_changed)

    # --- the job ------------------------------------------------------------------------------------
    def _measure(self, job: Job, bundle: Any, corpus: CorpusSpec, n_sentences: int) -> None:
        """In the job's thread: pairs, importance, curve, each delivered as it is ready."""

        def reporter(stage: str) -> Any:
            def report(done: int, total: int) -> None:
                job.check()
                job.progress(stage, done, total)

            return report

        try:
            pairs = measured_pairs(corpus, n_sentences, FRESH_SEED)
            job.check()
            importance = head_importance(bundle, pairs, reporter(IMPORTANCE), stop=job.token.is_cancelled)
            job.deliver(self._on_importance, copy.deepcopy(importance))
            counts = list(range(len(importance.ranking()) + 1))  # 0, 1, … every head
            points = pruning_curve(bundle, importance, pairs, counts, reporter(PRUNING), stop=job.token.is_cancelled)
            job.deliver(self._on_curve, copy.deepcopy(points))
        except Interrupted as stopped:  # the core saw the token between two batches
            raise Cancelled from stopped

    def _on_importance(self, importance: HeadImportance) -> None:
        self.importance = importance
        self.importance_ready.emit(importance)

    def _on_curve(self, points: list[PruningPoint]) -> None:
        self.curve = points
        self.curve_ready.emit(points)
