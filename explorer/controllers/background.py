"""What the controllers that run jobs of the runner share, so that none imports another: the one guarded copy of a
model for a job (the window keeps decoding with its own meanwhile), submitting a job on such a copy, ending a run on
a channel, and the name a user knows a model by."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from psygnal import SignalInstance

from explorer.controllers.runner import Job, Runner, user_message
from model.family import Bundle
from model.nn.hooks import copy_without_thread_hooks


def job_model(model: Any, what: str, message: SignalInstance) -> Any | None:
    """A private copy of ``model`` in evaluation mode for a job, copied here, on the window's thread, while nothing
    else uses it; None (and "<what> could not start: ..." on ``message``) when the copy fails (out of memory)."""
    try:
        return copy_without_thread_hooks(model).eval()
    except Exception as error:  # noqa: BLE001 - a copy that fails becomes a message
        message.emit(f"{what} could not start: {user_message(error)}")
        return None


def job_bundle(bundle: Any, what: str, message: SignalInstance, model: Any = None) -> Any | None:
    """``bundle`` with a private copy (``job_model``) of its model, or of ``model`` (the decoding's own: heads knocked
    out, a snapshot's), or None (and a message) when the copy fails."""
    copied = job_model(bundle.model if model is None else model, what, message)
    return None if copied is None else dataclasses.replace(bundle, model=copied)


class JobOwner(Protocol):
    """A feature controller whose jobs report through its own events."""

    runner: Runner
    message: SignalInstance
    progress: SignalInstance
    running_changed: SignalInstance

    @property
    def running(self) -> bool: ...


def submit_on_copy(owner: JobOwner, channel: str, work: Callable[[Job, Any], Any], bundle: Any, what: str,
                   failed: str, model: Any = None) -> bool:  # fmt: skip
    """Run ``work(job, bundle with a private copy of its model, or of ``model``)`` on ``channel`` (False, and
    ``what``'s message, when the model cannot be copied): its progress to ``owner.progress``, its error as
    "``failed``: the reason", ``running_changed`` when the owner starts or stops having jobs."""
    copied = job_bundle(bundle, what, owner.message, model)
    if copied is None:
        return False
    was_running = owner.running

    def ended() -> None:
        owner.progress.emit("")
        if not owner.running:
            owner.running_changed.emit(False)

    owner.runner.submit(
        channel,
        lambda job: work(job, copied),
        on_progress=owner.progress.emit,
        on_error=lambda text: owner.message.emit(f"{failed}: {text}"),
        on_end=ended,
    )
    if not was_running:
        owner.running_changed.emit(True)
    return True


def end_run(runner: Runner, channel: str, running_changed: SignalInstance) -> bool:
    """Cancel the channel's job and drop whatever more it reports; True (and ``running_changed(False)``) when a run
    was in progress."""
    if not runner.cancel(channel, drop=True):
        return False
    running_changed.emit(False)
    return True


def model_name(bundle: Bundle) -> str:
    """The name a user knows a model by: its file's stem, or its description."""
    return Path(bundle.path).stem if bundle.path else bundle.describe().split(":")[0]
