"""Every analysis reads the decoding the user is looking at (issue 40): after a what-if (a candidate clicked at step 2),
after choosing a beam hypothesis other than the first, with heads knocked out and sampled, the measures view, Interventions,
the neuron view and the single-sentence report card each show the Explore tab's decoding (their tokens are the
trace's output, their numbers the core's on the model that decoded it) at the trace's step; a step back moves them
with it. (The decoding they read: explorer/controllers/followed.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.controllers.followed import tool_step
from explorer.widgets.heatmap import shown_labels
from model.attribution.measures import compute_measure, measured_trace
from model.interventions.logit_attribution import logit_attribution
from model.interventions.logit_lens import logit_lens
from model.kinds import AttentionKind
from model.nn.masking import Head
from tests.explorer.gui_helpers import explore_window

SENTENCE = "the small cat sees the dog"
WAIT_MS = 120_000  # a bound on waiting for a job, not a timing claim


def what_if(window, tab) -> None:
    """Step 2's candidates panel: a candidate other than the chosen one clicked (decoded on from there)."""
    greedy = list(window.explore.trace.chosen_ids)
    tab.controls.step_chosen.emit(2)
    panel = tab.candidates
    assert panel.step_index == 1
    other = next(index for index, token in enumerate(panel.token_ids) if int(token) != greedy[1])
    panel.click_candidate(other)
    trace = window.explore.trace
    assert trace.forced[1] and int(trace.chosen_ids[1]) != greedy[1] and window.explore.finished


def beam_hypothesis(window, tab) -> None:
    """A beam of 4 searched, and a hypothesis other than the best (one the greedy decoding is not) clicked."""
    greedy = list(window.explore.trace.chosen_ids)
    tab.controls.strategy.setCurrentText("beam")
    tab.controls.beam_width.setValue(4)
    tab.controls.translate_button.click()
    tree = window.explore.stepper.beam
    rank = next(r for r in range(1, len(tree.hypotheses)) if tree.token_ids(tree.hypotheses[r]) != greedy)
    tab.beam_tree.ranked.itemClicked.emit(tab.beam_tree.rank_items[rank], 0)
    assert window.explore.hypothesis_rank == rank and list(window.explore.trace.chosen_ids) != greedy


def knocked_out(window, tab) -> None:
    """Every cross-attention head of the last layer knocked out: the translation changes (as in test_knock_out)."""
    greedy = list(window.explore.trace.chosen_ids)
    for head in range(4):
        window.explore.toggle_head(Head(AttentionKind.CROSS, 1, head))
    trace = window.explore.trace
    assert len(trace.masked_heads) == 4 and list(trace.chosen_ids) != greedy


def sampled(window, tab) -> None:
    """Sampling at temperature 3 (seed 1): an output the greedy decoding is not."""
    greedy = list(window.explore.trace.chosen_ids)
    tab.controls.strategy.setCurrentText("sample")
    tab.controls.temperature.setValue(3.0)
    tab.controls.seed.setValue(1)
    tab.controls.translate_button.click()
    assert window.explore.options.strategy == "sample" and list(window.explore.trace.chosen_ids) != greedy


DECODINGS = {"what-if": what_if, "beam hypothesis": beam_hypothesis, "knocked-out heads": knocked_out, "sampled": sampled}


@pytest.fixture(params=list(DECODINGS))
def followed(request, open_window, toy_fr_bundle):
    """A window with SENTENCE decoded, then decoded otherwise than greedily (each of DECODINGS)."""
    window, tab = explore_window(open_window, toy_fr_bundle[0], SENTENCE)
    DECODINGS[request.param](window, tab)
    return window, tab


def decoded(window):
    """(the trace shown, the model that decoded it, its source ids, its chosen ids)."""
    stepper, trace = window.explore.stepper, window.explore.trace
    return trace, stepper.model, list(stepper.source_ids), [int(i) for i in trace.chosen_ids]


def test_the_measures_view_shows_the_decoding(qtbot, followed):
    window, tab = followed
    tab.readings.box.set_measure("norm")
    trace, model, source_ids, chosen = decoded(window)
    qtbot.waitUntil(lambda: tab.view_trace is not None and tab.view_trace.measure == "norm", timeout=WAIT_MS)
    shown = tab.view_trace
    assert shown.target_tokens == trace.target_tokens and list(shown.chosen_ids) == chosen
    expected = measured_trace(trace, compute_measure(model, source_ids, chosen, "norm"))
    np.testing.assert_allclose(shown.cross, expected.cross, rtol=0, atol=1e-6)
    tab.controls.step_chosen.emit(3)  # a step back: the measure of the decoding's first three steps
    assert tab.view_trace.n_steps == 3 and tab.view_trace.target_tokens == trace.target_tokens[:3]


