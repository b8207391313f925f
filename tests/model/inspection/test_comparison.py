"""Two models side by side (model/inspection/comparison.py, model/figures/comparison.py, the ``compare`` command):
the head each side shows is its best-aligning one, the AER of a sentence is that head's, and the pair is one
figure that real viewers draw with both models' labels."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from model.cli.commands import main
from model.data.corpora import toy_fr
from model.figures.attention import FigureOptions
from model.figures.comparison import pair_figure
from model.figures.layout import ordinal
from model.figures.saving import save_figure
from model.inspection.alignment import aer_pairs, cross_attention_aer
from model.inspection.comparison import FRESH_SEED, HeadChoice, best_alignment_head, compared_matrix, decoded_panel, sentence_aer
from model.io import checkpoint
from tests.conftest import assert_figure, png_size
from tests.model.figures.test_figures import renderer


@pytest.fixture(scope="module")
def transformer(toy_fr_bundle):
    return toy_fr_bundle[0]


@pytest.fixture(scope="module")
def pairs(transformer):
    return aer_pairs(transformer.corpus, 20, 0)  # the app's AER pairs: 20 of its corpus's test split, seed 0


@pytest.fixture(scope="module")
def rnn(toy_fr_rnn_bundle):
    return toy_fr_rnn_bundle[0]


def test_the_best_head_is_the_lowest_aer_of_the_report(transformer, rnn, pairs):
    choice = best_alignment_head(transformer, 20, 0)
    table = cross_attention_aer(transformer, pairs).head_aer[0]  # [layers, heads], the predicting rows
    assert isinstance(choice.head, int) and choice.corpus_aer == float(table.min())
    assert table[choice.layer, choice.head] == table.min()
    assert (choice.n_pairs, choice.corpus, choice.seed) == (20, "toy-fr", 0)
    assert choice.describe(2, 4).endswith(f"AER {choice.corpus_aer:.3f} on 20 toy-fr test pairs, seed 0")
    rnn = best_alignment_head(rnn, 20, 0)
    assert (rnn.layer, rnn.head) == (0, 0) and 0.0 <= (rnn.corpus_aer or 0) <= 1.0
    assert "its one attention" in rnn.describe(1, 1) and "20 toy-fr test pairs, seed 0" in rnn.describe(1, 1)


def test_a_model_not_trained_on_toy_fr_shows_its_last_layer_mean(copy_bundle):
    bundle = copy_bundle[0]
    choice = best_alignment_head(bundle)
    assert choice == HeadChoice(bundle.config.n_decoder_layers - 1, "mean", None, 0)


def test_a_sentence_s_aer_is_the_chosen_head_s_on_that_pair(transformer, pairs):
    pair = next(p for p in pairs if p.alignment)
    report = cross_attention_aer(transformer, [pair])
    choice = HeadChoice(1, 2, None, 0)
    assert sentence_aer(transformer, pair, choice) == pytest.approx(float(report.head_aer[0, 1, 2]))
    mean = HeadChoice(0, "mean", None, 0)
    assert sentence_aer(transformer, pair, mean) == pytest.approx(float(report.layer_aer[0, 0]))


def test_both_panels_show_their_decoding_at_the_same_step(transformer, rnn):
    gold = toy_fr.generate(3, FRESH_SEED)[-1]
    left = decoded_panel("transformer", transformer, gold.source, step=2, gold=gold)
    right = decoded_panel("rnn", rnn, gold.source, step=2, gold=gold)
    for panel in (left, right):
        assert panel.trace.n_steps == 2 and panel.sentence_aer is not None
        matrix, shown = compared_matrix(panel.trace, panel.choice)
        assert matrix.values.shape == (shown.n_steps, len(shown.source_tokens))
        np.testing.assert_allclose(matrix.values.sum(-1), 1.0, atol=1e-5)  # words keep each row a distribution
    assert "on this sentence" in right.heading() and right.heading().startswith("rnn: its one attention")


def test_the_pair_figure_is_drawn_right_by_real_viewers(transformer, rnn, tmp_path):
    text = "the small cat sees the dog"
    panels = [decoded_panel("transformer", transformer, text), decoded_panel("rnn-model", rnn, text)]
    for width in (3.3, 6.9):
        svg = save_figure(pair_figure(panels, FigureOptions(width=width)), tmp_path / f"pair{width}.svg")
        content = svg.read_text(encoding="utf-8")
        assert "transformer" in content and "rnn-model" in content and "sees" in content
    save_figure(pair_figure(panels), tmp_path / "pair.pdf")
    save_figure(pair_figure(panels[:1]), tmp_path / "one.png")
    # The independent renderers: missing, the test skips with the reason (and fails in CI, which installs them).
    subprocess.run([renderer("rsvg-convert"), str(tmp_path / "pair3.3.svg"), "-o", str(tmp_path / "svg.png")], check=True)
    subprocess.run([renderer("pdftoppm"), "-png", "-r", "50", str(tmp_path / "pair.pdf"), str(tmp_path / "pdf")], check=True)
    assert png_size(tmp_path / "svg.png")[0] == round(3.3 * 96)  # librsvg draws 96 pixels an inch
    assert [png_size(page)[0] for page in tmp_path.glob("pdf*.png")] == [round(6.9 * 50)]  # one page, 6.9 in at 50 dpi
    assert_figure(tmp_path / "pair.pdf", texts=("sees",))
    assert_figure(tmp_path / "one.png")


def test_the_compare_command(transformer, rnn, tmp_path, capsys):
    first = checkpoint.save(transformer, tmp_path / "transformer.safetensors")
    second = checkpoint.save(rnn, tmp_path / "rnn.safetensors")
    out = tmp_path / "pair.png"
    assert main(["compare", "--model", str(first), "--with", str(second), "--toy-fr", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "transformer: layer" in printed and "rnn: its one attention" in printed
    assert_figure(out)
    assert "on this sentence" in printed  # a toy-fr sentence has its gold alignment
    assert main(["compare", "--model", str(first), "--with", str(second), "--text", "the cat", "--out", str(out)]) == 0
    assert main(["compare", "--model", str(first), "--with", str(second), "--text", " ", "--out", str(out)]) == 1
    assert "--text is empty" in capsys.readouterr().err
    assert main(["compare", "--model", str(first), "--with", str(second), "--text", "x", "--out", str(tmp_path / "a.txt")]) == 1
    before = first.read_bytes()
    assert main(["compare", "--model", str(first), "--with", str(first), "--text", "x", "--out", str(first)]) == 1
    assert first.read_bytes() == before  # the model file was not overwritten by the figure


def test_the_pair_figure_says_when_it_labels_only_every_nth_token(transformer, rnn):
    text = "the small cat sees the dog"
    panels = [decoded_panel("transformer", transformer, text), decoded_panel("rnn-model", rnn, text)]
    every_label = pair_figure(panels, FigureOptions(width=6.9))
    assert every_label.label_fits["keys"].every == 1
    assert "label is shown" not in " ".join(t.get_text() for t in every_label.texts)
    long = " ".join([text] * 12)  # more source words than the figure can label
    panels = [decoded_panel("transformer", transformer, long), decoded_panel("rnn-model", rnn, long)]
    figure = pair_figure(panels, FigureOptions(width=5.0))  # the model reads at most its max_len: a narrower figure
    fit = figure.label_fits["keys"]
    assert fit.every > 1
    caption = " ".join(t.get_text() for t in figure.texts).replace("\n", " ")
    assert f"Only every {ordinal(fit.every)} source label is shown" in caption
