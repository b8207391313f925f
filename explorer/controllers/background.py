"""What the controllers that read a whole model in a job of the runner share (head importance, the report card, the
neuron view): the job's own copy of the model, so the window keeps decoding with its one meanwhile, and ending a run on
a channel."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from explorer.controllers.events import Event
from explorer.controllers.runner import Runner, user_message


def working_copy(bundle: Any, what: str, message: Event) -> Any | None:
    """``bundle`` with a copy of its model in evaluation mode, or None (and "<what> could not start: ..." on
    ``message``) when the copy fails (out of memory)."""
    model = copied_model(bundle.model, what, message)
    return None if model is None else dataclasses.replace(bundle, model=model)


def copied_model(model: Any, what: str, message: Event) -> Any | None:
    """A copy of ``model`` in evaluation mode for a job, or None (and "<what> could not start: ..." on ``message``) when
    the copy fails (out of memory)."""
    try:
        return copy.deepcopy(model).eval()
    except Exception as error:  # noqa: BLE001 - a copy that fails becomes a message
        message.emit(f"{what} could not start: {user_message(error)}")
        return None


def end_run(runner: Runner, channel: str, running_changed: Event) -> bool:
    """Cancel the channel's job and drop whatever more it reports; True (and ``running_changed(False)``) when a run
    was in progress."""
    if not runner.cancel(channel, drop=True):
        return False
    running_changed.emit(False)
    return True
