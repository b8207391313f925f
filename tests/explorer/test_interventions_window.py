"""The Interventions view of the Explore tab in the window: each tool of a sentence shown with the core's numbers, a
step of the Explore tab outlining the step, a minimal pair patched (the preview, then the exact grids), bad input and
a model that cannot be patched said in one line with the window still working, and the CSV of what is shown. (The
controller alone: tests/explorer/controllers/test_interventions_controller.py.)"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from model.interventions.decoder_lens import bundle_decoder_lens
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import activation_patching
from model.io import checkpoint
from model.io.shipped import resolve_model
from model.kinds import AttentionKind
from model.nn.masking import Head
from tests.conftest import assert_figure
from tests.explorer.gui_helpers import explore_window

SENTENCE = "the cat sees the dog"
WAIT_MS = 60_000  # a bound on waiting for a job, not a timing claim


def shown_interventions(qtbot, open_window, bundle):
    """A window with ``bundle`` open, SENTENCE translated and the Interventions view shown, its readings computed."""
    window, tab = explore_window(open_window, bundle, SENTENCE)
    tab.views.setCurrentWidget(tab.interventions.view)
    controller = window.controllers.interventions
    qtbot.waitUntil(lambda: not controller.running, timeout=WAIT_MS)
    return window, tab, tab.interventions.view


def test_each_tool_shows_the_cores_numbers_and_a_step_moves_the_highlight(qtbot, open_window, default_bundle):
    window, tab, view = shown_interventions(qtbot, open_window, default_bundle)
    assert not tab.focus.isVisibleTo(tab)  # the view takes the focus view's place
    lens = bundle_logit_lens(default_bundle, SENTENCE, 5)
    assert np.allclose(view.lens.values, lens.chosen_probabilities, atol=1e-6)
    assert view.lens.query_labels == lens.readings and view.lens.key_labels[0] == "1 le"
    assert view.lens.cell_texts[-1] == ["le", "chat", "voit", "le", "chien", "</s>"]  # the model's own choices
    assert view.lens.cell_texts[0][0] == lens.candidate_tokens[0][0][0].replace("▁", "")
    assert view.lens.highlighted_step == 5  # the decoding at its end: its last step
    decoder = bundle_decoder_lens(default_bundle, SENTENCE)
    table = view.decoder_lens
    assert table.rowCount() == 3 and [table.item(row, 1).text() for row in range(3)] == decoder.translations
    assert table.item(2, 2).text() == f"{float(decoder.total_log_probabilities[2]):.3f}"
    attribution = bundle_logit_attribution(default_bundle, SENTENCE)
    shown = view.attribution
    assert shown.step == 5 and abs(shown.bars_shown[0][1]) == pytest.approx(np.abs(attribution.values[5]).max(), abs=1e-5)
    tab.controls.step_chosen.emit(2)  # the Explore tab's step slider: two tokens decoded
    assert view.lens.highlighted_step == 1 and view.attribution.step == 1 and not window.controllers.interventions.running
    assert view.lens.column_outline.rect().x() == 1.0
    values = np.abs(attribution.values[1])
    assert [part for part, _ in shown.bars_shown[:3]] == [attribution.parts[i] for i in np.argsort(-values)[:3]]
    self_heads = [attribution.values[1, attribution.parts.index(f"L1 self H{h}")] for h in range(1, 5)]
    assert np.allclose(shown.heads.values[0], self_heads, atol=1e-5) and shown.heads.query_labels[0] == "L1 self"
    assert "Remainder" in shown.remainder.text()


def test_the_attribution_versus_another_candidate(qtbot, open_window, default_bundle):
    """At step 1 the attribution offers the step's other candidates; choosing one splits the logit difference."""
    window, tab, view = shown_interventions(qtbot, open_window, default_bundle)
    tab.controls.step_chosen.emit(1)
    versus, les = view.attribution.versus, default_bundle.target_tokenizer.piece_to_id("les")
    assert versus.itemText(0) == "the chosen token's logit" and versus.count() == 5  # the lens's other top candidates
    position = versus.findData(les)  # "le" is chosen; "les", "l", "du" and "</s>" are offered
    assert [versus.itemText(i) for i in range(1, 5)] == ["minus 'les'", "minus 'l'", "minus 'du'", "minus '</s>'"]
    versus.setCurrentIndex(position)
    versus.activated.emit(position)
    controller = window.controllers.interventions
    qtbot.waitUntil(lambda: not controller.running and view.results["logit attribution"].compared_ids[0] == les, timeout=WAIT_MS)
    expected = bundle_logit_attribution(default_bundle, SENTENCE, [les] + [-1] * 5)
    assert view.attribution.step == 0 and "minus 'les'" in view.attribution.title.text()
    assert abs(view.attribution.bars_shown[0][1]) == pytest.approx(np.abs(expected.values[0]).max(), abs=1e-5)
    assert versus.currentData() == les  # kept while it is shown


