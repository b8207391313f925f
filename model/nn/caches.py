"""What incremental decoding keeps between steps: each decoder layer's past keys and values (in buffers
that double when full), and the memory's keys and values projected once per sentence."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LayerCache:
    """One decoder layer's past keys and values for incremental decoding, in buffers that double when full."""

    keys: torch.Tensor | None = None  # [B, H, capacity, d_k]; the first ``length`` positions are valid
    values: torch.Tensor | None = None  # [B, H, capacity, d_k]
    length: int = 0

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write new keys/values [B, H, Q, d_k] after the cached ones and return views of everything so
        far: [B, H, past + Q, d_k]."""
        start, end = self.length, self.length + keys.shape[2]
        if self.keys is None or self.values is None or self.keys.shape[2] < end:
            capacity = max(end, 2 * self.keys.shape[2] if self.keys is not None else 32)
            grown_keys = keys.new_empty(keys.shape[0], keys.shape[1], capacity, keys.shape[3])
            grown_values = values.new_empty(values.shape[0], values.shape[1], capacity, values.shape[3])
            if self.keys is not None and self.values is not None:
                grown_keys[:, :, :start] = self.keys[:, :, :start]
                grown_values[:, :, :start] = self.values[:, :, :start]
            self.keys, self.values = grown_keys, grown_values
        self.keys[:, :, start:end] = keys
        self.values[:, :, start:end] = values
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]

    def select(self, rows: torch.Tensor) -> LayerCache:
        """Batch rows reordered or replicated (beam search)."""
        return LayerCache(
            None if self.keys is None else self.keys[rows], None if self.values is None else self.values[rows], self.length
        )


@dataclass
class DecoderCache:
    """What incremental decoding keeps between steps: the memory's keys/values and past keys/values."""

    memory_keys_values: list[tuple[torch.Tensor, torch.Tensor]]  # per layer, 2 x [B, H, S, d_k]
    memory_mask: torch.Tensor | None  # [B, 1, 1, S]
    self_attention: list[LayerCache]  # per layer: past keys and values
    length: int = 0  # target positions consumed so far

    def select(self, rows: torch.Tensor) -> DecoderCache:
        """Reorder/replicate batch rows (beam search): every tensor indexed by ``rows``."""
        return DecoderCache(
            memory_keys_values=[(k[rows], v[rows]) for k, v in self.memory_keys_values],
            memory_mask=None if self.memory_mask is None else self.memory_mask[rows],
            self_attention=[layer.select(rows) for layer in self.self_attention],
            length=self.length,
        )

    def truncate(self, length: int) -> None:
        """Forget every position from ``length`` on (stepping back)."""
        for layer in self.self_attention:
            layer.length = min(layer.length, length)
        self.length = min(self.length, length)
