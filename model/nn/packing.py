"""Packed rows: the real (non-padding) positions of a padded batch, kept as one [N, features] block.

Training pays for every position a matmul sees. Padded target positions only ever follow the real ones,
so under the causal mask they influence nothing; the decoder therefore runs its position-wise work
(projections, feed-forward, norms, residuals) on the N real rows only and spreads them back into the
padded [B, T, ...] layout just for attention.
"""

from __future__ import annotations

import torch


class PackedRows:
    def __init__(self, real: torch.Tensor):  # bool [B, T], True at real positions
        self.batch, self.length = real.shape
        self.index = real.reshape(-1).nonzero().squeeze(1)  # [N] flat positions, row-major

    def pack(self, padded: torch.Tensor) -> torch.Tensor:
        """[B, T, C] -> [N, C], in the order of padded[real]."""
        return padded.reshape(self.batch * self.length, -1).index_select(0, self.index)

    def unpack(self, packed: torch.Tensor) -> torch.Tensor:
        """[N, C] -> [B, T, C] with zeros at padded positions."""
        padded = packed.new_zeros(self.batch * self.length, packed.shape[-1])  # [B * T, C]
        return padded.index_copy(0, self.index, packed).view(self.batch, self.length, -1)