def test_a_minimal_pair_is_patched_the_preview_then_exact(qtbot, open_window, default_bundle):
    window, tab, view = shown_interventions(qtbot, open_window, default_bundle)
    patching, controller = view.patching, window.controllers.interventions
    assert patching.clean.text() == SENTENCE  # the Explore tab's sentence, by default
    methods = []
    controller.ready.connect(lambda tool, result: methods.append(result.method) if tool == "patching" and result else None)
    assert view.tool == "logit lens"  # the first sub-tab, not the last (where Qt left it while every one was greyed)
    patching.grid_box.setCurrentText("encoder residual")
    patching.feature.setCurrentText("number")  # the Patching sub-tab hidden: nothing is patched yet
    assert patching.corrupted.text() == "the cats see the dog" and "le chat voit → les chats voient" in patching.expected.text()
    assert not controller.running and methods == []
    view.show_tool("patching")  # shown: the pair is patched on its own, no button pressed
    assert controller.running
    qtbot.waitUntil(lambda: not controller.running, timeout=WAIT_MS)
    assert methods == ["attribution", "exact"] and patching.method.text().startswith("Exact (activation patching)")
    expected = activation_patching(default_bundle, SENTENCE, "the cats see the dog")
    grid = expected.grids["encoder residual"]
    assert np.allclose(patching.heatmap.values, grid.values, atol=1e-4)
    assert patching.heatmap.key_labels == [column.replace("▁", "") for column in grid.columns]
    assert patching.heatmap.key_labels[1] == "cat/cats" and grid.columns[1] == "▁cat/▁cats"
    limit = max(float(np.abs(grid.values).max()), 1.0)  # centred at 0, holding every value and 1
    assert patching.heatmap.color_bar.levels() == pytest.approx((-limit, limit))
    title = "encoder residual (denoising): how much each patch restores 'le' over 'les' at step 1 (1 = clean, 0 = corrupted)"
    assert patching.heatmap.plot.titleLabel.text == title
    patching.grid_box.setCurrentText("cross heads")
    assert np.allclose(patching.heatmap.values, expected.grids["cross heads"].values, atol=1e-4)
    assert view.tool == "patching" and patching.step.text() == "first difference"
    patching.step.setValue(3)  # the verb: "voit" over "voient", patched again on its own
    assert controller.running
    qtbot.waitUntil(lambda: not controller.running and methods[-1] == "exact" and len(methods) == 4, timeout=WAIT_MS)
    at_verb = activation_patching(default_bundle, SENTENCE, "the cats see the dog", step=2)
    assert view.results["patching"].step == 2 and "'voit' over 'voient' at step 3" in patching.heatmap.plot.titleLabel.text
    assert np.allclose(patching.heatmap.values, at_verb.grids["cross heads"].values, atol=1e-4)


