"""Translation quality: exact match, corpus BLEU (sacrebleu), teacher-forced token accuracy and loss.

Shared by the trainer's per-epoch validation and by the ``evaluate`` command.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import sacrebleu
import torch

from model.data.batching import collate, encode_pairs, encode_source
from model.data.corpora import Pair
from model.decoding.greedy import greedy_decode
from model.family import family_of
from model.network import DecodingNetwork, LabellingNetwork, Network, TeacherForcedNetwork
from model.nn.packing import PackedRows
from model.runtime import follow_free_cores
from model.training.labelling import score_labels
from model.training.loss import smoothed_cross_entropy


@dataclass
class Scores:
    exact_match: float  # 0-1: share of hypotheses equal to the reference (whitespace-normalised)
    bleu: float  # 0-100 corpus BLEU
    token_accuracy: float  # 0-1: teacher-forced next-piece accuracy over real target pieces
    loss: float  # teacher-forced cross-entropy per target piece (no smoothing)
    n: int
    samples: list[tuple[str, str, str]] = field(default_factory=list)  # (source, reference, hypothesis)
    # A classifier's (model/training/labelling.py): token_accuracy is then its label accuracy, bleu NaN.
    macro_f1: float | None = None  # 0-1, the mean F1 over classes; None for translation
    per_class_f1: dict[str, float] = field(default_factory=dict)

    @property
    def is_labelling(self) -> bool:
        return self.macro_f1 is not None

    @property
    def quality(self) -> tuple:
        """What "better" means when keeping the best weights: BLEU first (macro-F1 for a classifier), then the rest."""
        if self.macro_f1 is not None:
            return (round(self.macro_f1, 4), self.token_accuracy, -self.loss)
        return (round(self.bleu, 2), self.exact_match, -self.loss)

    def summary(self) -> str:
        """One line for logs and the Train tab."""
        if self.macro_f1 is not None:
            return (
                f"loss {self.loss:.3f}, accuracy {self.token_accuracy:.4f}, macro-F1 {self.macro_f1:.4f}, "
                f"all labels right {self.exact_match:.3f}"
            )
        accuracy = "n/a" if math.isnan(self.token_accuracy) else f"{self.token_accuracy:.3f}"
        loss = "n/a" if math.isnan(self.loss) else f"{self.loss:.3f}"
        return f"loss {loss}, token accuracy {accuracy}, exact match {self.exact_match:.3f}, BLEU {self.bleu:.1f}"

    def to_dict(self) -> dict:
        values: dict[str, object] = {
            "exact_match": self.exact_match,
            "bleu": self.bleu,
            "token_accuracy": self.token_accuracy,
            "loss": self.loss,
            "n": self.n,
        }
        if self.macro_f1 is not None:
            values |= {"accuracy": self.token_accuracy, "macro_f1": self.macro_f1, "per_class_f1": self.per_class_f1}
        return values


class Interrupted(Exception):
    """Scoring was stopped between two batches because ``stop()`` said so (the user stopped training)."""


def _check(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise Interrupted


def same_translation(hypothesis: str, reference: str) -> bool:
    """Whether a translation matches its reference exactly, whitespace aside (what exact match counts)."""
    return " ".join(hypothesis.split()) == " ".join(reference.split())


def bleu_score(hypotheses: list[str], references: list[str]) -> float:
    if not hypotheses:
        return 0.0
    return float(sacrebleu.corpus_bleu(hypotheses, [references]).score)


@torch.inference_mode()
def teacher_forced(model: TeacherForcedNetwork[PackedRows], examples, batch_size: int, device, stop=None) -> tuple[float, float]:
    """(mean loss, token accuracy) over encoded examples."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    for start in range(0, len(examples), batch_size):
        follow_free_cores()
        _check(stop)
        source, target = collate(examples[start : start + batch_size], model.config.pad_id, device)
        hidden = model(source, target[:, :-1])  # [B, T, d_model]
        gold = target[:, 1:]  # [B, T]
        real = gold != model.config.pad_id
        logits = model.logits(hidden[real])  # [N, V]
        # The training step's loss and accuracy, unsmoothed: both report the same quantities.
        loss, hits = smoothed_cross_entropy(logits, gold[real], smoothing=0.0)
        total_loss += loss.item() * logits.shape[0]
        correct += hits
        count += logits.shape[0]
    return total_loss / max(count, 1), correct / max(count, 1)


@torch.inference_mode()
def translate_batch(
    model: DecodingNetwork,
    source_tokenizer,
    target_tokenizer,
    texts: list[str],
    device,
    batch_size: int = 64,
    stop=None,
    encode=None,
) -> list[str]:
    """Greedy translations, batched by similar length; ``stop()`` is asked before each batch. ``encode(text)``
    gives the source ids (default: the app's own pieces + EOS; a pretrained model adds its own special tokens)."""
    model.eval()
    encode = encode or (lambda text: encode_source(source_tokenizer, text, model.config)[0])
    encoded = [(i, encode(t)) for i, t in enumerate(texts)]
    encoded.sort(key=lambda item: len(item[1]))
    outputs = [""] * len(texts)
    for start in range(0, len(encoded), batch_size):
        follow_free_cores()
        _check(stop)
        chunk = encoded[start : start + batch_size]
        source, _ = collate([(ids, [0]) for _, ids in chunk], model.config.pad_id, device)
        for (index, _), ids in zip(chunk, greedy_decode(model, source)):
            outputs[index] = target_tokenizer.decode(ids)
    return outputs


def score(
    model: Network,
    source_tokenizer,
    target_tokenizer,
    pairs: list[Pair],
    device,
    batch_size: int = 64,
    decode_limit: int | None = None,
    n_samples: int = 3,
    stop: Callable[[], bool] | None = None,
    encode: Callable[[str], list[int]] | None = None,
) -> Scores:
    """Teacher-forced loss and accuracy over ``pairs``; exact match and BLEU of greedy translations of the
    first ``decode_limit``. With ``stop``, raises Interrupted between batches once it returns True. A pretrained
    model (its own target conventions) is scored on its translations only: loss and accuracy are NaN. A classifier
    is scored on its labels (model/training/labelling.py): accuracy, exact match, per-class and macro F1."""
    can = family_of(model).capabilities
    if can.labels:
        labels = score_labels(
            cast(LabellingNetwork, model), source_tokenizer, pairs, device, batch_size, n_samples, lambda: _check(stop)
        )
        return Scores(
            labels.exact_match,
            float("nan"),
            labels.accuracy,
            labels.loss,
            len(pairs),
            labels.samples,
            labels.macro_f1,
            labels.per_class_f1,
        )
    if can.teacher_forced_scores:
        examples = encode_pairs(pairs, source_tokenizer, target_tokenizer, model.config)
        loss, accuracy = teacher_forced(cast(TeacherForcedNetwork[PackedRows], model), examples, batch_size, device, stop)
    else:
        loss, accuracy = float("nan"), float("nan")
    decoded = pairs if decode_limit is None else pairs[:decode_limit]
    texts = [p.source for p in decoded]
    decoder = cast(DecodingNetwork, model)  # not a labelling family: it decodes
    hypotheses = translate_batch(decoder, source_tokenizer, target_tokenizer, texts, device, batch_size, stop, encode)
    references = [p.target for p in decoded]
    exact = sum(same_translation(h, r) for h, r in zip(hypotheses, references)) / max(len(decoded), 1)
    samples = [(p.source, p.target, h) for p, h in zip(decoded[:n_samples], hypotheses)]
    return Scores(exact, bleu_score(hypotheses, references), accuracy, loss, len(pairs), samples)
