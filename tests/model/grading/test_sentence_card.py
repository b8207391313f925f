"""The report card of one decoding (model/grading/sentence.py): the decoded tokens are what is graded, a final </s>
is not, and a decoding with no token left to grade is refused in one line."""

from __future__ import annotations

import pytest

from model.decoding.stepper import Stepper
from model.grading.cases import GradingError
from model.grading.grader import CardSettings
from model.grading.methods import MethodSettings
from model.grading.sentence import decoded_case, grade_decoding

SENTENCE = "a b c d e"


def test_the_decoded_tokens_are_graded_up_to_the_end(copy_bundle):
    bundle = copy_bundle[0]
    stepper = Stepper(bundle, SENTENCE)
    stepper.jump(3)
    stepper.force(1, int(stepper.steps[1].candidate_ids[1]))  # a what-if: not the model's own choice
    stepper.jump(3)
    chosen, eos = stepper.target_ids(), bundle.config.eos_id
    case = decoded_case(bundle, SENTENCE, stepper.source_ids, chosen + [eos], stepper.translation())
    assert case.references == chosen and case.n_steps == 3 and case.source_ids == list(stepper.source_ids)
    settings = CardSettings(("attention", "leave-one-out"), MethodSettings(), sanity_pairs=0)
    card = grade_decoding(bundle, SENTENCE, stepper.source_ids, chosen, stepper.translation(), settings, "tiny copy")
    assert (card.n_pairs, card.n_steps) == (1, 3) and f"“{stepper.translation()}”" in card.corpus
    with pytest.raises(GradingError, match="decode a token first"):
        decoded_case(bundle, SENTENCE, stepper.source_ids, [eos], "")
