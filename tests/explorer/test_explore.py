"""The Explore and Positional-encoding tabs (offscreen): each control is driven and what the views
hold is checked against the trace — matrices, labels, the highlighted row, candidates, forcing. What the Explore
controller decodes (steps, forcing, beam, sampling, bad input, another model): tests/explorer/controllers/."""

from __future__ import annotations

import numpy as np
import pytest

from model.decoding.stepper import DecodingOptions, Stepper
from model.inspection.heads import mean_over_heads, rollout
from tests.explorer.gui_helpers import explore_window

SENTENCE = "a b c d e"


@pytest.fixture
def explore(open_window, copy_bundle):
    return explore_window(open_window, copy_bundle[0], SENTENCE)


def reference_trace(bundle, text=SENTENCE, **options):
    stepper = Stepper(bundle, text, DecodingOptions(**options))
    stepper.run()
    return stepper.trace()


def test_enter_translates_and_the_views_hold_the_trace(explore, copy_bundle):
    window, tab = explore
    trace = window.explore.trace
    expected = reference_trace(copy_bundle[0])
    assert trace.target_tokens == expected.target_tokens and trace.n_steps > 0
    assert tab.source_tokens.tokens == expected.source_tokens
    assert tab.target_tokens.tokens == expected.target_tokens and tab.target_tokens.current == trace.n_steps - 1
    # default view: cross-attention, layer 1, mean over heads
    assert tab.current_kind() == "cross"
    np.testing.assert_allclose(tab.focus.values, mean_over_heads(expected.cross)[0], atol=1e-6)
    assert tab.focus.query_labels == expected.target_tokens and tab.focus.key_labels == expected.source_tokens
    assert tab.focus.highlighted_row == trace.n_steps - 1
    np.testing.assert_allclose(tab.grid.weights, expected.cross, atol=1e-6)
    mosaic = tab.grid.image.image  # layers x heads cells with gaps between them
    n_queries, n_keys = expected.cross.shape[2:]
    np.testing.assert_allclose(mosaic[:n_queries, :n_keys], expected.cross[0, 0], atol=1e-6)
    assert mosaic.shape[0] > 2 * n_queries and mosaic.shape[1] > 4 * n_keys and np.isnan(mosaic).any()
    tab.views.setCurrentWidget(tab.lines)  # views off screen update when shown
    assert tab.lines.weights.shape == (4, trace.n_steps, len(expected.source_tokens)) and tab.lines.n_lines > 0
    tab.views.setCurrentWidget(tab.head_table)
    assert tab.head_table.rowCount() == 8
    # candidates of the last step, best first, the chosen one among them
    assert tab.candidates.step_index == trace.n_steps - 1
    np.testing.assert_array_equal(tab.candidates.token_ids, trace.candidate_ids[-1])
    assert np.all(np.diff(tab.candidates.probabilities) <= 1e-7)


def test_stepping_back_forward_reset_and_the_slider(explore):
    window, tab = explore
    session, controls = window.explore, tab.controls
    total = session.total_steps
    controls.back_button.click()
    assert session.trace.n_steps == total - 1 and controls.slider.value() == total - 1
    assert controls.slider.maximum() == total and controls.forward_button.isEnabled()
    assert tab.focus.values.shape[0] == total - 1 and tab.focus.highlighted_row == total - 2
    controls.reset_button.click()
    assert session.trace.n_steps == 0 and tab.focus.values.shape[0] == 0 and controls.slider.maximum() == total
    controls.forward_button.click()
    controls.forward_button.click()
    assert session.trace.n_steps == 2 and tab.target_tokens.current == 1
    controls.slider.setValue(total - 1)
    assert session.trace.n_steps == total - 1
    controls.run_button.click()
    assert session.trace.n_steps == total and not controls.run_button.isEnabled()
    tab.target_tokens.token_clicked.emit(0)  # clicking a target token goes to its step
    assert session.trace.n_steps == 1


