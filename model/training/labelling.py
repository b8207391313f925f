"""Training and scoring an encoder-only classifier (model/nn/classifier.py): a tagger or a sentence classifier.

Examples are (input ids, shifted labels) pairs (model/data/labelling.py): a tagger's labels run over every
input position (a tag + 1 at each word's first piece, 0 elsewhere), a sentence classifier's are one value.
Scoring reports accuracy (per word for a tagger, per sentence for a classifier), exact match (every word of
a sentence right; the accuracy again for a sentence classifier), per-class F1 and their macro average, and the
cross-entropy; ``predict`` gives the labels and probabilities of typed texts (the ``classify`` command).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

import numpy as np
import torch

from model.data.batching import collate, encode_source
from model.data.corpora import CorpusError, Pair
from model.data.labelling import NO_LABEL, encode_words, split_words, tag_labels
from model.network import LabellingNetwork
from model.runtime import follow_free_cores
from model.training.loss import smoothed_cross_entropy


def _encode(pair: Pair, tokenizer, config, index: dict[str, int]) -> tuple[list[int], list[int], list[int]]:
    """(input ids, shifted labels, the positions read for the labels) of one labelled pair; a label the
    model does not know is left unlabelled."""
    if config.task == "tagging":
        words, tags = pair.source.split(), pair.target.split()
        if len(words) != len(tags):
            raise CorpusError(f"{len(words)} words but {len(tags)} tags in the tagged sentence {pair.source[:60]!r}")
        ids, starts = encode_words(tokenizer, words, config.max_len, config.eos_id)
        return ids, tag_labels(starts, len(ids), [index.get(tag, -1) for tag in tags[: len(starts)]]), starts
    ids, _ = encode_source(tokenizer, pair.source, config)
    return ids, [index.get(pair.target.strip(), -1) + 1], [0]


def encode_labelled(pairs: list[Pair], tokenizer, config) -> list[tuple[list[int], list[int]]]:
    """Each pair (text, labels) as (input ids, shifted labels) for training."""
    index = {name: number for number, name in enumerate(config.class_names)}
    return [_encode(pair, tokenizer, config, index)[:2] for pair in pairs]


def batch_logits(model: LabellingNetwork, source: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(class scores of the labelled positions [N, C], their gold classes [N]) of a padded batch."""
    scores = model(source)  # [B, S, C] (tagger) or [B, C] (sentence)
    if scores.dim() == 2:
        labels = labels[:, 0]  # [B]
    labelled = labels != NO_LABEL
    return scores[labelled], labels[labelled] - 1


@dataclass
class LabelScores:
    accuracy: float  # 0-1: labelled words (tagger) or sentences (classifier) predicted right
    exact_match: float  # 0-1: sentences with every label right
    loss: float  # cross-entropy per label (no smoothing)
    per_class_f1: dict[str, float]  # F1 of each class (NaN where the class has neither gold nor predicted items)
    macro_f1: float  # the mean of the defined per-class F1
    samples: list[tuple[str, str, str]]  # (text, gold labels, predicted labels)


def f1_per_class(gold: np.ndarray, predicted: np.ndarray, n_classes: int) -> np.ndarray:
    """F1 of each class index (NaN where it has neither a gold nor a predicted item)."""
    scores = np.full(n_classes, np.nan)
    for label in range(n_classes):
        true_positive = int(((gold == label) & (predicted == label)).sum())
        gold_count, predicted_count = int((gold == label).sum()), int((predicted == label).sum())
        if gold_count + predicted_count:
            scores[label] = 2 * true_positive / (gold_count + predicted_count)
    return scores


