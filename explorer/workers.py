"""Work that must not freeze the window: training (a QObject moved to a QThread) and short tasks such
as loading a model or a corpus preview (QRunnables on the global QThreadPool).

Workers emit plain Python values and numpy copies, never live tensors the GUI could touch while
the worker still uses them. Training checks its cancel flag before every step (TrainingControl).
"""

from __future__ import annotations

import gc
import threading
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal, Slot

# The core (and with it PyTorch) is imported where a worker needs it, so the window can show first.
if TYPE_CHECKING:
    from model.data.corpora import CorpusSpec
    from model.training.pipeline import TokenizerOptions
    from model.training.trainer import TrainingOptions


def describe_error(error: BaseException) -> str:
    """One line a user can act on: the message of errors we raise, the type for anything else."""
    if isinstance(error, (ValueError, OSError, KeyError, RuntimeError)) and str(error):
        text = str(error)
        if "out of memory" in text.lower():
            return "The GPU ran out of memory: try a smaller batch size or model, or train on the CPU."
        return text.splitlines()[0] if isinstance(error, RuntimeError) else text
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@contextmanager
def collector_paused():
    """No full garbage-collector passes while a corpus, tokenizers, model and batches are built.

    A full pass holds the GIL, and so freezes the window, for as long as it takes: 100-200 ms once a
    20,000-pair corpus is in memory. What is built here lives until training ends, so afterwards it
    is frozen (``gc.freeze``) and later passes skip it. Building creates no reference cycles to collect.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


class _TaskSignals(QObject):
    done = Signal(object)
    failed = Signal(str)


class Task(QRunnable):
    """Run ``function()`` on the thread pool; ``signals.done`` gets its result, ``signals.failed`` a message."""

    def __init__(self, function):
        super().__init__()
        self.function = function
        self.signals = _TaskSignals()

    def run(self) -> None:
        try:
            from model.runtime import set_cpu_threads

            set_cpu_threads(1)  # light work (loading, reading): the cores stay with a training run
            result = self.function()
        except Exception as error:  # noqa: BLE001 - every failure becomes a message in the window
            self.signals.failed.emit(describe_error(error))
        else:
            self.signals.done.emit(result)


def start_task(function, on_done, on_failed, daemon: bool = False) -> Task:
    """Run ``function`` off the GUI thread. ``daemon=True`` runs it on a daemon Python thread instead of the
    Qt pool, whose threads the application waits for when it ends: a task that may take long or block
    (reading a file the user named) then never keeps the process alive after the window closes."""
    task = Task(function)
    task.setAutoDelete(False)  # the caller keeps it alive until its signals have been delivered
    task.signals.done.connect(on_done)
    task.signals.failed.connect(on_failed)
    if daemon:
        threading.Thread(target=task.run, name="task", daemon=True).start()
    else:
        QThreadPool.globalInstance().start(task)
    return task


@dataclass
class TrainingRequest:
    """Everything the training tab collected: what a ``transformer-explorer train`` command line holds."""

    corpus: CorpusSpec  # model.corpora
    tokenizer: TokenizerOptions  # model.training.pipeline
    model_options: dict  # TransformerConfig fields other than the vocabulary sizes
    training: TrainingOptions  # model.training.trainer
    device: str = "auto"


class TrainingWorker(QObject):
    """Prepares corpus, tokenizers and model, then trains, reporting through signals."""

    status = Signal(str)  # what it is doing now ("training tokenizers", ...)
    prepared = Signal(dict)  # sizes of the splits and the model's description
    progress = Signal(dict)  # a model.training.trainer.Progress as a dict
    validation = Signal(dict)  # epoch, step, scores and sample translations
    finished = Signal(object, str)  # the trained ModelBundle (on the CPU) or None, and why it stopped
    failed = Signal(str)

    def __init__(self, request: TrainingRequest):
        from model.training.trainer import TrainingControl

        super().__init__()
        self.request = request
        self.control = TrainingControl()
        self.keep_on_cancel = True

    def cancel(self, keep: bool) -> None:
        self.keep_on_cancel = keep
        self.control.cancel()

    @Slot()
    def run(self) -> None:
        from model.device import describe_device, resolve_device
        from model.runtime import set_cpu_threads
        from model.training.pipeline import prepare
        from model.training.trainer import Trainer

        request = self.request
        try:
            set_cpu_threads()  # every core for this thread's team (the others run torch on one)
            device = resolve_device(request.device)
            with collector_paused():
                bundle, splits = prepare(request.corpus, request.tokenizer, request.model_options,
                                         request.training.seed, report=self.status.emit)
                if self.control.cancelled:
                    self.finished.emit(None, "cancelled")
                    return
                self.prepared.emit({"train": len(splits.train), "valid": len(splits.valid), "test": len(splits.test),
                                    "skipped": splits.skipped_lines, "model": bundle.describe(),
                                    "device": describe_device(device)})
                self.status.emit(f"Encoding {len(splits.train):,} training pairs…")
                trainer = Trainer(bundle.model, bundle.source_tokenizer, bundle.target_tokenizer, splits,
                                  request.training, device, on_progress=lambda p: self.progress.emit(asdict(p)),
                                  on_validation=self._emit_validation, control=self.control, history=bundle.history)
            self.status.emit(f"Training on {describe_device(device)}: the first step…")
            result = trainer.run()
            bundle.training = request.training.to_dict()
            bundle.history["stopped"] = result.stopped
            bundle.model.to("cpu").eval()
            keep = result.stopped != "cancelled" or self.keep_on_cancel
            why = f"{result.stopped} ({result.detail})" if result.detail else result.stopped
            self.finished.emit(bundle if keep and result.usable else None, why)  # never NaN weights
        except Exception as error:  # noqa: BLE001 - shown in the window; the app keeps running
            traceback.print_exc()
            self.failed.emit(describe_error(error))

    def _emit_validation(self, validation) -> None:
        self.validation.emit({"epoch": validation.epoch, "step": validation.step, "best": validation.best,
                              **validation.scores.to_dict(),
                              "samples": [tuple(s) for s in validation.scores.samples]})


class TrainingThread:
    """A TrainingWorker on its own QThread, started at once; ``stop()`` cancels and joins."""

    def __init__(self, request: TrainingRequest):
        self.thread = QThread()
        self.thread.setObjectName("training")
        self.worker = TrainingWorker(request)
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.run)
        self.worker.finished.connect(self.thread.quit)
        self.worker.failed.connect(self.thread.quit)

    def start(self) -> None:
        self.thread.start()

    def is_running(self) -> bool:
        return self.thread.isRunning()

    def stop(self, keep: bool = False, wait_ms: int = 60000) -> bool:
        """Cancel within one step and wait for the thread to end; True when it has."""
        self.worker.cancel(keep)
        self.thread.quit()
        return self.thread.wait(wait_ms)
