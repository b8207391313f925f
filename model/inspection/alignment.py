"""Word alignments read from cross-attention, scored against a corpus's gold alignments (AER).

Each gold pair is run teacher-forced through the inspection path; its piece-level cross-attention
becomes word-level (keys summed over a word's pieces, queries averaged) and every target word is
linked to the source word it attends to most. Two readings of the rows are scored: the step that
*predicts* a word ("predicting") and the step where the word is the decoder's *input* ("input").

One definition serves the whole app (``evaluate``, ``heads --aer-table``, ``compare``, the window's AER tab and its
side-by-side view). The sentences are ``aer_pairs``: ``AER_PAIRS`` (200) pairs drawn with ``random.Random(AER_SEED)``
(seed 0) from the *test split* of the built-in translation corpus the model was trained on, generated with its size
and seed (the split training never saw: ``split_pairs`` puts each distinct source in one split by a hash of its
text), every one with its gold word alignment. "The best head" is the single cross-attention head with the lowest
corpus-level AER read at the step that predicts each word (``AlignmentReport.best``; the first in layer, head order
on a tie). Count and seed are parameters everywhere, and every AER the app prints or draws names them:
"AER 0.126 on 200 toy-fr test pairs, seed 0".

A layer's AER (``layer_aer``) is the AER of its *mean over heads* (the Explore tab's "mean over heads"): the heads'
word-level weights averaged, then each target word linked to the source word it reads most — not the mean of its heads'
AERs. "The best layer's mean over heads" (``AlignmentReport.best_layer``, ``evaluate --json``'s ``aer_layer_average``,
the ``heads --aer-table`` summary) is the lowest of them, read at the step that predicts each word.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, replace

import numpy as np
import torch

from model.data.batching import collate, encode_pairs
from model.data.corpora import CorpusSpec, Pair, load_corpus
from model.decoding.trace import group_matrix, word_groups
from model.family import Bundle
from model.kinds import AttentionKind
from model.runtime import follow_free_cores

READINGS = ("predicting", "input")
AER_PAIRS = 200  # the default count of the pairs AER is measured on
AER_SEED = 0  # the default seed that draws them from the test split


@dataclass
class AlignmentReport:
    head_aer: np.ndarray  # [readings, layers, heads] corpus-level AER of each head
    layer_aer: np.ndarray  # [readings, layers] of each layer's mean over heads (averaged, then read; module notes)
    n_pairs: int
    corpus: str = ""  # the corpus whose test pairs were scored ("" when the pairs were the caller's own)
    seed: int | None = None  # the seed that drew them (None: the caller's own pairs)

    @property
    def best(self) -> tuple[float, int, int, str]:
        """(AER, layer, head, "predicting") of the best single head: the lowest AER read at the step that predicts
        each word, the first in layer, head order on a tie. The app's one "best head"."""
        layer, head, aer = self.ranking("predicting")[0]
        return aer, layer, head, "predicting"

    @property
    def best_layer(self) -> tuple[float, int]:
        """(AER, layer) of the best layer's mean over heads (``best_layer_mean`` of the predicting rows)."""
        return best_layer_mean(self.layer_aer[READINGS.index("predicting")])

    def where(self) -> str:
        """What the AER was measured on: '200 toy-fr test pairs, seed 0' ('30 pairs' for a caller's own pairs)."""
        return aer_where(self.corpus, self.n_pairs, self.seed)

    def ranking(self, reading: str = "predicting") -> list[tuple[int, int, float]]:
        """(layer, head, AER) from best to worst for one reading."""
        table = self.head_aer[READINGS.index(reading)]
        order = np.argsort(table, axis=None, kind="stable")
        return [(int(i // table.shape[1]), int(i % table.shape[1]), float(table.flat[i])) for i in order]


def best_layer_mean(layer_aer: np.ndarray) -> tuple[float, int]:
    """(AER, layer from 0) of the lowest of ``layer_aer`` [layers], each the AER of a layer's mean over heads: the app's
    one "best layer's mean over heads" (the first layer on a tie)."""
    layer = int(np.argmin(layer_aer))
    return float(layer_aer[layer]), layer


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
    used = 0
    pairs = [p for p in pairs if p.alignment]
    for start in range(0, len(pairs), batch_size):
        follow_free_cores()
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
    return AlignmentReport(head_counts.aer(), layer_counts.aer(), used)


def aer_where(corpus: str, n_pairs: int, seed: int | None) -> str:
    """'200 toy-fr test pairs, seed 0': what an AER was measured on, as every surface prints it beside the AER."""
    if seed is None or not corpus:
        return f"{n_pairs} pairs"
    return f"{n_pairs} {corpus} test pairs, seed {seed}"


def aer_corpus(bundle: Bundle, fallback: CorpusSpec | None = None) -> CorpusSpec | None:
    """The corpus whose held-out pairs score ``bundle``'s cross-attention: the built-in translation corpus it was trained
    on (toy-fr, copy, reverse, sort: every pair of theirs has its gold word alignment), else ``fallback`` when that is
    one; None for a model without cross-attention, or with neither."""
    if AttentionKind.CROSS not in bundle.family.capabilities.kinds:
        return None
    for corpus in (bundle.corpus, fallback):
        if corpus is not None and corpus.is_builtin and corpus.task == "translation":
            return corpus
    return None


@functools.lru_cache(maxsize=8)
def _held_out(name: str, size: int | None, seed: int, valid_fraction: float, test_fraction: float) -> tuple[Pair, ...]:
    spec = CorpusSpec(name, size=size, seed=seed, valid_fraction=valid_fraction, test_fraction=test_fraction)
    return tuple(pair for pair in load_corpus(spec).test if pair.alignment)


def held_out_pairs(corpus: CorpusSpec) -> tuple[Pair, ...]:
    """The test split of a built-in corpus (generated with its size and seed, as the model trained on it), those pairs
    with gold alignments, in the split's order; kept after the first call (generating toy-fr takes a second or two)."""
    if not corpus.is_builtin:
        raise ValueError(f"gold alignments come with the built-in corpora, not with {corpus.describe()}")
    return _held_out(corpus.name, corpus.size, corpus.seed, corpus.valid_fraction, corpus.test_fraction)


def aer_pairs(corpus: CorpusSpec, count: int = AER_PAIRS, seed: int = AER_SEED) -> list[Pair]:
    """The sentences AER is measured on, everywhere in the app: ``count`` pairs drawn with ``random.Random(seed)``
    from the held-out test split of the built-in ``corpus`` (``held_out_pairs``), or all of them when it has fewer."""
    if count < 1:
        raise ValueError(f"AER is measured on at least one pair, not {count}")
    pool = held_out_pairs(corpus)
    return random.Random(seed).sample(pool, min(count, len(pool)))


def measured_aer(
    bundle: Bundle, count: int = AER_PAIRS, seed: int = AER_SEED, corpus: CorpusSpec | None = None
) -> AlignmentReport | None:
    """The AER of every cross-attention head of ``bundle`` on ``aer_pairs(count, seed)`` of its corpus (``corpus``, by
    default ``aer_corpus(bundle)``), labelled with that corpus and seed; None when gold alignments cannot score it."""
    corpus = corpus if corpus is not None else aer_corpus(bundle)
    if corpus is None:
        return None
    return replace(cross_attention_aer(bundle, aer_pairs(corpus, count, seed)), corpus=corpus.name, seed=seed)
