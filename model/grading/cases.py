"""The sentence pairs a report card grades: held-out pairs of a corpus, each encoded as the model reads it.

A pair is graded on its reference, teacher-forced: step t explains the prediction of the reference's piece t (the
final </s> is not graded), over the source's pieces (its </s> is never hidden or removed). On a built-in translation
corpus the pairs are ``aer_pairs`` (drawn from the test split, each with its gold word alignment, the same pairs every
AER of the app is read on); on a corpus file, pairs drawn from its test split (no gold alignment: no AER).

A decoder-only model is graded on a text continued: each sentence's pieces (its source side, as the model reads a
prompt) split in two, the first half the prompt and the rest the reference continuation, step t explaining the
prediction of the continuation's piece t. In a ``GradedPair`` the prompt stands where a source stands: its pieces but
the last are the "source pieces" hidden, left out and attributed, and its last piece, read where an encoder-decoder's
source ends with </s>, is never hidden; it is also the first decoder input graded (where an encoder-decoder reads
<s>), so the target-prefix map covers it and the continuation (model/grading/scoring.py reads the whole text in one
decoder pass).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch

from model.data.batching import encode_pairs
from model.data.corpora import CorpusSpec, Pair, load_corpus
from model.data.corpora.symbolic import TASKS as SYMBOLIC_TASKS
from model.errors import UserError
from model.family import Bundle, capabilities_of
from model.inspection.alignment import aer_pairs, gold_word_groups
from model.network import Network, TextReadingNetwork


class GradingError(UserError):
    """A report card that cannot be made (a model or corpus it cannot grade); the message says why."""


@dataclass
class GradedPair:
    """One pair as the model reads it, with the word each piece belongs to when its gold alignment can be read."""

    pair: Pair
    source_ids: list[int]  # the source pieces, then </s> (a decoder-only model's: its prompt's pieces)
    target_ids: list[int]  # <s>, the reference's pieces, </s> (decoder-only: the prompt's last piece, the continuation's, EOS)
    groups: tuple[np.ndarray, np.ndarray] | None = None  # (word of each source piece, word of each target piece)
    lead: int = 0  # pieces before the graded ones, never hidden (an encoder-only text's [CLS])

    @property
    def n_source(self) -> int:
        """Source pieces graded (the leading ones and </s> are not)."""
        return len(self.source_ids) - 1 - self.lead

    @property
    def n_steps(self) -> int:
        """Predictions graded: one per reference piece (the final </s> is not one)."""
        return len(self.target_ids) - 2

    @property
    def decoder_inputs(self) -> list[int]:
        """What the decoder reads up to the last graded step: <s> and the reference's pieces before it."""
        return self.target_ids[: self.n_steps]

    @property
    def references(self) -> list[int]:
        """The piece each graded step predicts."""
        return self.target_ids[1:-1]


def check_gradable(bundle: Bundle) -> None:
    """A GradingError unless ``bundle``'s model can be graded (``check_gradable_model``)."""
    check_gradable_model(bundle.model)


def check_gradable_model(model: Network) -> None:
    """A GradingError unless the report card grades ``model``: one whose pass scores each prediction given a perturbed
    input — an encoder-decoder's or a decoder-only model's decoded pieces (a translation, a continuation), an
    encoder-only model's head's decisions (model/grading/text_cases.py: a bare encoder, with no head, decides nothing)."""
    if capabilities_of(model).architecture.has_decoder:
        return
    probe = torch.tensor([[_probe_id(model), int(model.config.eos_id)]])  # [1, 2]: any two pieces
    with torch.inference_mode():
        scores = cast(TextReadingNetwork, model).masked_logits(probe.to(next(model.parameters()).device), probe > -1)
    if scores is None:
        raise GradingError(
            "the report card grades what a model predicts, and this encoder has no head (no tag, word or class to explain)"
        )


def _probe_id(model: Network) -> int:
    """A piece id that is not the pad id (what a probe of the model reads)."""
    return 1 if int(model.config.pad_id) == 0 else 0


def grading_pairs(bundle: Bundle, corpus: CorpusSpec | None, count: int, seed: int) -> tuple[CorpusSpec, list[Pair]]:
    """(the corpus, ``count`` held-out pairs of it drawn with ``seed``): the model's own corpus when ``corpus`` is None
    or names it (its size and seed give the split it was trained beside). A GradingError for a model it cannot grade."""
    check_gradable(bundle)
    if count < 1:
        raise GradingError(f"a report card grades at least one sentence, not {count}")
    own = bundle.corpus
    if corpus is None or (own is not None and corpus.is_builtin and corpus.name == own.name):
        corpus = own
    if corpus is None:
        raise GradingError("this model does not say which corpus it was trained on: name one to grade it on (--corpus)")
    architecture = bundle.family.capabilities.architecture
    if corpus.task != "translation" and architecture.has_encoder and architecture.has_decoder:
        raise GradingError(f"{corpus.describe()} is a {corpus.task} corpus: the report card grades translation pairs")
    if corpus.is_builtin and corpus.task == "translation":
        return corpus, aer_pairs(corpus, count, seed)
    test = load_corpus(corpus).test
    if not test:
        raise GradingError(f"{corpus.describe()} has no test pairs to grade")
    return corpus, random.Random(seed).sample(test, min(count, len(test)))


def prompt_case(pair: Pair, prompt_ids: list[int], continuation_ids: list[int], eos_id: int) -> GradedPair:
    """A decoder-only model's text as a graded pair: ``prompt_ids`` read, ``continuation_ids`` graded (see the module's
    docstring)."""
    return GradedPair(pair, list(prompt_ids), [prompt_ids[-1], *continuation_ids, eos_id])


def _prompt_cases(bundle: Bundle, pairs: list[Pair]) -> list[GradedPair]:
    """Each sentence's pieces split in two: the first half (at least two pieces) the prompt, the rest (at least one)
    the reference continuation."""
    cases = []
    for pair in pairs:
        ids = bundle.source_ids(pair.source)[0]
        half = max(2, len(ids) // 2)
        if len(ids) > half:
            cases.append(prompt_case(Pair(pair.source, ""), ids[:half], ids[half:], bundle.config.eos_id))
    return cases


def graded_pairs(bundle: Bundle, pairs: list[Pair]) -> list[GradedPair]:
    """The pairs encoded as the model reads them; a pair with no source piece or no target piece is left out (a
    decoder-only model's sentences split into a prompt and a continuation)."""
    config = bundle.config
    if not bundle.family.capabilities.architecture.has_encoder:
        cases = _prompt_cases(bundle, pairs)
        if not cases:
            raise GradingError("none of the sentences has three pieces: a prompt of two and a piece to continue it")
        return cases
    cases = []
    for pair, (source_ids, target_ids) in zip(pairs, encode_pairs(pairs, bundle.source_tokenizer, bundle.target_tokenizer, config)):
        if len(source_ids) < 2 or len(target_ids) < 3:
            continue
        groups = None
        if pair.alignment:
            groups = gold_word_groups(bundle, pair, source_ids[:-1], target_ids[1:-1])
        cases.append(GradedPair(pair, list(source_ids), list(target_ids), groups))
    if not cases:
        raise GradingError("none of the sentences has a source and a target piece to grade")
    return cases


def knows_positions(corpus: CorpusSpec) -> bool:
    """Whether the corpus's gold alignment *is* the answer (copy, reverse, sort): its correct source positions are
    known exactly, so an accuracy is read beside the AER."""
    return corpus.is_builtin and corpus.name in SYMBOLIC_TASKS
