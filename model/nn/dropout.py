"""Dropout that is cheap on the CPU, used everywhere the model drops activations."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Dropout(nn.Module):
    """Inverted dropout. On the CPU its keep-mask is drawn with NumPy (SFC64 bytes compared to a
    threshold), about a fifth of the cost of torch's bernoulli_, whose masks took a fifth of a CPU
    training step. Elsewhere it is F.dropout. The drop probability
    is p rounded to 1/256 (0.1 -> 0.1016) and the kept values are scaled by 1/(1 - that), so
    expectations are exact. Seeded from torch's generator on first use: torch.manual_seed makes
    training repeatable.
    """

    def __init__(self, p: float):
        super().__init__()
        self.p = p
        self._threshold = round(p * 256)  # bytes below it are dropped
        self._scale = 1.0 / (1.0 - self._threshold / 256) if self._threshold < 256 else 0.0
        self._bits: np.random.SFC64 | None = None  # drawn once, from torch's seed, on first use

    def keep_mask(self, x: torch.Tensor) -> torch.Tensor:
        """1 where x is kept, 0 where dropped; x's shape, float32 (the 1/(1-p) scale is the caller's)."""
        if self._bits is None:
            self._bits = np.random.SFC64(int(torch.randint(2**62, ())))
        count = x.numel()
        draws = self._bits.random_raw((count + 7) // 8).view(np.uint8)[:count]  # [count] random bytes
        return torch.from_numpy(np.greater_equal(draws, self._threshold).astype(np.float32)).view(x.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)
        return x * self.keep_mask(x).mul_(self._scale)

    def add_to(self, residual: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """residual + dropout(x), as one addcmul on the CPU."""
        if not self.training or self.p == 0.0:
            return residual + x
        if x.device.type != "cpu":
            return residual + self(x)
        return torch.addcmul(residual, x, self.keep_mask(x), value=self._scale)