def test_kind_layer_head_aggregates_and_word_level(explore, copy_bundle):
    window, tab = explore
    expected = reference_trace(copy_bundle[0])
    tab.kind.setCurrentIndex(tab.kind.findData("encoder"))
    assert tab.focus.highlighted_row is None  # encoder rows are not steps
    np.testing.assert_allclose(tab.grid.weights, expected.encoder_self, atol=1e-6)
    tab.layer_box.setValue(2)
    tab.head_box.setCurrentIndex(2)  # head 3
    np.testing.assert_allclose(tab.focus.values, expected.encoder_self[1, 2], atol=1e-6)
    assert "layer 2, head 3" in tab.focus.plot.titleLabel.text
    tab.head_box.setCurrentText("max over heads")
    np.testing.assert_allclose(tab.focus.values, expected.encoder_self[1].max(axis=0), atol=1e-6)
    tab.head_box.setCurrentText("rollout")
    np.testing.assert_allclose(tab.focus.values, rollout(expected.encoder_self)[1], atol=1e-5)
    tab.kind.setCurrentIndex(tab.kind.findData("decoder"))
    assert np.allclose(np.triu(tab.focus.values, 1), 0)  # nothing from the future
    tab.kind.setCurrentIndex(tab.kind.findData("cross"))  # rollout is for self-attention: the mean is shown
    np.testing.assert_allclose(tab.focus.values, mean_over_heads(expected.cross)[1], atol=1e-6)
    assert "Rollout" in tab.hint.text()
    tab.word_level.setChecked(True)
    words = expected.word_level()
    assert tab.focus.key_labels == words.source_tokens
    np.testing.assert_allclose(tab.focus.values, mean_over_heads(words.cross)[1], atol=1e-6)


def test_clicking_a_grid_cell_or_a_table_row_focuses_that_head(explore, copy_bundle):
    window, tab = explore
    expected = reference_trace(copy_bundle[0])
    from PySide6.QtCore import QPointF

    rows, columns = tab.grid._cell  # a cell plus its gap, in mosaic pixels
    assert tab.grid.cell_at(tab.grid.plot.vb.mapViewToScene(QPointF(3 * columns + 0.5, rows + 0.5))) == (1, 3)
    tab.grid.cell_clicked.emit(1, 3)
    np.testing.assert_allclose(tab.focus.values, expected.cross[1, 3], atol=1e-6)
    assert tab.layer_box.value() == 2 and tab.head_box.currentIndex() == 3 and tab.grid.selected == (1, 3)
    tab.views.setCurrentWidget(tab.head_table)
    tab.head_table.sortItems(4)  # by entropy
    entropies = [float(tab.head_table.item(row, 4).text()) for row in range(tab.head_table.rowCount())]
    assert entropies == sorted(entropies)
    layer, head = tab.head_table.head_at(0)
    tab.head_table.cellClicked.emit(0, 0)
    np.testing.assert_allclose(tab.focus.values, expected.cross[layer, head], atol=1e-6)


def test_lines_view_heads_switch_on_and_off(explore):
    window, tab = explore
    tab.views.setCurrentWidget(tab.lines)
    all_lines = tab.lines.n_lines
    tab.lines.head_boxes[0].setChecked(False)
    assert tab.lines.visible_heads() == [1, 2, 3] and tab.lines.n_lines < all_lines
    tab.lines.set_heads_visible([])
    assert tab.lines.n_lines == 0


def test_clicking_a_candidate_forces_it_and_decoding_continues(explore, copy_bundle):
    """The candidate clicked reaches the controller at the step shown, and the forced token is marked. (What forcing
    does to the decoding: tests/explorer/controllers/test_explore_controller.py.)"""
    window, tab = explore
    session = window.explore
    tab.target_tokens.token_clicked.emit(1)  # go to step 2; its candidates show
    assert tab.candidates.step_index == 1 and session.trace.n_steps == 2
    alternative = next(i for i, t in enumerate(tab.candidates.token_ids) if t != session.trace.chosen_ids[1])
    forced_id = int(tab.candidates.token_ids[alternative])
    tab.candidates.click_candidate(alternative)
    trace = session.trace
    assert int(trace.chosen_ids[1]) == forced_id and trace.forced[1]
    assert list(tab.target_tokens.forced) == list(trace.forced) and tab.target_tokens.tokens == trace.target_tokens


