"""Work that must not freeze the window: training (a QObject moved to a QThread) and short tasks such
as loading a model or a corpus preview (QRunnables on the global QThreadPool).

Workers emit plain Python values and numpy copies, never live tensors the GUI could touch while
the worker still uses them. Training checks its cancel flag before every step (TrainingControl).
"""

from __future__ import annotations

import threading
import traceback
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QRunnable, QThread, QThreadPool, Signal, Slot

from explorer.runtime import collector_paused, for_light_work, for_training

# The core (and with it PyTorch) is imported where a worker needs it, so the window can show first.
if TYPE_CHECKING:
    from model.training.run import TrainingRequest


def describe_error(error: BaseException) -> str:
    """One line a user can act on: the message of errors we raise, the type for anything else."""
    if isinstance(error, (ValueError, OSError, KeyError, RuntimeError)) and str(error):
        text = str(error)
        if "out of memory" in text.lower():
            return "The GPU ran out of memory: try a smaller batch size or model, or train on the CPU."
        return text.splitlines()[0] if isinstance(error, RuntimeError) else text
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


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
            for_light_work()  # loading, reading: the cores stay with a training run
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


class TrainingWorker(QObject):
    """The core's one training path (model.training.run.train) on a QThread: its callbacks become signals
    carrying the core's typed objects."""

    status = Signal(str)  # what it is doing now ("Training the tokenizer…", ...)
    prepared = Signal(object)  # a model.training.run.Prepared: split sizes, the model's description, the device
    progress = Signal(object)  # a model.training.trainer.Progress, after every step
    validation = Signal(object)  # a model.training.trainer.Validation
    finished = Signal(object)  # a model.training.run.TrainingOutcome (its bundle None when nothing is kept)
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
        from model.errors import UserError
        from model.kinds import StopReason
        from model.training.run import TrainingCallbacks, train

        callbacks = TrainingCallbacks(
            on_stage=self.status.emit,
            on_prepared=self.prepared.emit,
            on_progress=self.progress.emit,
            on_validation=self.validation.emit,
            preparing=collector_paused,
        )
        try:
            for_training()  # every core for this thread's team (the others run torch on one)
            outcome = train(self.request, callbacks, self.control)
        except UserError as error:
            self.failed.emit(str(error))
            return
        except Exception as error:  # noqa: BLE001 - a bug: shown in the window (and printed); the app keeps running
            traceback.print_exc()
            self.failed.emit(describe_error(error))
            return
        if outcome.stopped is StopReason.CANCELLED and not self.keep_on_cancel:
            outcome.bundle = None
        self.finished.emit(outcome)


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
