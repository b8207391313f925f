"""What the controllers that run jobs of the runner share, so that none imports another: the one guarded copy of a
model for a job (the window keeps decoding with its own meanwhile; the copy is made in the job's thread, from a
template of the model kept for it), submitting a job on such a copy, ending a run on a channel, and the name a user
knows a model by."""

from __future__ import annotations

import copy
import dataclasses
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import torch
from psygnal import SignalInstance

from explorer.controllers.runner import Job, Runner, user_message
from model.errors import UserError, out_of_memory
from model.family import Bundle
from model.nn.hooks import copy_without_thread_hooks


class _Template(NamedTuple):
    signature: tuple  # the weights' storage and in-place writes when it was made
    network: Any


_TEMPLATES: weakref.WeakKeyDictionary[Any, _Template] = weakref.WeakKeyDictionary()
_TEMPLATES_LOCK = threading.Lock()  # kept in the job that opened a model, read on the window's thread


def _weights(network: Any) -> list[torch.Tensor]:
    tree = network.module_tree()
    return [*tree.parameters(), *tree.buffers()]


def _signature(weights: list[torch.Tensor]) -> tuple:
    return tuple((tensor.data_ptr(), tensor._version) for tensor in weights)  # another tensor, or written in place


def keep_job_template(network: Any) -> Any:
    """Make and keep the template of ``network``'s jobs' copies: its modules copied without a thread's hooks, its
    weights its own (shared: no second copy in memory). Only where nothing else uses ``network``: the job that made it,
    or the window's thread. The template is never run: a job copies it in its own thread (``job_copier``)."""
    weights = _weights(network)
    template = copy_without_thread_hooks(network, shared=weights)
    if template is not network:  # a network that is shared rather than copied (an offloaded one) needs none
        with _TEMPLATES_LOCK:
            _TEMPLATES[network] = _Template(_signature(weights), template)
    return template


def with_job_template(bundle: Bundle) -> Bundle:
    """``bundle``, its model's template kept (``keep_job_template``): in the job that opened or loaded it."""
    keep_job_template(bundle.model)
    return bundle


def _template_of(network: Any) -> Any:
    """``network``'s template: the one kept while its weights are the same tensors, unwritten; else made now."""
    with _TEMPLATES_LOCK:
        kept = _TEMPLATES.get(network)
    if kept is not None and kept.signature == _signature(_weights(network)):
        return kept.network
    return keep_job_template(network)


def job_copier(model: Any, what: str, message: SignalInstance) -> Callable[[], Any] | None:
    """On the window's thread: a function that makes, in the job's thread, a private copy of ``model`` in evaluation
    mode (the window keeps decoding with its own meanwhile). The copy is of ``model``'s template (``keep_job_template``:
    kept when the model was opened, or made here the first time), so the window's thread copies nothing while a
    template stands. None (and "<what> could not start: ..." on ``message``) when the template cannot be made."""
    try:
        template = _template_of(model)
    except Exception as error:  # noqa: BLE001 - a copy that fails becomes a message
        message.emit(f"{what} could not start: {user_message(error)}")
        return None
    return lambda: _private_copy(template)


def _private_copy(template: Any) -> Any:
    """In the job's thread: a copy of ``template`` in evaluation mode (it has no thread's hooks; an offloaded model is
    itself); a UserError when the machine has no memory for it."""
    try:
        return copy.deepcopy(template).eval()
    except (MemoryError, RuntimeError) as error:
        if not out_of_memory(error):
            raise
        raise UserError("not enough memory for the job's own copy of the model: close other programs, or open a "
                        "smaller model") from None  # fmt: skip


def job_bundle(bundle: Any, what: str, message: SignalInstance, model: Any = None) -> Callable[[], Any] | None:
    """A function giving, in the job's thread, ``bundle`` with a private copy (``job_copier``) of its model, or of
    ``model`` (the decoding's own: heads knocked out, a snapshot's); None (and a message) when it cannot be copied."""
    copier = job_copier(bundle.model if model is None else model, what, message)
    return None if copier is None else lambda: dataclasses.replace(bundle, model=copier())


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
    copier = job_bundle(bundle, what, owner.message, model)
    if copier is None:
        return False
    was_running = owner.running

    def ended() -> None:
        owner.progress.emit("")
        if not owner.running:
            owner.running_changed.emit(False)

    owner.runner.submit(
        channel,
        lambda job: work(job, copier()),
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
