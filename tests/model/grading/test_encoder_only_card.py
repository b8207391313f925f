"""The report card of encoder-only models (model/grading/text_cases.py): a text graded on its head's own decisions —
a tag or a masked-LM word per piece, or the sentence's class — against independent computations:

* the scorer's log p is the model's own head on the text: the app's tagger with a hidden piece's id the pad id (its
  padding mask), a piece left out shortening the text (a piece's own prediction then hidden in place); a library
  model's pass with the attention mask 0 at a hidden piece and the mask token's id there;
* a sentence head's maps are the attention rows it reads (a library classifier's first piece, [CLS]), over the text's
  pieces between [CLS] and [SEP];
* the gradient methods explain the head's decisions: gradient × input is the test's own autograd of log p(decision)
  through the model's embeddings (the app's tagger, and the library's ``inputs_embeds``), integrated gradients are
  complete, attention × gradient is Chefer et al.'s rule on the library's own ``output_attentions``;
* a card grades every method that reads self-attention, with the data randomisation of a tagger trained on shuffled
  tags; the card of the text shown; the command line; a bare encoder (no head) is refused in one line.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.attribution.measures import compute_measure
from model.cli import main
from model.data.corpora import CorpusSpec
from model.grading.cases import GradingError, check_gradable, grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.methods import METHODS, MethodSettings, Reading
from model.grading.sanity import shuffled_targets_model
from model.grading.scoring import TextScorer, scorer_for
from model.grading.sentence import grade_decoding
from model.grading.text_cases import text_case
from model.io.models import open_model
from model.kinds import AttentionKind

FAST = MethodSettings(ig_points=9, lime_samples=8, shap_samples=8)
TEXT = "the black cat sees the small dog"


@pytest.fixture(scope="module")
def tagger():
    return open_model("tagger")


def _tagger_log_p(model, ids: list[int]) -> torch.Tensor:
    """The tagger's own log-probabilities of every tag at every piece [S, C] (its forward: a pad id is padding)."""
    with torch.no_grad():
        return torch.log_softmax(model(torch.tensor([ids]))[0].double(), -1)


def test_the_tagger_s_scorer_is_its_own_head_with_pieces_hidden_or_left_out(tagger):
    model, ids = tagger.model, tagger.source_ids(TEXT)[0]
    case = text_case(tagger, TEXT)
    n = len(ids) - 1  # every piece but </s>
    assert case.lead == 0 and case.n_source == case.n_steps == n and case.predicted == "tag"
    full = _tagger_log_p(model, ids)
    assert case.decided == full[:n].argmax(-1).tolist()
    scorer = scorer_for(model, case)
    assert isinstance(scorer, TextScorer)
    decided = torch.tensor(case.decided)
    np.testing.assert_allclose(scorer.full, full[torch.arange(n), decided].numpy(), atol=1e-5)
    keep = np.ones((1, n), bool)
    keep[0, 2] = False
    hidden = _tagger_log_p(model, ids[:2] + [model.config.pad_id] + ids[3:])
    np.testing.assert_allclose(scorer.hidden_all(keep)[0], hidden[torch.arange(n), decided].numpy(), atol=1e-5)
    without = _tagger_log_p(model, ids[:2] + ids[3:])  # the third piece left out: the ones after it move up
    expected = [float(without[t if t < 2 else t - 1, decided[t]]) for t in range(n)]
    expected[2] = float(hidden[2, decided[2]])  # its own tag cannot be read without it: hidden in place
    np.testing.assert_allclose(scorer.left_out()[2], expected, atol=1e-5)
    assert np.isnan(scorer.prefix_left_out()).all()


