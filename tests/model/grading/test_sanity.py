"""Sanity checks: the cascade randomises the model from the output down, one more part at a time; randomising every
weight changes each gradient measure's map (Spearman similarity below 0.5), while a deliberately constant "measure"
fails; a model trained on shuffled targets is trained by the app's own trainer with the model's tokenizers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.data.corpora import load_corpus
from model.grading.cases import graded_pairs, grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.methods import MethodSettings
from model.grading.sanity import SANITY_THRESHOLD, cascade, cascade_stages, map_similarity, shuffled_splits, shuffled_targets_model

FAST = MethodSettings(ig_points=33, lime_samples=16, shap_samples=16)


def test_the_cascade_goes_from_the_output_down_one_part_more_each_stage(copy_model):
    model = copy_model.model
    case = graded_pairs(copy_model, grading_pairs(copy_model, None, 1, 0)[1])[0]
    stages = cascade_stages(model, case)
    assert [stage.name for stage in stages] == [
        "decoder layer 2",
        "decoder layer 1",
        "encoder layer 2",
        "encoder layer 1",
        "embeddings",
    ]
    assert sum(p.numel() for stage in stages for p in stage.parameters) == sum(p.numel() for p in model.parameters())
    top, below = stages[0].parameters[0], stages[1].parameters[0]
    names = {id(p): name for name, p in model.named_parameters()}
    randomised = iter(cascade(model, stages, seed=0))
    _, first = next(randomised)
    first_parameters = dict(first.named_parameters())
    assert not torch.equal(first_parameters[names[id(top)]], top)  # the top decoder layer is redrawn...
    assert torch.equal(first_parameters[names[id(below)]], below)  # ...the layer below not yet
    _, second = next(randomised)
    assert not torch.equal(dict(second.named_parameters())[names[id(below)]], below)
    assert torch.equal(top, stages[0].parameters[0])  # the model itself is untouched


def test_randomising_the_weights_changes_every_gradient_measure_and_a_constant_one_fails(copy_model, test_methods):
    corpus, pairs = grading_pairs(copy_model, None, 3, 0)
    methods = ("grad-input", "ig", "attn-grad", "constant")
    card = grade(copy_model, pairs, CardSettings(methods, FAST, sanity_pairs=3), corpus=corpus)
    for name in ("grad-input", "ig", "attn-grad"):
        sanity = card.row(name).sanity
        assert sanity is not None and len(sanity.cascade) == 5
        assert sanity.cascade[-1] < SANITY_THRESHOLD and sanity.passed, (name, sanity)
        assert card.row(name).sanity_text().startswith("pass")
    constant = card.row("constant").sanity
    assert constant is not None and constant.similarity == 1.0 and not constant.passed
    assert card.row("constant").sanity_text() == "FAIL 1.00"


def test_map_similarity():
    a = np.arange(6.0).reshape(2, 3)
    assert map_similarity(a, a) == 1.0 and map_similarity(a, -a) == pytest.approx(-1.0)
    assert np.isnan(map_similarity(a, np.ones_like(a)))  # one constant map: no ranking to compare


def test_a_model_trained_on_shuffled_targets(copy_model):
    splits = shuffled_splits(copy_model.corpus, seed=0)
    original = load_corpus(copy_model.corpus).train
    sources = [pair.source for pair in splits.train]
    targets = [pair.target for pair in splits.train]
    assert sources == [pair.source for pair in original]  # each source in its place...
    assert sorted(targets) == sorted(pair.target for pair in original)  # ...the corpus's own targets, shuffled
    assert targets != [pair.target for pair in original]
    assert sum(source == target for source, target in zip(sources, targets)) < len(sources) // 4  # copy: mostly not its own
    steps = []
    shuffled = shuffled_targets_model(copy_model, 3, on_step=lambda done, total: steps.append((done, total)))
    assert steps[-1] == (3, 3) and shuffled.source_tokenizer is copy_model.source_tokenizer
    assert shuffled.config == copy_model.config and shuffled.model is not copy_model.model
