"""The paper's Adam with gradient-norm clipping, over one flat buffer of parameters.

A small Transformer has about eighty parameter tensors. torch.optim.Adam and clip_grad_norm_ visit
them one by one (on the CPU even their "foreach" forms loop per tensor), which costs a few milliseconds
a step: several percent of a training step on two CPU cores. Here every parameter is a view into one
flat tensor, so a step is a handful of whole-buffer operations: gather the gradients (one multi-tensor
copy), take their norm, and run the fused Adam kernel once, which also divides by the clipping factor.

Results equal torch.optim.Adam after torch.nn.utils.clip_grad_norm_ (tests/test_optimizer.py).
Constructing it does not import torch._dynamo, as torch.optim.Adam's first construction does (2 s).
"""

from __future__ import annotations

import torch
import torch.nn as nn


class FlatAdam:
    """Adam (Kingma & Ba) with the paper's settings by default: betas (0.9, 0.98), eps 1e-9.

    Set ``lr`` before each ``step`` (the warm-up schedule lives in the trainer). The model's parameters
    become views into ``flat_parameters``: move the model to its device before building this.
    """

    def __init__(self, model: nn.Module, lr: float = 0.0, betas: tuple[float, float] = (0.9, 0.98), eps: float = 1e-9):
        self._params = [p for p in model.parameters() if p.requires_grad]
        if not self._params:
            raise ValueError("the model has no trainable parameters")
        first = self._params[0]
        if any(p.device != first.device or p.dtype != first.dtype for p in self._params):
            raise ValueError("every parameter must share one device and dtype to be optimised as one buffer")
        self.lr, self.betas, self.eps = lr, betas, eps
        with torch.no_grad():
            self.flat_parameters = torch.cat([p.reshape(-1) for p in self._params])  # [P] every parameter, in order
            for p_range, p in self._ranges():
                p.data = self.flat_parameters[p_range].view_as(p)
        self.flat_gradient = torch.zeros_like(self.flat_parameters)  # [P] gathered before each step
        self._gradient_views = [self.flat_gradient[p_range].view_as(p) for p_range, p in self._ranges()]
        self.exp_avg = torch.zeros_like(self.flat_parameters)  # [P] first moment
        self.exp_avg_sq = torch.zeros_like(self.flat_parameters)  # [P] second moment
        self.steps = torch.zeros((), dtype=torch.float32, device=first.device)  # the fused kernel's step count
        self.fused = first.device.type in ("cpu", "cuda") and hasattr(torch, "_fused_adam_")
        self.skipped = 0  # steps not taken because the gradient was not finite

    def zero_grad(self) -> None:
        for p in self._params:
            p.grad = None

    def _ranges(self):
        offset = 0
        for p in self._params:
            yield slice(offset, offset + p.numel()), p
            offset += p.numel()

    def _flat_gradient(self) -> torch.Tensor:
        """Every parameter's gradient gathered into ``flat_gradient`` [P] (zeros for a parameter that got none)."""
        if self._params[0].data_ptr() != self.flat_parameters.data_ptr():
            raise RuntimeError("the model's parameters were moved after the optimizer was built; build it again")
        if any(p.grad is None for p in self._params):
            self.flat_gradient.zero_()
        pairs = [(view, p.grad) for view, p in zip(self._gradient_views, self._params) if p.grad is not None]
        if pairs:  # one multi-tensor copy: half the time of torch.cat into a new buffer
            torch._foreach_copy_([view for view, _ in pairs], [grad for _, grad in pairs])
        return self.flat_gradient

    def step(self, clip_norm: float = 0.0) -> torch.Tensor:
        """One Adam update; with clip_norm > 0 the gradients are first scaled so their global L2 norm is at
        most clip_norm (as clip_grad_norm_ does). Returns the gradient norm before clipping (a 0-d tensor).
        A gradient that is not finite (NaN or infinite somewhere) takes no step at all: weights, moments and
        the step count stay as they were (``skipped`` counts such steps)."""
        gradient = self._flat_gradient()  # [P]
        norm = torch.dot(gradient, gradient).sqrt_()  # []: a BLAS dot, twice as fast as vector_norm here
        if not bool(torch.isfinite(norm)):  # an overflowed gradient: no step, so the weights stay finite
            self.skipped += 1
            return norm
        # clip_grad_norm_ multiplies by min(1, clip / (norm + 1e-6)); Adam divides by its inverse.
        divisor = ((norm + 1e-6) / clip_norm).clamp_(min=1.0) if clip_norm > 0 else None  # []
        self.steps += 1
        beta1, beta2 = self.betas
        if self.fused:
            torch._fused_adam_(
                [self.flat_parameters],
                [gradient],
                [self.exp_avg],
                [self.exp_avg_sq],
                [],
                [self.steps],
                lr=self.lr,
                beta1=beta1,
                beta2=beta2,
                weight_decay=0.0,
                eps=self.eps,
                amsgrad=False,
                maximize=False,
                grad_scale=divisor,
                found_inf=None,
            )
            return norm
        if divisor is not None:
            gradient.div_(divisor)
        step = float(self.steps)
        self.exp_avg.lerp_(gradient, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(gradient, gradient, value=1 - beta2)
        denominator = (self.exp_avg_sq / (1 - beta2**step)).sqrt_().add_(self.eps)  # [P]
        self.flat_parameters.addcdiv_(self.exp_avg, denominator, value=-self.lr / (1 - beta1**step))
        return norm
