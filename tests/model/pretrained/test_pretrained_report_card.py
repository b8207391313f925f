"""The report card on Hugging Face encoder-decoders: graded on a corpus named for it, each perturbation checked against
the library's own forward pass, the sanity cascade over the library's modules, and the layout that cannot hide a piece
in place said so.

* hiding a piece in place (Marian, T5): the scorer's log p with piece j's id replaced by the pad id equals the library's
  own pass on the original ids with the attention mask 0 at j, so the pad is masked as padding and the other pieces
  keep their positions (a known answer: the hidden piece's own id no longer matters);
* M2M100 (NLLB's layout) counts positions over the pieces that are not padding: its card says it cannot hide a piece;
* the cascade redraws every tensor of the library's model exactly once, from its head down, tied tensors named once.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.data.corpora import CorpusSpec, Pair
from model.grading.cases import GradingError, graded_pairs, grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.methods import MethodSettings
from model.grading.sanity import cascade_stages, shuffled_targets_model
from model.grading.scoring import PairScorer

FAST = MethodSettings(ig_points=17, lime_samples=8, shap_samples=8)
PAIR = Pair("the black cat sees the small dog", "le chat noir voit le petit chien")


def _toy() -> CorpusSpec:
    return CorpusSpec("toy-fr")


@pytest.mark.parametrize("layout", ("marian", "t5"))
def test_a_card_of_a_pretrained_model_on_a_corpus_named_for_it(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    with pytest.raises(GradingError, match="name one to grade it on"):
        grading_pairs(bundle, None, 2, 0)  # a pretrained folder says no training corpus
    corpus, pairs = grading_pairs(bundle, _toy(), 2, 0)
    settings = CardSettings(("attention", "norm", "occlusion"), FAST, sanity_pairs=1)
    card = grade(bundle, pairs, settings, corpus=corpus, model_name=layout)
    for method in ("attention", "norm", "occlusion"):
        row = card.row(method)
        assert row.cells["aer"].value is not None and row.cells["deletion_aopc"].value is not None, method
        assert row.sanity is not None and len(row.sanity.cascade) >= 4
    assert "hidden in place by the pad id" in card.caption()


@pytest.mark.parametrize("layout", ("marian", "t5"))
def test_a_hidden_piece_is_masked_as_padding_on_the_library_s_own_pass(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    case = graded_pairs(bundle, [PAIR])[0]
    scorer = PairScorer(bundle.model, case)
    keep = np.ones((1, case.n_source), bool)
    keep[0, 2] = False
    scored = scorer.hidden_all(keep)[0]  # [T]
    source = torch.tensor([case.source_ids])
    mask = torch.ones_like(source)
    mask[0, 2] = 0
    with torch.no_grad():
        logits = bundle.model.hf_model(
            input_ids=source, attention_mask=mask, decoder_input_ids=torch.tensor([case.decoder_inputs]), use_cache=False
        ).logits  # the original id at 2, masked: what the pad hides
    own = torch.log_softmax(logits[0].double(), -1).gather(-1, torch.tensor(case.references)[:, None])[:, 0].numpy()
    np.testing.assert_allclose(scored, own, atol=1e-5)
    assert np.abs(scored - scorer.full).max() > 1e-6  # hiding it changed the prediction


def test_a_layout_whose_positions_skip_padding_cannot_hide_a_piece(encoder_decoders):
    bundle = encoder_decoders["m2m100"]
    corpus, pairs = grading_pairs(bundle, _toy(), 1, 0)
    card = grade(bundle, pairs, CardSettings(("attention", "occlusion"), FAST, sanity_pairs=0), corpus=corpus)
    reason = card.row("attention").cells["deletion_aopc"].reason
    assert "cannot hide a piece in place" in reason and "positions skip padding" in reason
    assert card.row("attention").cells["aer"].value is not None


@pytest.mark.parametrize("layout", ("t5", "bart", "mbart"))
def test_the_cascade_redraws_every_tensor_of_the_library_s_model_once_from_its_head_down(encoder_decoders, layout):
    bundle = encoder_decoders[layout]
    stages = cascade_stages(bundle.model, graded_pairs(bundle, [PAIR])[0])
    every = [id(p) for stage in stages for p in stage.parameters]
    assert len(every) == len(set(every)) == len({id(p) for p in bundle.model.hf_model.parameters()})
    names = [stage.name for stage in stages]
    assert names[0].startswith("lm head") and "decoder" in names[1] and any(n.startswith("encoder") for n in names[2:])
    if bundle.model.hf_model.config.tie_word_embeddings:
        assert "tied:" in names[0] and sum("embed tokens" in n for n in names) == 1  # the tied table named once


def test_data_randomisation_is_refused_for_a_folder_not_trained_here(encoder_decoders):
    with pytest.raises(GradingError, match="not trained here"):
        shuffled_targets_model(encoder_decoders["marian"], 5)
