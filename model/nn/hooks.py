"""Named hook points: identity modules placed at every activation a tool reads or patches (TransformerLens's
``HookPoint`` idea, written here).

A ``HookPoint`` returns what it is given. A PyTorch forward hook registered on it (``register_forward_hook``) sees the
activation and may return a replacement, which the rest of the pass then reads: so a tool runs the network's own
forward pass and reads or patches it there, never a rewritten copy. With no hook the point costs one check.
An activation that is expensive to form and not needed by the plain pass (each head's output through its slice of W^O)
is formed only when its point is ``hooked``.

A hook is the calling thread's (``for_this_thread``): it reads and patches only the passes that thread runs. The
window decodes with its model while a job of the runner computes a measure with hooks on the same model, and a hook
registered plainly changed both: the long run of benchmarks/window_states.py found the window's own beam search
reading a batch of four memories that integrated gradients had patched in (a shape error in two threads at once).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import torch
import torch.nn as nn

from model.network import Network

Networked = TypeVar("Networked", bound=Network)
Hook = Callable[[nn.Module, Any, Any], Any]  # (module, inputs, output) -> replacement or None; or a pre-hook with kwargs


def for_this_thread(hook: Hook) -> Hook:
    """``hook`` (a forward hook, or a forward pre-hook taking kwargs) for the passes of the calling thread only: in any
    other thread the module's inputs and output are left as they are.

    The thread is told by its ``Thread`` object, not its identifier: an identifier is reused once its thread has ended,
    and a copy of a model made while a job's hook was on it carries the hook (the long run of
    benchmarks/window_states.py found value zeroing's scaling of one model's values firing, in a later job's thread
    that had its identifier, in the logit lens of the model's copy). ``copy_without_thread_hooks`` leaves them out."""
    owner = threading.current_thread()

    def owned(module: nn.Module, inputs: Any, output: Any) -> Any:
        return hook(module, inputs, output) if threading.current_thread() is owner else None

    owned.thread_owned = True  # type: ignore[attr-defined]  # what copy_without_thread_hooks leaves out
    return owned


def copy_without_thread_hooks(network: Networked, shared: Iterable[torch.Tensor] = ()) -> Networked:
    """A deep copy of ``network`` (a family's network: its ``module_tree``) without the hooks a thread has
    on it (``for_this_thread``'s): a job's hooks belong to the module the job reads, never to a copy made meanwhile (the
    library's own hooks, and any other, are kept). The tensors ``shared`` are the copy's too, not copied."""
    copied = copy.deepcopy(network, {id(tensor): tensor for tensor in shared})
    if copied is network:  # a network too large to copy (an offloaded one) is shared: its threads' hooks stay theirs
        return copied
    for inner in copied.module_tree().modules():  # every network names its modules' tree
        for hooks in (inner._forward_hooks, inner._forward_pre_hooks):
            for key in [key for key, hook in hooks.items() if getattr(hook, "thread_owned", False)]:
                del hooks[key]
    return copied


class HookPoint(nn.Module):
    """The identity, under a name (``encoder.0.self.head_out``: model/interventions/hooked.py names them); no
    parameters, so a network's state dict is the same with or without them."""

    def __init__(self, name: str = "") -> None:
        super().__init__()
        self.name = name

    @property
    def hooked(self) -> bool:
        """Whether a forward hook reads or replaces this point (a pre-hook does not count: it sees only the input)."""
        return bool(self._forward_hooks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x itself, at the cost of a check, when nothing is registered on the point (PyTorch's own module call, with its
        hooks, otherwise; a global module hook sees only points that have hooks of their own)."""
        if not (self._forward_hooks or self._forward_pre_hooks):
            return x
        return super().__call__(x)

    def extra_repr(self) -> str:
        return repr(self.name)