@torch.inference_mode()
def score_labels(
    model: LabellingNetwork,
    tokenizer,
    pairs: list[Pair],
    device,
    batch_size: int = 64,
    n_samples: int = 3,
    stop: Callable[[], None] | None = None,
) -> LabelScores:
    """Score a classifier on labelled pairs; ``stop()`` runs before each batch (it may raise to interrupt)."""
    model.eval()
    config = model.config
    index = {name: number for number, name in enumerate(config.class_names)}
    encoded = [_encode(pair, tokenizer, config, index) for pair in pairs]
    golds: list[str] = []
    predictions: list[str] = []
    sentence_right: list[bool] = []
    samples: list[tuple[str, str, str]] = []
    total_loss, count = 0.0, 0
    for start in range(0, len(encoded), batch_size):
        follow_free_cores()
        if stop is not None:
            stop()
        chunk = encoded[start : start + batch_size]
        source, labels = collate([(ids, labels) for ids, labels, _ in chunk], config.pad_id, device, target_pad=NO_LABEL)
        scores = model(source)  # [B, S, C] or [B, C]
        if scores.dim() == 2:
            scores = scores[:, None]  # [B, 1, C]
        known = labels != NO_LABEL  # [B, L]: the labelled positions whose label the model knows
        if bool(known.any()):
            loss, _ = smoothed_cross_entropy(scores[:, : labels.shape[1]][known], labels[known] - 1)
            total_loss += loss.item() * int(known.sum())
            count += int(known.sum())
        chosen = scores.argmax(-1).cpu().numpy()  # [B, S]
        for row, (pair, (_, _, positions)) in enumerate(zip(pairs[start : start + batch_size], chunk)):
            gold_names = pair.target.split() if config.task == "tagging" else [pair.target.strip()]
            names = [config.class_names[int(chosen[row, p])] for p in positions]
            gold_names = gold_names[: len(names)]
            golds += gold_names
            predictions += names
            sentence_right.append(names == gold_names)
            if len(samples) < n_samples:
                samples.append((pair.source, " ".join(gold_names), " ".join(names)))
    gold_index = np.array([index.get(name, -1) for name in golds])
    predicted_index = np.array([index[name] for name in predictions])
    f1 = f1_per_class(gold_index, predicted_index, len(config.class_names))
    defined = f1[~np.isnan(f1)]
    return LabelScores(
        accuracy=float((gold_index == predicted_index).mean()) if len(golds) else 0.0,
        exact_match=float(np.mean(sentence_right)) if sentence_right else 0.0,
        loss=total_loss / count if count else float("nan"),
        per_class_f1={name: float(value) for name, value in zip(config.class_names, f1)},
        macro_f1=float(defined.mean()) if len(defined) else 0.0,
        samples=samples,
    )


@dataclass
class Labelled:
    """A classifier's reading of one text."""

    words: list[str]  # the words tagged (a tagger) or the whole text (a sentence classifier)
    labels: list[str]  # one per word, or one for the text
    probabilities: list[float]  # of each chosen label
    tagging: bool = False  # a tag per word (a tagger), else one class for the text


def _encode_text(text: str, tokenizer, config) -> tuple[list[str], list[int], list[int]]:
    """(the words read, the input ids, the positions whose labels are read) of a typed text."""
    if config.task == "tagging":
        words = split_words(text)
        ids, starts = encode_words(tokenizer, words, config.max_len, config.eos_id)
        return words[: len(starts)], ids, starts
    ids, _ = encode_source(tokenizer, text, config)
    return [text], ids, [0]


@torch.inference_mode()
def _predict_batch(model: LabellingNetwork, tokenizer, texts: list[str], device) -> list[Labelled]:
    """One padded forward pass for ``texts`` (padding is masked: each text reads as it would alone)."""
    config = model.config
    encoded = [_encode_text(text, tokenizer, config) for text in texts]
    source, _ = collate([(ids, [0]) for _, ids, _ in encoded], config.pad_id, device)
    probabilities = torch.softmax(model(source).float(), dim=-1)  # [B, S, C] or [B, C]
    results = []
    for row, (words, _, starts) in enumerate(encoded):
        rows = probabilities[row, starts] if probabilities.dim() == 3 else probabilities[row][None]  # [words, C]
        best = rows.max(-1)
        labels = [config.class_names[int(i)] for i in best.indices]
        results.append(Labelled(words, labels, [float(p) for p in best.values], config.task == "tagging"))
    return results


def predict_stream(model: LabellingNetwork, tokenizer, texts: Iterable[str], device, batch_size: int = 32) -> Iterator[Labelled]:
    """Labels of typed texts as they come: a tag per word (punctuation split off) or one class per text. Texts are
    read ``batch_size`` at a time, so the first results are ready before a long input has been read to its end."""
    model.eval()
    iterator = iter(texts)
    while batch := list(islice(iterator, batch_size)):
        yield from _predict_batch(model, tokenizer, batch, device)


def predict(model: LabellingNetwork, tokenizer, texts: list[str], device) -> list[Labelled]:
    """Labels of typed texts (``predict_stream``, all at once)."""
    return list(predict_stream(model, tokenizer, texts, device))