def test_bad_input_and_a_model_that_cannot_leave_the_window_working(qtbot, open_window, default_bundle, toy_fr_rnn_bundle):
    window, tab, view = shown_interventions(qtbot, open_window, default_bundle)
    lens_values = view.lens.values.copy()
    view.patching.corrupted.setText("the cats see the dog")
    view.patching.patch_button.click()
    qtbot.waitUntil(lambda: view.patching.result is not None and not window.controllers.interventions.running, timeout=WAIT_MS)
    view.patching.corrupted.setText("the cats see the dogs now")
    view.patching.patch_button.click()
    qtbot.waitUntil(lambda: not window.controllers.interventions.running, timeout=WAIT_MS)
    assert view.status.text() == (
        "Patching could not be computed: the clean source has 6 pieces and the corrupted one 8: patching needs equal counts"
    )
    assert np.array_equal(view.lens.values, lens_values) and tab.explore.text == SENTENCE
    assert view.patching.result is None and view.patching.heatmap.values.size == 0  # no grid of another pair
    assert view.patching.heatmap.color_bar.levels() == pytest.approx((-1.0, 1.0))  # still centred at 0
    window.explore.set_model(toy_fr_rnn_bundle[0])
    assert "this model (" in view.status.text() and "\n" not in view.status.text()
    assert view.lens.values.size == 0 and view.decoder_lens.rowCount() == 0
    assert not any(view.tools.isTabEnabled(index) for index in range(view.tools.count()))  # every tool greyed
    window.explore.set_model(default_bundle)
    assert all(view.tools.isTabEnabled(index) for index in range(view.tools.count()))
    window.explore.set_model(toy_fr_rnn_bundle[0])
    tab.views.setCurrentWidget(tab.grid)  # the other views still draw the model
    assert tab.focus.isVisibleTo(tab) and tab.explore.trace is not None


def test_save_writes_the_shown_result_as_csv_or_figure(qtbot, open_window, default_bundle, tmp_path):
    window, tab, view = shown_interventions(qtbot, open_window, default_bundle)
    lens_path = tab.interventions.save("logit lens", tmp_path / "lens.csv")
    with open(lens_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    lens = bundle_logit_lens(default_bundle, SENTENCE, 5)
    assert len(rows) == 10 * 6 and (rows[0]["reading"], rows[0]["step"], rows[0]["input"]) == ("embeddings", "1", "<s>")
    assert float(rows[-1]["chosen_probability"]) == pytest.approx(float(lens.chosen_probabilities[-1, -1]), abs=1e-6)
    path = tab.interventions.save("DecoderLens", tmp_path / "decoder.csv")
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["layer"] for row in rows] == ["L1", "L2", "L3"]
    assert rows[2]["translation"] == bundle_decoder_lens(default_bundle, SENTENCE).translations[2]
    figure = tab.interventions.save("logit lens", tmp_path / "lens.svg")
    assert_figure(figure, texts=("Logit lens", "model default"))
    assert tab.interventions.save("logit attribution", tmp_path / "dla.pdf") is not None
    # Issue 39: the figures saved from the window name their sentence (and step and target piece), as the lens command's.
    tab.controls.step_chosen.emit(3)  # the third step: "voit"
    dla = tab.interventions.save("logit attribution", tmp_path / "dla.svg")
    assert_figure(dla, texts=(f"Sentence: “{SENTENCE}”", "“voit” at step 3", "Output: “le chat voit le chien”"))
    assert_figure(tab.interventions.save("logit lens", tmp_path / "lens2.svg"), texts=(f"Sentence: “{SENTENCE}”",))
    assert_figure(tab.interventions.save("DecoderLens", tmp_path / "decoder.svg"), texts=(f"Sentence: “{SENTENCE}”",))
    assert tab.interventions.save("logit lens", tmp_path / "lens.txt") is None and "save as .csv" in view.status.text()
    assert tab.interventions.save("patching", tmp_path / "none.csv") is None and not (tmp_path / "none.csv").exists()
    assert view.status.text() == "No patching result to save yet."


