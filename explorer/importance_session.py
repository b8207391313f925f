"""Head importance and the pruning curve of the session's model, measured in a worker thread.

The core measures (model/attribution/importance.py): every head's importance (Michel et al., 2019: the expected
|∂L/∂ξ_h| of a gate on its output, normalised per layer), then exact match and BLEU of greedy translations as heads
are knocked out from the least important up, one more at a time. Both run here on a plain daemon thread, over
fresh pairs of the model's built-in corpus (or the test split of its corpus file), on a copy of the model taken
when the run starts, so the window's model is never used by two threads at once.

The worker reports through queued Qt signals that carry a run number: what arrives from a run cancelled since
(by the user, by another run, by a new model) is dropped. ``cancel()`` sets the run's flag, which the core reads
between sentences and between scoring batches, and the progress callbacks too; ``stop(wait_ms)`` cancels and
joins (the window calls it when it closes). A new model cancels the run and clears the results.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import traceback
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from explorer.runs import Runs
from explorer.workers import describe_error

if TYPE_CHECKING:
    from explorer.session import Session
    from model.kinds import AttentionKind

FRESH_SEED = 12345  # generation seed of the fresh pairs (the command line's default: the same sentences)
IMPORTANCE, PRUNING = "importance", "pruning curve"  # the stages, as the progress signal names them


class _Cancelled(Exception):
    """Raised in the worker's progress callbacks once the run's flag is set: the run ends there."""


class ImportanceSession(QObject):
    progress = Signal(str, int, int)  # (IMPORTANCE or PRUNING, done, total)
    importance_ready = Signal(object)  # model.attribution.importance.HeadImportance, or None: no importance shown
    curve_ready = Signal(object)  # list[PruningPoint] (0, 1, … every head removed), or None: no curve shown
    message = Signal(str)  # what the user should read: why nothing is measured, a run cancelled or failed
    running_changed = Signal(bool)  # a run started (True) or ended, whatever the outcome (False)

    # From the worker thread, each with its run number; queued to this object's (the window's) thread.
    _worker_progress = Signal(int, str, int, int)
    _worker_importance = Signal(int, object)
    _worker_curve = Signal(int, object)
    _worker_message = Signal(int, str)
    _worker_ended = Signal(int)

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.importance: Any = None  # the last HeadImportance of the session's model
        self.curve: list | None = None  # the last pruning curve of the session's model
        self.n_sentences = 0  # sentences of the last run started
        self.runs = Runs("head-importance")  # numbered runs: results of any but the current one are dropped
        self._worker_progress.connect(self._on_worker_progress)
        self._worker_importance.connect(self._on_worker_importance)
        self._worker_curve.connect(self._on_worker_curve)
        self._worker_message.connect(self._on_worker_message)
        self._worker_ended.connect(self._on_worker_ended)
        session.model_changed.connect(self._on_model_changed)

    # --- what the view asks -----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.runs.active

    def unavailable(self) -> str:
        """Why the session's model cannot be measured ('' when it can)."""
        bundle = self.session.bundle
        if bundle is None:
            return "Open or train a model first: head importance is measured on the session's model."
        family = bundle.family
        if not family.capabilities.head_importance:
            return (
                f"Head importance is measured on the app's encoder-decoder Transformer; this model is the "
                f"{family.title} ({family.name}), whose heads cannot be gated or knocked out here."
            )
        if bundle.corpus is None:
            return "This model does not say which corpus it was trained on: head importance needs sentences of that corpus."
        return ""

    def importance_table(self, kind: AttentionKind) -> np.ndarray | None:
        """The last per-layer normalised importance of ``kind`` [layers, heads] (a copy), or None."""
        if self.importance is None or kind not in self.importance.normalised:
            return None
        return np.array(self.importance.normalised[kind], copy=True)

    # --- running ----------------------------------------------------------------------------------
    def compute(self, n_sentences: int = 100) -> bool:
        """Measure every head's importance over ``n_sentences`` fresh pairs, then the pruning curve, in a worker;
        a run in progress is cancelled first. False (and a message) when the model cannot be measured."""
        why = self.unavailable()
        if why:
            self.message.emit(why)
            return False
        if n_sentences < 1:
            self.message.emit("Head importance needs at least one sentence.")
            return False
        self._end_run()  # a run in progress gives way to this one (and says so)
        bundle = self.session.bundle
        assert bundle is not None  # unavailable() said so otherwise
        try:  # the worker's own model: the window keeps decoding with its one meanwhile
            work_bundle = dataclasses.replace(bundle, model=copy.deepcopy(bundle.model).eval())
        except Exception as error:  # noqa: BLE001 - a copy that fails (out of memory) becomes a message
            self.message.emit(f"Head importance could not start: {describe_error(error)}")
            return False
        self.n_sentences = n_sentences
        self.importance, self.curve = None, None
        self.runs.start(self._work, work_bundle, n_sentences)
        self.running_changed.emit(True)
        if self.session.masked_heads:
            self.message.emit("Head importance is measured with every head: the heads knocked out are counted too.")
        return True

    def cancel(self) -> None:
        """Stop the run in progress (its results, if any arrive, are dropped)."""
        if self._end_run():
            self.message.emit("Head importance cancelled.")

    def stop(self, wait_ms: int = 30000) -> bool:
        """Cancel and wait for every worker to end; True when they all have (or there was none)."""
        self.cancel()
        return self.runs.stop(wait_ms)

    def _on_model_changed(self, _bundle) -> None:
        self._end_run()
        self.importance, self.curve = None, None
        self.importance_ready.emit(None)
        self.curve_ready.emit(None)

    def _end_run(self) -> bool:
        """Set the run's flag and drop whatever more it reports; True when a run was in progress."""
        if not self.runs.drop():  # nothing more of that run is shown
            return False
        self.running_changed.emit(False)
        return True

    # --- the worker thread ------------------------------------------------------------------------
    def _work(self, run: int, cancel: threading.Event, bundle, n_sentences: int) -> None:
        """In the worker thread: pairs, importance, curve. Reports only through the ``_worker_*`` signals."""
        from explorer.runtime import for_light_work
        from model.attribution.importance import head_importance, measured_pairs, pruning_curve
        from model.errors import UserError
        from model.training.evaluation import Interrupted

        def reporter(stage: str):
            def report(done: int, total: int) -> None:
                if cancel.is_set():
                    raise _Cancelled
                self._worker_progress.emit(run, stage, done, total)

            return report

        try:
            for_light_work()  # one core: the window (and a training run) keep theirs
            pairs = measured_pairs(bundle.corpus, n_sentences, FRESH_SEED)
            if cancel.is_set():
                raise _Cancelled
            importance = head_importance(bundle, pairs, reporter(IMPORTANCE), stop=cancel.is_set)
            self._worker_importance.emit(run, copy.deepcopy(importance))
            counts = list(range(len(importance.ranking()) + 1))  # 0, 1, … every head
            points = pruning_curve(bundle, importance, pairs, counts, reporter(PRUNING), stop=cancel.is_set)
            self._worker_curve.emit(run, copy.deepcopy(points))
        except (_Cancelled, Interrupted):
            pass  # cancel() has said so already
        except UserError as error:
            self._worker_message.emit(run, f"Head importance could not be measured: {error}")
        except Exception as error:  # noqa: BLE001 - a bug: printed, and shown as one line; the window keeps running
            traceback.print_exc()
            self._worker_message.emit(run, f"Head importance failed: {describe_error(error)}")
        finally:
            self._worker_ended.emit(run)

    # --- back in the window's thread --------------------------------------------------------------
    def _on_worker_progress(self, run: int, stage: str, done: int, total: int) -> None:
        if self.runs.is_current(run):
            self.progress.emit(stage, done, total)

    def _on_worker_importance(self, run: int, importance) -> None:
        if self.runs.is_current(run):
            self.importance = importance
            self.importance_ready.emit(importance)

    def _on_worker_curve(self, run: int, points) -> None:
        if self.runs.is_current(run):
            self.curve = points
            self.curve_ready.emit(points)

    def _on_worker_message(self, run: int, text: str) -> None:
        if self.runs.is_current(run):
            self.message.emit(text)

    def _on_worker_ended(self, run: int) -> None:
        if self.runs.finish(run):
            self.running_changed.emit(False)