def test_beam_search_shows_the_tree_and_a_clicked_hypothesis(explore, copy_bundle):
    """The strategy and width reach the controller, its beam reaches the tree, a clicked hypothesis reaches the
    controller. (Which tokens a hypothesis has: tests/explorer/controllers/test_explore_controller.py.)"""
    window, tab = explore
    tab.controls.strategy.setCurrentText("beam")
    tab.controls.beam_width.setValue(3)
    tab.controls.translate_button.click()
    assert (window.explore.options.strategy, window.explore.options.beam_width) == ("beam", 3)
    beam = window.explore.stepper.beam
    assert tab.beam_tree.isVisibleTo(tab) and tab.beam_tree.ranks == {node: rank for rank, node in enumerate(beam.hypotheses)}
    assert len(tab.beam_tree.ranks) >= 2
    tab.beam_tree.click_hypothesis(1)
    assert window.explore.hypothesis_rank == 1


def test_the_sampling_controls_reach_the_decoding(explore):
    """Was test_sampling_is_repeatable_with_its_seed: the controls' temperature and seed reach the controller (that a
    seed repeats: tests/explorer/controllers/test_explore_controller.py)."""
    window, tab = explore
    tab.controls.strategy.setCurrentText("sample")
    tab.controls.temperature.setValue(1.5)
    tab.controls.seed.setValue(7)
    tab.controls.translate_button.click()
    options = window.explore.options
    assert (options.strategy, options.temperature, options.seed) == ("sample", 1.5, 7)
    assert window.explore.stepper.options.seed == 7 and window.explore.trace is not None


@pytest.mark.parametrize("text", ["   ", "a b 🙂 \u0000 ∑ 漢字 c"], ids=["blank", "unicode"])
def test_bad_input_gives_messages_not_crashes(explore, text):
    """The field's text reaches the controller, its message the status bar, and odd text is drawn. (Every bad input's
    message: tests/explorer/controllers/test_explore_controller.py.)"""
    window, tab = explore
    tab.controls.source.setText(text)
    tab.controls.translate_button.click()
    assert window.explore.text == text
    if not text.strip():
        assert window.statusBar().currentMessage() == "Type a sentence to translate." and window.explore.trace is None
        assert tab.focus.values.size == 0 and tab.target_tokens.tokens == []
    else:
        assert window.explore.trace is not None and tab.focus.values.size > 0
        assert tab.source_tokens.tokens == window.explore.trace.source_tokens


def test_switching_the_model_mid_decode(explore, toy_fr_bundle):
    """The views follow the new model's decoding (which sentence it decodes: the controller's tests)."""
    window, tab = explore
    tab.controls.back_button.click()
    window.explore.set_model(toy_fr_bundle[0])
    trace = window.explore.trace
    assert trace is not None and tab.source_tokens.tokens == trace.source_tokens
    assert tab.head_box.count() == 4 + 3 and tab.focus.values.shape == trace.cross[0, 0].shape
    assert tab.controls.slider.value() == trace.n_steps == window.explore.total_steps


def test_positional_tab_shows_table_similarity_curves_and_rotation(open_window, copy_bundle):
    window = open_window(copy_bundle[0])
    tab = window.positional_tab
    report = tab.report
    table = copy_bundle[0].model.positional_table[:64].numpy()
    np.testing.assert_allclose(tab.table_view.values, table, atol=1e-6)
    np.testing.assert_allclose(tab.similarity_view.values, table @ table.T, rtol=1e-4, atol=1e-3)
    assert len(tab.curves.getPlotItem().listDataItems()) == 4  # dims 0, 1, 8, 9 (32, 33 >= d_model)
    assert report.rotation_error.max() < 1e-5 and report.unrotated_error.max() > 0.5
    assert "rotation" in tab.summary.text()
    tab.positions.setValue(20)
    assert tab.table_view.values.shape == (20, 32)


def test_another_model_decodes_the_sentence_in_the_field_enter_or_not(explore, toy_fr_bundle):
    """Typed without Enter, then another model opened: it decodes what the field shows, not the last sentence."""
    window, tab = explore
    typed = "the small dog sees the cat"
    tab.controls.source.setText(typed)
    tab.controls.source.textEdited.emit(typed)  # as typing does (setText alone is not an edit)
    assert window.explore.trace.source_text != typed  # nothing decoded yet
    window.explore.set_model(toy_fr_bundle[0])
    assert window.explore.text == typed and window.explore.trace.source_text == typed
    assert tab.controls.source.text() == typed