def test_a_library_model_hides_a_piece_by_its_attention_mask_and_mask_token(tiny_bundles):
    bundle = tiny_bundles["bert-mlm"]
    network, ids = bundle.model, bundle.source_ids(TEXT)[0]
    case = text_case(bundle, TEXT)
    assert case.lead == 1 and case.n_source == len(ids) - 2 and case.predicted == "word"  # [CLS] and [SEP] not graded
    scorer = scorer_for(network, case)
    keep = np.ones((1, case.n_source), bool)
    keep[0, 3] = False  # the text's fourth piece: position 4
    hidden_ids, mask = list(ids), torch.ones(1, len(ids), dtype=torch.long)
    hidden_ids[4], mask[0, 4] = network.mask_id, 0
    with torch.no_grad():
        logits = network.hf_model(input_ids=torch.tensor([hidden_ids]), attention_mask=mask).logits[0]  # [S, V]
    log_p = torch.log_softmax(logits.double(), -1)
    expected = [float(log_p[1 + t, word]) for t, word in enumerate(case.decided)]
    np.testing.assert_allclose(scorer.hidden_all(keep)[0], expected, atol=1e-5)


def test_a_library_sentence_classifier_s_maps_are_its_first_piece_s_attention_row(tiny_bundles):
    bundle = tiny_bundles["bert-classifier"]
    network, ids = bundle.model, bundle.source_ids(TEXT)[0]
    case = text_case(bundle, TEXT)
    assert case.n_steps == 1 and case.rows == [[0]] and case.predicted == "class"
    maps = METHODS["attention"]().maps(Reading(network, case, scorer_for(network, case), FAST))
    with torch.no_grad():
        out = network.hf_model(input_ids=torch.tensor([ids]), output_attentions=True)
    mean = torch.stack(out.attentions)[:, 0].double().mean((0, 1)).numpy()  # [S, S]
    assert maps.source is not None and maps.prefix is None
    np.testing.assert_allclose(maps.source, mean[None, 0, 1:-1], atol=1e-6)
    assert case.decided == [int(out.logits[0].argmax())]


def test_gradient_x_input_explains_the_tagger_s_decisions_by_the_test_s_own_autograd(tagger):
    model, ids = tagger.model, tagger.source_ids(TEXT)[0]
    values = compute_measure(model, ids, [], "grad-input").values[AttentionKind.ENCODER][0, 0]  # [S, S]
    scale = math.sqrt(model.config.d_model)
    embedded = (model.embedding(torch.tensor([ids])) * scale).detach().requires_grad_(True)  # [1, S, d_model]
    handle = model.embedding.register_forward_hook(lambda _m, _a, _o: embedded / scale)
    try:
        log_p = torch.log_softmax(model(torch.tensor([ids]))[0], -1)  # [S, C]
    finally:
        handle.remove()
    for position, tag in enumerate(log_p.argmax(-1).tolist()):
        (gradient,) = torch.autograd.grad(log_p[position, tag], embedded, retain_graph=True)
        np.testing.assert_allclose(values[position], (gradient * embedded).sum(-1)[0].detach().numpy(), atol=1e-5)


def test_gradient_x_input_of_a_library_head_is_its_own_gradient_over_inputs_embeds(tiny_bundles):
    bundle = tiny_bundles["bert-mlm"]
    network, ids = bundle.model, bundle.source_ids(TEXT)[0]
    values = compute_measure(network, ids, [], "grad-input").values[AttentionKind.ENCODER][0, 0]  # [S, S]
    embedded = network.hf_model.get_input_embeddings()(torch.tensor([ids])).detach().requires_grad_(True)
    log_p = torch.log_softmax(network.hf_model(inputs_embeds=embedded).logits[0], -1)  # [S, V]
    for position in (1, 4, len(ids) - 2):
        word = int(log_p[position].argmax())
        (gradient,) = torch.autograd.grad(log_p[position, word], embedded, retain_graph=True)
        np.testing.assert_allclose(values[position], (gradient * embedded).sum(-1)[0].detach().numpy(), atol=1e-5)


def test_integrated_gradients_of_the_tagger_s_decisions_are_complete(tagger):
    model, ids = tagger.model, tagger.source_ids(TEXT)[0]
    result = compute_measure(model, ids, [], "ig", max_points=257)
    assert result.integration_converged.all() and np.nanmax(result.completeness_gap) < 0.01
    assert np.isnan(result.source_share).all()  # no target prefix to share with


