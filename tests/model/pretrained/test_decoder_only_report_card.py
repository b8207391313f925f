"""The report card on decoder-only Hugging Face models (GPT-2; the Llama layout), against the library's own pass:

* a sentence is graded as a text continued: its first half the prompt, the rest the reference continuation; the
  scorer's log p of each continuation piece is the library's own over the whole text (``output`` logits read by the
  test), a hidden prompt piece is the library's pass with the attention mask 0 there (its position kept: the same as
  giving the positions explicitly), and a piece left out is the library's pass on the text without it;
* the attention method's maps are the library's own ``output_attentions`` (mean over layers and heads) at the rows of
  the continuation's predictions: over the prompt's pieces (the source map) and over the prompt's last piece and the
  continuation (the prefix map);
* a card on a corpus, and the card of a decoding in the Explore tab (its continuation graded, its prompt read).

Encoder-only models' cards: tests/model/grading/test_encoder_only_card.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.data.corpora import CorpusSpec, Pair
from model.decoding.stepper import Stepper
from model.grading.cases import graded_pairs, grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.methods import METHODS, MethodSettings, Reading
from model.grading.scoring import PromptScorer, scorer_for
from model.grading.sentence import grade_decoding

FAST = MethodSettings(ig_points=9, lime_samples=8, shap_samples=8)
TEXT = "The old man sees the small dog in the house."


def _log_p(network, text_ids: list[int], first: int, mask=None) -> np.ndarray:
    """The library's log p of each piece of ``text_ids`` from position ``first`` on, given the pieces before it."""
    ids = torch.tensor([text_ids])
    with torch.no_grad():
        logits = network.hf_model(input_ids=ids, attention_mask=mask).logits[0]  # [L, V]
    log_p = torch.log_softmax(logits.double(), -1)
    return np.array([float(log_p[position - 1, text_ids[position]]) for position in range(first, len(text_ids))])


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_the_scorer_is_the_library_s_own_pass_over_prompt_and_continuation(tiny_bundles, family):
    bundle = tiny_bundles[family]
    network = bundle.model
    case = graded_pairs(bundle, [Pair(TEXT, "")])[0]
    text = bundle.source_ids(TEXT)[0]
    prompt = len(case.source_ids)
    assert case.source_ids + case.references == text and case.n_source == prompt - 1
    scorer = scorer_for(network, case)
    assert isinstance(scorer, PromptScorer)
    graded = text[: prompt + case.n_steps]  # the prompt and the continuation's graded pieces
    np.testing.assert_allclose(scorer.full, _log_p(network, graded, prompt), atol=1e-5)
    keep = np.ones((1, case.n_source), bool)
    keep[0, 1] = False
    mask = torch.ones(1, len(graded), dtype=torch.long)
    mask[0, 1] = 0
    np.testing.assert_allclose(scorer.hidden_all(keep)[0], _log_p(network, graded, prompt, mask), atol=1e-5)
    without = graded[:2] + graded[3:]  # the third prompt piece left out: the rest move up
    np.testing.assert_allclose(scorer.left_out()[2], _log_p(network, without, prompt - 1), atol=1e-5)


def test_the_attention_method_reads_the_library_s_weights_at_the_continuation_s_rows(tiny_bundles):
    bundle = tiny_bundles["gpt2"]
    network = bundle.model
    case = graded_pairs(bundle, [Pair(TEXT, "")])[0]
    maps = METHODS["attention"]().maps(Reading(network, case, scorer_for(network, case), FAST))
    text = case.source_ids + case.references[:-1]  # what the decoder reads to predict every graded piece
    with torch.no_grad():
        attentions = network.hf_model(input_ids=torch.tensor([text]), output_attentions=True).attentions
    mean = torch.stack(attentions)[:, 0].double().mean((0, 1)).numpy()  # [L, L]: over layers and heads
    s, n = case.n_source, case.n_steps
    assert maps.source is not None and maps.prefix is not None
    np.testing.assert_allclose(maps.source, mean[s : s + n, :s], atol=1e-6)
    expected = mean[s : s + n, s : s + n].copy()
    expected[np.triu_indices(n, k=1)] = np.nan
    np.testing.assert_allclose(maps.prefix, expected, atol=1e-6)


def test_a_card_on_a_corpus_grades_every_method_that_reads_self_attention(tiny_bundles):
    bundle = tiny_bundles["gpt2"]
    corpus, pairs = grading_pairs(bundle, CorpusSpec("toy-fr"), 2, 0)
    methods = ("attention", "alti", "alti+", "grad-input", "leave-one-out", "occlusion", "random")
    card = grade(bundle, pairs, CardSettings(methods, FAST, sanity_pairs=1), corpus=corpus, model_name="gpt2")
    assert card.n_pairs == 2 and "continued from its first" in card.caption()
    assert "hidden in place by the attention mask" in card.caption()
    for name in ("attention", "alti", "grad-input", "occlusion"):
        row = card.row(name)
        assert row.cells["deletion_aopc"].value is not None and row.cells["tau_loo"].value is not None, name
        assert row.cells["aer"].reason == "the pairs have no gold word alignment"
        assert row.sanity is not None and len(row.sanity.cascade) >= 3
    assert "cross-attention" in card.row("alti+").cells["deletion_aopc"].reason


def test_the_card_of_a_decoding_grades_its_continuation(tiny_bundles):
    bundle = tiny_bundles["llama"]
    stepper = Stepper(bundle, TEXT)
    for _ in range(3):
        stepper.step()
    card = grade_decoding(
        bundle, TEXT, stepper.source_ids, stepper.target_ids(), stepper.translation(), CardSettings(("attention",), FAST, 0)
    )
    assert card.n_steps == 3 and card.row("attention").cells["deletion_aopc"].value is not None
