"""From sentence pairs to padded id tensors, in batches of similar length.

A source is its pieces + EOS; a target is BOS + pieces + EOS, fed as target[:, :-1] and
predicted as target[:, 1:]. Both are cut to the model's max_len.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import torch

from model.data.corpora.pairs import Pair
from model.family import Bundle


def encode_source(tokenizer, text: str, config) -> tuple[list[int], int]:
    """(pieces cut to fit max_len, then EOS; the number of pieces the text had before the cut)."""
    pieces = tokenizer.encode(text)
    return pieces[: config.max_len - 1] + [config.eos_id], len(pieces)


def encode_target(tokenizer, text: str, config) -> list[int]:
    """BOS, pieces cut to fit max_len, EOS."""
    return [config.bos_id] + tokenizer.encode(text)[: config.max_len - 2] + [config.eos_id]


def encode_pairs(pairs, source_tokenizer, target_tokenizer, config):
    """[(source ids, target ids)] as encode_source and encode_target make them."""
    return [
        (encode_source(source_tokenizer, pair.source, config)[0], encode_target(target_tokenizer, pair.target, config))
        for pair in pairs
    ]


def bundle_examples(bundle: Bundle, pairs: Sequence[Pair]) -> list[tuple[list[int], list[int]]]:
    """[(source ids, target ids)] as ``bundle``'s model reads them (its ``source_ids`` and ``target_ids``: a pretrained
    model's special tokens and forced language code included)."""
    return [(bundle.source_ids(pair.source)[0], bundle.target_ids(pair.target)) for pair in pairs]


def length_batches(examples, batch_size: int, rng: random.Random, batch_tokens: int | None = None) -> list[list[int]]:
    """Index batches of similar length: shuffle, sort within pools of 50 batches, shuffle the batches.

    With ``batch_tokens`` a batch holds as many pairs as fit that many padded pieces (source and target
    counted apart, the longer side deciding), so short pairs come in large batches and long ones in small,
    and every step does about the same work; ``batch_size`` then only caps the pairs."""
    order = list(range(len(examples)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: (len(examples[i][0]), len(examples[i][1])))
        if batch_tokens is None:
            batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
            continue
        batch: list[int] = []
        longest = 0
        for index in chunk:
            length = max(len(examples[index][0]), len(examples[index][1]))
            if batch and (max(longest, length) * (len(batch) + 1) > batch_tokens or len(batch) >= batch_size):
                batches.append(batch)
                batch, longest = [], 0
            batch.append(index)
            longest = max(longest, length)
        if batch:
            batches.append(batch)
    rng.shuffle(batches)
    return batches


def collate(examples, pad_id: int, device, target_pad: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad a list of (source, target) id lists -> source [B, S], target [B, T] on device; the target is padded
    with ``target_pad`` when given (a classifier's labels: 0 = no label), else with ``pad_id``.

    Filled in NumPy (a row copy from a list costs a microsecond there, ten times less than a torch
    tensor per row), then handed to torch without a copy."""
    source_length = max(len(s) for s, _ in examples)
    target_length = max(len(t) for _, t in examples)
    source = np.full((len(examples), source_length), pad_id, dtype=np.int64)
    target = np.full((len(examples), target_length), pad_id if target_pad is None else target_pad, dtype=np.int64)
    for row, (s, t) in enumerate(examples):
        source[row, : len(s)] = s
        target[row, : len(t)] = t
    return torch.from_numpy(source).to(device), torch.from_numpy(target).to(device)
