"""The report card of one decoding: the sentence the user is looking at, graded on the tokens it was decoded to.

The corpus card grades each pair on its reference; this one grades a decoding as it is (a what-if's forced tokens,
a beam hypothesis, a sampled output, through the model that decoded it: heads knocked out), step t explaining the
prediction of the decoded token t, up to the decoding's step. A final </s> is not graded (as a reference's is not);
without a gold alignment there is no AER. An encoder-only model's text is graded on its head's decisions
(model/grading/text_cases.py), through the model that read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from model.data.corpora import Pair
from model.decoding.greedy import given_steps
from model.family import Bundle
from model.grading.card import ReportCard
from model.grading.cases import GradedPair, GradingError, prompt_case
from model.grading.grader import CardSettings, Progress, grade_cases
from model.grading.text_cases import TextCase, decisions_phrase, text_case


def decoded_case(bundle: Bundle, text: str, source_ids: Sequence[int], chosen_ids: Sequence[int], translation: str) -> GradedPair:
    """The decoding of ``text`` (its ``source_ids``, EOS last) to ``chosen_ids`` as a graded pair; a GradingError when
    no token is left to grade."""
    config = bundle.config
    if not bundle.family.capabilities.architecture.has_decoder:  # an encoder-only model's text: its head's decisions
        return text_case(bundle, text, [int(i) for i in source_ids])
    steps = [int(token) for token in chosen_ids][given_steps(bundle.model, source_ids) :]  # a prompt's given: not graded
    if steps and steps[-1] == config.eos_id:
        steps = steps[:-1]  # the end of the sentence is not graded
    if len(source_ids) < 2 or not steps:
        raise GradingError("decode a token first: the report card of a sentence grades the tokens decoded")
    if not bundle.family.capabilities.architecture.has_encoder:  # a decoder-only model's prompt, then what it decoded
        return prompt_case(Pair(text, translation), [int(i) for i in source_ids], steps, config.eos_id)
    return GradedPair(Pair(text, translation), [int(i) for i in source_ids], [config.bos_id, *steps, config.eos_id])


def grade_decoding(
    bundle: Bundle,
    text: str,
    source_ids: Sequence[int],
    chosen_ids: Sequence[int],
    translation: str,
    settings: CardSettings | None = None,
    model_name: str = "",
    progress: Progress | None = None,
    check: Callable[[], None] | None = None,
) -> ReportCard:
    """The report card of ``bundle``'s model on one decoding (see the module's docstring)."""
    case = decoded_case(bundle, text, source_ids, chosen_ids, translation)
    described = f"the sentence “{text}” decoded as “{translation}”"
    if not bundle.family.capabilities.architecture.has_decoder:  # an encoder-only model's text: its head's decisions
        described = f"the text “{text}” (its {decisions_phrase(cast(TextCase, case))})"
    return grade_cases(bundle, [case], settings or CardSettings(), None, model_name, progress, check, described)
