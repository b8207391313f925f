"""A sentence pair with its gold word alignment: the unit every corpus yields."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    source: str
    target: str
    alignment: tuple[tuple[int, int], ...] = ()  # (source word, target word), words split on whitespace

    def alignment_text(self) -> str:
        """Pharaoh format, 'i-j i-j ...', as word-alignment tools write it."""
        return " ".join(f"{i}-{j}" for i, j in self.alignment)
