"""An encoder-only model's texts as the report card grades them: its head's own decisions, explained over the text.

An encoder-only model decodes nothing; what it predicts is its head's reading of a text: a tag for each piece (a
tagger), a word for each piece (a masked-LM head) or a class for the sentence. The card grades those predictions as
the unmasked model *decides* them (the argmax of its head: what an explanation of the model explains, and what a text
without labels still has), each explained over the text's pieces:

* a per-piece head: one graded prediction per piece (the tokenizer's leading and closing special pieces, [CLS] and
  [SEP] or </s>, are neither graded nor hidden); the prediction at piece t is read at position t;
* a sentence head: one graded prediction, read where the head reads (``sentence_rows``: every position's mean for the
  app's classifier, the first piece for a library model's pooler or classification head).

A ``TextCase`` is a ``GradedPair`` whose "source" is the text (its ``lead`` pieces before the graded ones), with no
target: its references are the decisions and its decoder inputs only count the predictions. The scorer
(``TextScorer``, model/grading/scoring.py) reads the head with pieces hidden in place; a map's rows are the attention
rows of the positions each prediction is read at (model/grading/methods.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import torch

from model.data.corpora import Pair
from model.family import Bundle
from model.grading.cases import GradedPair, GradingError, check_gradable
from model.network import TextReadingNetwork


@dataclass
class TextCase(GradedPair):
    """One text and its head's decisions (see the module's docstring)."""

    decided: list[int] = field(default_factory=list)  # the head's decision of each graded prediction
    rows: list[list[int]] = field(default_factory=list)  # per prediction: the positions it is read at (their mean)
    per_piece: bool = True  # a prediction per piece (a tagger, a masked-LM head); else one for the sentence
    predicted: str = "tag"  # what a prediction is: a "tag", a "word" (a masked-LM head's) or a "class"

    @property
    def n_steps(self) -> int:
        return len(self.decided)

    @property
    def decoder_inputs(self) -> list[int]:
        """No decoder reads anything: one place holder per prediction (the scorer's rows are cut by them)."""
        return [0] * self.n_steps

    @property
    def references(self) -> list[int]:
        return self.decided


def leading_specials(bundle: Bundle) -> int:
    """How many special pieces the tokenizer puts before a text's own ([CLS], <s>: BERT's, RoBERTa's one; the app's
    tokenizer none): those of an empty text, less the closing one."""
    return max(0, len(bundle.source_ids("")[0]) - 1)


def text_case(bundle: Bundle, text: str, source_ids: list[int] | None = None) -> TextCase:
    """``text`` (or its ``source_ids``, as the model reads it) with its head's decisions; a GradingError when it has
    no piece to grade."""
    check_gradable(bundle)
    ids = [int(i) for i in (source_ids if source_ids is not None else bundle.source_ids(text)[0])]
    lead = min(leading_specials(bundle), max(0, len(ids) - 2))
    n_pieces = len(ids) - 1 - lead
    if n_pieces < 1:
        raise GradingError(f"“{text}” has no piece to grade")
    network = cast(TextReadingNetwork, bundle.model)
    device = next(network.parameters()).device
    with torch.inference_mode():
        text_ids = torch.tensor([ids], device=device)  # [1, S]
        scores = network.masked_logits(text_ids, torch.ones_like(text_ids, dtype=torch.bool))  # [1, S, C] or [1, C]
    assert scores is not None  # check_gradable: a head
    per_piece = scores.dim() == 3
    words = scores.shape[-1] == bundle.config.source_vocab_size  # a masked-LM head scores the vocabulary's pieces
    predicted = "class" if not per_piece else "word" if words else "tag"
    if per_piece:
        positions = list(range(lead, lead + n_pieces))
        decided = scores[0, positions].argmax(-1)  # [n]
        rows = [[position] for position in positions]
    else:
        decided = scores[0].argmax(-1, keepdim=True)  # [1]
        rows = [network.sentence_rows(len(ids))]
    return TextCase(Pair(text, ""), ids, [], None, lead, [int(d) for d in decided], rows, per_piece, predicted)


def text_cases(bundle: Bundle, pairs: list[Pair]) -> list[GradedPair]:
    """Each pair's source text as the model reads it, with its head's decisions; a text with no piece is left out."""
    cases: list[GradedPair] = []
    for pair in pairs:
        try:
            cases.append(text_case(bundle, pair.source))
        except GradingError:
            continue
    if not cases:
        raise GradingError("none of the texts has a piece to grade")
    return cases


def decisions_phrase(case: TextCase) -> str:
    """What a card of ``case``'s model grades, in words: "tags as the model decides them", "class as … it"."""
    if case.predicted == "class":
        return "class as the model decides it"
    return f"{case.predicted}s as the model decides them"
