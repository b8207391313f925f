"""Compact storage of a snapshot's weights: int8 with one float16 scale per row (the last dimension).

Each row of a weight matrix (an embedding's token, a projection's output unit) is divided by its largest
magnitude / 127 and rounded: the error of a weight is at most half a step, 1/254 of its row's largest
magnitude. Vectors (biases, layer norms) are small and stay in float16.
"""

from __future__ import annotations

import torch

LEVELS = 127  # int8 values used: -127..127, symmetric around 0


def is_quantized(shape: torch.Size | tuple[int, ...]) -> bool:
    """Whether a tensor of this shape is stored as int8 rows (a matrix or more) rather than float16 (a vector)."""
    return len(shape) >= 2


def rows_of(shape: torch.Size | tuple[int, ...]) -> int:
    """How many rows (and so scales) a tensor of this shape has: every dimension but the last."""
    count = 1
    for size in shape[:-1]:
        count *= size
    return count


def quantize_rows(weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 values [*shape], float16 scales [rows]) of a tensor of two dimensions or more."""
    rows = weights.detach().to(torch.float32).reshape(rows_of(weights.shape), weights.shape[-1])  # [R, C]
    largest = rows.abs().amax(dim=1)  # [R]
    scale = (largest / LEVELS).to(torch.float16)  # [R]: rounded first, so that decoding uses exactly this scale
    divisor = torch.where(scale > 0, scale.to(torch.float32), torch.ones_like(largest))  # [R]: an all-zero row stays 0
    values = torch.round(rows / divisor[:, None]).clamp_(-LEVELS, LEVELS).to(torch.int8)  # [R, C]
    return values.reshape(weights.shape).contiguous(), scale.contiguous()


def dequantize_rows(values: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """float32 weights [*shape] from int8 values [*shape] and float16 scales [rows]."""
    rows = values.reshape(rows_of(values.shape), values.shape[-1]).to(torch.float32)  # [R, C]
    return (rows * scale.to(torch.float32)[:, None]).reshape(values.shape)  # [*shape]
