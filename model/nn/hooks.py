"""Named hook points: identity modules placed at every activation a tool reads or patches (TransformerLens's
``HookPoint`` idea, written here).

A ``HookPoint`` returns what it is given. A PyTorch forward hook registered on it (``register_forward_hook``) sees the
activation and may return a replacement, which the rest of the pass then reads: so a tool runs the network's own
forward pass and reads or patches it there, never a rewritten copy. With no hook the point costs one check.
An activation that is expensive to form and not needed by the plain pass (each head's output through its slice of W^O)
is formed only when its point is ``hooked``.
"""

from __future__ import annotations

import torch
import torch.nn as nn


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
