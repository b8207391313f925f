"""Word alignments read from cross-attention, scored against a corpus's gold alignments (AER).

Each gold pair is run teacher-forced through the inspection path; its piece-level cross-attention
becomes word-level (keys summed over a word's pieces, queries averaged) and every target word is
linked to the source word it attends to most. Two readings of the rows are scored: the step that
*predicts* a word ("predicting") and the step where the word is the decoder's *input* ("input").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.data.batching import collate, encode_pairs
from model.data.corpora import Pair
from model.decoding.trace import group_matrix, word_groups
from model.family import Bundle

READINGS = ("predicting", "input")


@dataclass
class AlignmentReport:
    head_aer: np.ndarray  # [readings, layers, heads] corpus-level AER of each head
    layer_aer: np.ndarray  # [readings, layers] of the mean over a layer's heads
    average_aer: np.ndarray  # [readings] of the mean over all layers and heads
    n_pairs: int

    @property
    def best(self) -> tuple[float, int, int, str]:
        """(AER, layer, head, reading) of the best single head."""
        reading, layer, head = np.unravel_index(int(np.argmin(self.head_aer)), self.head_aer.shape)
        return float(self.head_aer[reading, layer, head]), int(layer), int(head), READINGS[reading]

    def ranking(self, reading: str = "predicting") -> list[tuple[int, int, float]]:
        """(layer, head, AER) from best to worst for one reading."""
        table = self.head_aer[READINGS.index(reading)]
        order = np.argsort(table, axis=None)
        return [(int(i // table.shape[1]), int(i % table.shape[1]), float(table.flat[i])) for i in order]


def alignment_links(matrix: np.ndarray) -> set[tuple[int, int]]:
    """Word attention [target words, source words] -> {(source, target)}: each target word links to
    the source word it attends to most."""
    if matrix.size == 0:
        return set()
    return {(int(source), target) for target, source in enumerate(matrix.argmax(axis=-1))}


class AlignmentCounts:
    """Link counts summed over sentences, for the AER (Och & Ney 2003) of any array of readings:
    AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|), with A the predicted links, S the sure gold links and
    P the possible ones (P includes S; P = S when a corpus gives no possible links)."""

    def __init__(self, shape: tuple[int, ...] = ()):
        self.sure_hits = np.zeros(shape)
        self.possible_hits = np.zeros(shape)
        self.predicted = np.zeros(shape)
        self.gold = np.zeros(shape)

    def add(self, index, links: set, gold: set, possible: set | None = None) -> None:
        possible = gold if possible is None else possible | gold
        self.sure_hits[index] += len(links & gold)
        self.possible_hits[index] += len(links & possible)
        self.predicted[index] += len(links)
        self.gold[index] += len(gold)

    def aer(self) -> np.ndarray:
        """The AER of each reading; 0 where there was nothing to link and nothing linked."""
        total = self.predicted + self.gold
        return np.where(total > 0, 1.0 - (self.sure_hits + self.possible_hits) / np.maximum(total, 1), 0.0)


def gold_word_groups(bundle: Bundle, pair: Pair, source_ids, target_ids) -> tuple[np.ndarray, np.ndarray] | None:
    """(word of each source piece, word of each target piece) for a gold pair's pieces (no <s>, </s>), or None when
    the tokenizer's words differ from the pair's whitespace words (its gold indices would not match)."""
    source_groups, source_words = word_groups(bundle.source_tokenizer.pieces(source_ids))
    target_groups, target_words = word_groups(bundle.target_tokenizer.pieces(target_ids))
    if len(source_words) != len(pair.source.split()) or len(target_words) != len(pair.target.split()):
        return None
    return source_groups, target_groups


@torch.inference_mode()
def cross_attention_aer(bundle: Bundle, pairs: list[Pair], batch_size: int = 32) -> AlignmentReport:
    model, config = bundle.model, bundle.config
    model.eval()
    device = next(model.parameters()).device
    layers, heads = config.n_decoder_layers, config.n_heads
    head_counts = AlignmentCounts((2, layers, heads))
    layer_counts = AlignmentCounts((2, layers))
    average_counts = AlignmentCounts((2,))
    used = 0
    pairs = [p for p in pairs if p.alignment]
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        examples = encode_pairs(chunk, bundle.source_tokenizer, bundle.target_tokenizer, config)
        encoded = [(source_ids[:-1], target_ids[1:-1]) for source_ids, target_ids in examples]  # pieces only
        source, target = collate(examples, config.pad_id, device)
        _, weights = model.inspect(source, target[:, :-1])
        cross = torch.stack(weights.cross, dim=1).float().cpu().numpy()  # [B, layers, heads, T, S]
        for row, (pair, (source_ids, target_ids)) in enumerate(zip(chunk, encoded)):
            groups = gold_word_groups(bundle, pair, source_ids, target_ids)
            if groups is None:
                continue
            source_groups, target_groups = groups
            used += 1
            gold = set(pair.alignment)
            n_source, n_target = len(source_ids), len(target_ids)
            for reading, offset in enumerate((0, 1)):
                pieces = cross[row, :, :, offset : offset + n_target, :n_source]  # [layers, heads, Tp, Sp]
                words = group_matrix(pieces, target_groups, source_groups)  # [layers, heads, Tw, Sw]
                for layer in range(layers):
                    for head in range(heads):
                        head_counts.add((reading, layer, head), alignment_links(words[layer, head]), gold)
                    layer_counts.add((reading, layer), alignment_links(words[layer].mean(0)), gold)
                average_counts.add(reading, alignment_links(words.mean((0, 1))), gold)
    return AlignmentReport(head_counts.aer(), layer_counts.aer(), average_counts.aer(), used)