def test_attention_x_gradient_of_a_sentence_head_is_chefer_s_rule_on_the_library_s_weights(tiny_bundles):
    bundle = tiny_bundles["bert-classifier"]
    network, ids = bundle.model, bundle.source_ids(TEXT)[0]
    shares = compute_measure(network, ids, [], "attn-grad").shares[AttentionKind.ENCODER]  # [L, 1, S, S]
    out = network.hf_model(input_ids=torch.tensor([ids]), output_attentions=True)
    decided = int(out.logits[0].argmax())
    gradients = torch.autograd.grad(out.logits[0, decided], out.attentions)
    relevance = torch.eye(len(ids))
    for layer, (gradient, weights) in enumerate(zip(gradients, out.attentions)):
        relevance = relevance + (gradient * weights).clamp(min=0).mean(1)[0].detach() @ relevance  # [S, S]
        row = relevance[0].numpy()  # [CLS]'s: what the pooler reads
        for query in (0, 3, len(ids) - 1):  # every row is the sentence's one prediction
            np.testing.assert_allclose(shares[layer, 0, query], row / row.sum(), atol=1e-5)


def test_a_card_grades_every_method_that_reads_self_attention_on_a_tagger(tagger):
    corpus, pairs = grading_pairs(tagger, None, 2, 0)
    shuffled = shuffled_targets_model(tagger, 10)
    settings = CardSettings((), FAST, sanity_pairs=1, shuffled=shuffled, shuffled_note="10 steps on shuffled tags")
    card = grade(tagger, pairs, settings, corpus=corpus, model_name="tagger")
    assert "tags as the model decides them" in card.caption() and card.pieces == "text" and card.predicted == "tag"
    assert "masked from every position" in card.caption()
    for row in card.rows:
        if row.name in ("alti+", "shift-att"):
            assert "cross-attention" in row.cells["deletion_aopc"].reason
            continue
        assert row.cells["deletion_aopc"].value is not None and row.cells["comprehensiveness"].value is not None, row.name
        assert row.cells["tau_prefix"].reason == "an encoder-only model reads no target prefix"
        assert "translates nothing" in row.cells["aer"].reason
        if row.reads_model:
            assert row.sanity is not None and row.sanity.data is not None, row.name


def test_the_card_of_the_text_shown_grades_the_class_it_is_given(tiny_bundles):
    bundle = tiny_bundles["bert-classifier"]
    ids = bundle.source_ids(TEXT)[0]
    card = grade_decoding(bundle, TEXT, ids, [], "", CardSettings(("attention", "occlusion"), FAST, 0))
    assert card.n_steps == 1 and "its class as the model decides it" in card.corpus
    assert card.row("attention").cells["deletion_aopc"].value is not None


def test_the_command_line_grades_the_tagger(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    arguments = ["--n", "2", "--methods", "attention,grad-input,leave-one-out", "--sanity-pairs", "0", "--quiet"]
    assert main(["report-card", "--model", "tagger", *arguments, "--out", "card.csv"]) == 0
    assert "tags as the model decides them" in capsys.readouterr().out and (tmp_path / "card.csv").is_file()


def test_a_bare_encoder_is_refused_in_one_line(bare_encoder_folder):
    bundle = open_model(bare_encoder_folder)
    with pytest.raises(GradingError, match="this encoder has no head") as error:
        check_gradable(bundle)
    assert "\n" not in str(error.value)
    with pytest.raises(GradingError, match="no head"):
        grading_pairs(bundle, CorpusSpec("toy-fr"), 1, 0)


def test_the_command_line_refuses_a_bare_encoder_in_one_line_writing_nothing(bare_encoder_folder, tmp_path, capsys):
    assert main(["report-card", "--model", bare_encoder_folder, "--corpus", "toy-fr", "--out", str(tmp_path / "c.csv")]) != 0
    err = capsys.readouterr().err
    assert "this encoder has no head" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "c.csv").exists()
