"""copy, reverse, sort: symbol-sequence tasks whose correct attention is known in advance.

copy should attend along the diagonal, reverse along the anti-diagonal, and sort to wherever each
symbol sits in the source; the gold alignments say exactly that.
"""

from __future__ import annotations

import random

from model.data.corpora.pairs import Pair

SYMBOLS = tuple("abcdefghijklmnopqrst")  # 20 symbols, one piece each
MIN_LENGTH, MAX_LENGTH = 3, 12


def _copy(symbols: list[str]) -> tuple[list[str], list[tuple[int, int]]]:
    return list(symbols), [(i, i) for i in range(len(symbols))]


def _reverse(symbols: list[str]) -> tuple[list[str], list[tuple[int, int]]]:
    last = len(symbols) - 1
    return symbols[::-1], [(last - j, j) for j in range(len(symbols))]


def _sort(symbols: list[str]) -> tuple[list[str], list[tuple[int, int]]]:
    order = sorted(range(len(symbols)), key=lambda i: (SYMBOLS.index(symbols[i]), i))  # stable
    return [symbols[i] for i in order], [(i, j) for j, i in enumerate(order)]


TASKS = {"copy": _copy, "reverse": _reverse, "sort": _sort}


def generate(task: str, n: int, seed: int, min_length: int = MIN_LENGTH, max_length: int = MAX_LENGTH) -> list[Pair]:
    transform = TASKS[task]
    rng = random.Random(f"{task}:{seed}")
    pairs = []
    for _ in range(n):
        symbols = [rng.choice(SYMBOLS) for _ in range(rng.randint(min_length, max_length))]
        target, alignment = transform(symbols)
        pairs.append(Pair(" ".join(symbols), " ".join(target), tuple(sorted(alignment))))
    return pairs