def test_an_encoder_only_model_s_lens_reads_its_head_on_the_text(qtbot, open_window):
    """The tagger: the logit lens (its columns the pieces read, each cell a tag), logit attribution (a piece chosen in
    its box) and patching are its tools, DecoderLens greyed with its reason in the status line; knocking a head out
    reads the knocked-out model (the decoding's own)."""
    tagger = checkpoint.load(resolve_model("tagger"))
    window, tab, view = shown_interventions(qtbot, open_window, tagger)
    lens = bundle_logit_lens(tagger, SENTENCE, 5)
    assert np.allclose(view.lens.values, lens.chosen_probabilities, atol=1e-6) and view.lens.values.shape == (5, 6)
    assert view.lens.key_labels == ["the", "cat", "sees", "the", "dog", "</s>"] and view.lens.place == "position"
    assert view.lens.plot.getAxis("top").labelText == "position: the tag predicted"
    assert view.lens.cell_texts[-1] == lens.chosen_tokens and set(lens.chosen_tokens) <= set(tagger.model.config.class_names)
    enabled = [view.tools.tabText(index) for index in range(view.tools.count()) if view.tools.isTabEnabled(index)]
    assert enabled == ["Logit lens", "Logit attribution", "Patching"] and view.tool == "logit lens"
    assert view.status.text().startswith("DecoderLens decodes from each encoder layer's output") and "\n" not in view.status.text()
    assert view.tools.tabToolTip(1).startswith("DecoderLens decodes from each encoder layer's output")  # greyed: why
    assert view.lens.color_bar.getAxis("left").labelText == "probability of the tag predicted"
    attribution = bundle_logit_attribution(tagger, SENTENCE)
    view.show_tool("logit attribution")
    shown = view.attribution
    assert shown.position.isVisibleTo(view) and shown.position.value() == 1 and shown.title.text().startswith("Position 1 (“the”)")
    shown.position.setValue(3)  # "sees": its tag's logit split, its other candidates offered
    assert shown.step == 2 and shown.title.text().startswith("Position 3 (“sees”): the logit of 'VERB'")
    assert abs(shown.bars_shown[0][1]) == pytest.approx(np.abs(attribution.values[2]).max(), abs=1e-5)
    assert shown.versus.count() > 1 and "VERB" not in shown.versus.itemText(1)
    window.explore.toggle_head(Head(AttentionKind.ENCODER, 0, 0))
    qtbot.waitUntil(lambda: not window.controllers.interventions.running, timeout=WAIT_MS)
    assert not np.allclose(view.lens.values, lens.chosen_probabilities, atol=1e-6)  # the knocked-out model's readings
    assert shown.step == 2  # the piece chosen stays
    window.explore.toggle_head(Head(AttentionKind.ENCODER, 0, 0))  # back to the model itself


def test_an_encoder_only_model_s_texts_are_patched_at_a_position(qtbot, open_window):
    """The tagger's Patching sub-tab: its box counts positions; a pair is patched at the first piece whose tag differs,
    the grids the core's."""
    tagger = checkpoint.load(resolve_model("tagger"))
    window, tab, view = shown_interventions(qtbot, open_window, tagger)
    patching, controller = view.patching, window.controllers.interventions
    assert patching.step_label.text() == "Position:" and "the first piece whose prediction differs" in patching.step.toolTip()
    patching.corrupted.setText("the cat red the dog")
    view.show_tool("patching")
    patching.patch_button.click()
    exact = lambda: not controller.running and patching.result is not None and patching.result.method == "exact"  # noqa: E731
    qtbot.waitUntil(exact, timeout=WAIT_MS)
    expected = activation_patching(tagger, SENTENCE, "the cat red the dog")
    patching.grid_box.setCurrentText("encoder residual")
    assert np.allclose(patching.heatmap.values, expected.grids["encoder residual"].values, atol=1e-4)
    assert "restores 'VERB' over 'ADJ' at position 3" in patching.heatmap.plot.titleLabel.text
    assert [patching.grid_box.itemText(i) for i in range(patching.grid_box.count())] == [
        "encoder heads", "encoder residual", "encoder feed-forward"
    ]  # fmt: skip
    window.explore.set_model(checkpoint.load(resolve_model("default")))  # a translation model: steps again
    assert patching.step_label.text() == "Step:" and patching.step.isEnabled()


def test_the_attribution_bars_each_have_room_for_their_label(qtbot, open_window, default_bundle):
    """At 1280x720 the bar plot is about 60 px high: sixteen labels overlapped there. As many bars are shown as have a
    line of text each, and the title says how many of the parts that is."""
    window, tab, view = shown_interventions(qtbot, open_window, default_bundle)
    view.show_tool("logit attribution")
    for size in ((1280, 720), (1920, 1080)):
        window.resize(*size)
        qtbot.waitUntil(lambda: view.attribution.bar_plot.getViewBox().height() > 0, timeout=WAIT_MS)
        QApplication.processEvents()
        shown = view.attribution
        line = QFontMetrics(shown.bar_plot.getAxis("left").font()).height()
        assert 3 <= len(shown.bars_shown) and len(shown.bars_shown) * line <= shown.bar_plot.getViewBox().height() + line
        assert f"the {len(shown.bars_shown)} largest of {len(shown.attribution.parts)} parts" in shown.title.text()
