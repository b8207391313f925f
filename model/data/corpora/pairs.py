"""A sentence pair with its gold word alignment: the unit every corpus yields."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    source: str
    target: str
    alignment: tuple[tuple[int, int], ...] = ()  # (source word, target word), words split on whitespace