def test_interventions_show_the_decoding_at_the_traces_step(qtbot, followed):
    window, tab = followed
    view, controller = tab.interventions.view, window.controllers.interventions
    tab.views.setCurrentWidget(view)
    qtbot.waitUntil(lambda: not controller.running and "logit attribution" in view.results, timeout=WAIT_MS)
    trace, model, source_ids, chosen = decoded(window)
    lens, attribution = view.results["logit lens"], view.results["logit attribution"]
    assert [int(i) for i in lens.chosen_ids] == chosen and lens.chosen_tokens == trace.target_tokens
    assert attribution.target_tokens == trace.target_tokens
    columns = [f"{step + 1} {token}" for step, token in enumerate(shown_labels(trace.target_tokens))]
    assert view.lens.key_labels == columns  # the lens's columns: the tokens the Explore tab shows
    expected = logit_lens(model, source_ids, chosen, 5)
    np.testing.assert_allclose(lens.chosen_probabilities, expected.chosen_probabilities, rtol=0, atol=1e-6)
    parts = logit_attribution(model, source_ids, chosen)
    np.testing.assert_allclose(attribution.values, parts.values, rtol=0, atol=1e-5)
    assert view.lens.highlighted_step == tool_step(trace.n_steps) == trace.n_steps - 1
    greedy_by_design = bool(trace.forced.any()) or trace.hypothesis_rank is not None or window.explore.options.strategy == "sample"
    assert ("The DecoderLens does not follow the" in view.status.text()) == greedy_by_design  # one line says so
    tab.word_level.setChecked(True)  # words: the readings say they read pieces
    assert "The logit lens does not follow the words (it reads pieces" in view.status.text()
    tab.word_level.setChecked(False)
    tab.controls.step_chosen.emit(2)  # a step back: the highlight moves, the decoding computed is read
    assert view.lens.highlighted_step == 1 and view.attribution.step == 1 and not controller.running
    assert view.results["logit lens"] is lens


def test_the_neuron_view_shows_the_decoding_at_the_traces_step(qtbot, followed):
    window, tab = followed
    view, controller = tab.neuron.view, window.controllers.neuron
    tab.kind.setCurrentIndex(tab.kind.findData("cross"))
    tab.views.setCurrentWidget(view)
    qtbot.waitUntil(lambda: not controller.running and view.row is not None, timeout=WAIT_MS)
    trace, model, source_ids, chosen = decoded(window)
    assert controller.computed_for == (model, tuple(source_ids), tuple(chosen))
    assert view.row.query == trace.n_steps - 1 and view.query_box.count() == trace.n_steps
    queries = [view.query_box.itemText(i) for i in range(view.query_box.count())]
    assert queries[-1].endswith(shown_labels(trace.target_tokens)[-1])  # the last query: the token decoded last
    tab.controls.step_chosen.emit(2)
    assert view.row.query == 1
    tab.word_level.setChecked(True)  # words: the view says it shows pieces
    assert "The neuron view does not follow the words (it shows pieces" in view.status.text()
    tab.word_level.setChecked(False)
    assert "does not follow" not in view.status.text()


def test_the_report_card_of_the_sentence_grades_the_decoding_at_the_traces_step(qtbot, followed):
    window, tab = followed
    card_view, controller = tab.report_card.view, window.controllers.report_card
    tab.views.setCurrentWidget(card_view)
    tab.controls.step_chosen.emit(3)  # the trace's step: three tokens decoded
    trace = window.explore.trace
    card_view.sanity_pairs.setValue(0)
    tab.report_card.sentence_button.click()
    qtbot.waitUntil(lambda: controller.card is not None, timeout=WAIT_MS)
    graded, card = controller.graded, controller.card
    assert list(graded.target_tokens) == trace.target_tokens and list(graded.chosen_ids) == list(trace.chosen_ids)
    assert graded.model is window.explore.stepper.model  # the decoding's own model: heads knocked out
    eos = window.explore.bundle.config.eos_id
    assert card.n_pairs == 1 and card.n_steps == sum(int(token) != eos for token in trace.chosen_ids) == 3
    assert trace.target_text in card.corpus and card.caption() in card_view.note.text()
    tab.word_level.setChecked(True)
    assert "The report card does not follow the words (it grades pieces)." in card_view.note.text()
    tab.word_level.setChecked(False)
    tab.controls.step_chosen.emit(2)  # another decoding shown: the card says it grades the other one
    assert "press This sentence" in card_view.note.text()
