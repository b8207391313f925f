"""The Explore tab's head table, beam view and candidates panel (offscreen): the candidates at step 0,
the selected row following the focused head whatever the sort, columns wide enough for their headers
and values, roles of the shipped model's cross heads, a readable beam view whose clicks update the
candidates, and candidates listed until they hold 99% of the probability."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from explorer.widgets.candidates_view import CHOSEN_BRUSH, CandidatesView, format_probability
from explorer.widgets.head_table import HeadTable
from model.inspection.heads import ALIGNMENT_ENTROPY, SPREAD_THRESHOLD
from model.io import checkpoint
from model.io.shipped import resolve_model
from tests.explorer.gui_helpers import explore_window

SENTENCE = "a b c d e"
FRENCH = "The black cat does not eat the apple."


@pytest.fixture(scope="module")
def shipped_bundle():
    return checkpoint.load(resolve_model("default"))


@pytest.fixture
def explore(open_window, copy_bundle):
    return explore_window(open_window, copy_bundle[0], SENTENCE)


@pytest.fixture
def shipped(open_window, shipped_bundle):
    window = open_window(shipped_bundle)
    tab = window.explore_tab
    tab.controls.source.setText(FRENCH)
    tab.controls.translate_button.click()
    return window, tab


def selected_heads(table) -> list[tuple[int, int]]:
    return [table.head_at(index.row()) for index in table.selectionModel().selectedRows()]


def assert_columns_fit(view, header, columns) -> None:
    """Every column at least as wide as its header's and its contents' size hints."""
    for column in columns:
        wanted = max(view.sizeHintForColumn(column), header.sectionSizeHint(column))
        assert header.sectionSize(column) >= wanted, (column, header.sectionSize(column), wanted)


# --- 1. candidates at step 0 --------------------------------------------------------------------------
def test_step_zero_shows_the_candidates_for_step_1_and_clicking_one_forces_it(explore):
    window, tab = explore
    session = window.explore
    tab.controls.reset_button.click()
    trace = session.trace
    assert trace.n_steps == 0 and len(trace.next_candidate_ids) == 10
    panel = tab.candidates
    assert panel.step_index == 0 and panel.getPlotItem().titleLabel.text == "Candidates for step 1"
    n = len(panel.token_ids)
    assert n >= 2
    np.testing.assert_array_equal(panel.token_ids, trace.next_candidate_ids[:n])
    np.testing.assert_allclose(panel.probabilities, trace.next_candidate_probabilities[:n])
    assert panel.tokens == trace.next_candidate_tokens[:n]
    assert panel.chosen_id is None and CHOSEN_BRUSH not in panel.bars.opts["brushes"]  # nothing chosen yet
    forced = int(panel.token_ids[1])
    panel.click_candidate(1)
    trace = session.trace
    assert int(trace.chosen_ids[0]) == forced and trace.forced[0] and session.finished


# --- 2. the heads table ---------------------------------------------------------------------------------
def test_the_selected_row_is_the_focused_head_whatever_the_sort(explore):
    window, tab = explore
    table = tab.head_table
    tab.grid.cell_clicked.emit(1, 3)
    tab.views.setCurrentWidget(table)
    assert selected_heads(table) == [(1, 3)]
    table.sortItems(4)  # by entropy
    assert selected_heads(table) == [(1, 3)]
    layer, head = table.head_at(5)
    table.cellClicked.emit(5, 0)  # focus the head of the sorted table's sixth row
    assert (tab.layer, tab.head) == (layer, head)
    assert selected_heads(table) == [(layer, head)]
    table.sortItems(6, Qt.DescendingOrder)  # by distance, then a step back rebuilds the table
    tab.controls.back_button.click()
    assert selected_heads(table) == [(layer, head)]
    distances = [float(table.item(row, 6).text()) for row in range(table.rowCount())]
    assert distances == sorted(distances, reverse=True) and table.horizontalHeaderItem(6).text() == "Distance ▼"
    tab.head_box.setCurrentText("mean over heads")
    assert selected_heads(table) == []


def test_head_table_columns_show_their_headers_and_values_after_every_update(explore, qtbot):
    window, tab = explore
    table = tab.head_table
    tab.views.setCurrentWidget(table)
    header = table.horizontalHeader()
    assert_columns_fit(table, header, range(table.columnCount()))
    # the whole table fits the tab at the window's default size: no column pushed out of view
    assert sum(header.sectionSize(c) for c in range(table.columnCount())) <= table.viewport().width()
    assert header.sectionViewportPosition(6) + header.sectionSize(6) <= table.viewport().width()  # Distance
    narrow = np.full((1, 2, 3, 4), 0.25)  # broad heads, small numbers
    table.set_weights(narrow, ["a", "b", "c", "d"], "encoder")
    wide = np.zeros((1, 2, 3, 40))
    wide[..., 1] = 0.6  # most of it on a comma: "sink: punctuation"; the rest far away: distance above 10
    wide[..., 39] = 0.4
    table.set_weights(wide, ["a", ","] + ["b"] * 38, "encoder")
    assert table.item(0, 2).text() == "sink: punctuation" and float(table.item(0, 6).text()) > 10
    assert_columns_fit(table, header, range(table.columnCount()))
    assert "normalised entropy" in table.horizontalHeaderItem(3).toolTip()
    assert f"{ALIGNMENT_ENTROPY:.2f}" in table.horizontalHeaderItem(3).toolTip()


def test_shipped_model_layer_1_has_a_sink_and_a_focused_head_and_layer_3_aligns(shipped):
    window, tab = shipped
    table = tab.head_table
    tab.views.setCurrentWidget(table)
    roles = {table.head_at(row): (table.item(row, 2).text(), float(table.item(row, 3).text())) for row in range(table.rowCount())}
    assert len(roles) == 12
    # Layer 1 aligns badly (AER 0.77-0.86 against the gold alignments); on this sentence two of its heads are as
    # sharp and moving as an alignment (20% of layer 1's head-sentences over 202 toy-fr sentences), the others not.
    layer_1 = [roles[(0, head)] for head in range(4)]
    assert roles[(0, 0)][0] == "sink: </s>"
    assert any(role == "focused" and score < SPREAD_THRESHOLD for role, score in layer_1), layer_1
    for head in range(4):  # AER 0.10-0.47 (93% of layer 3's head-sentences are alignment-like)
        role, score = roles[(2, head)]
        assert role == "alignment-like" and score < ALIGNMENT_ENTROPY, (head, role, score)
    row = table.row_of(2, 0)
    assert "normalised entropy" in table.item(row, 3).toolTip()
    assert float(table.item(row, 3).text()) == pytest.approx(float(table.item(row, 5).text()))
    focused_row = table.row_of(0, next(h for h in range(4) if roles[(0, h)][0] == "focused"))
    assert "spread of the rows' peaks" in table.item(focused_row, 3).toolTip()


# --- 3. the beam view ---------------------------------------------------------------------------------------
def beam(tab, width=4):
    tab.controls.strategy.setCurrentText("beam")
    tab.controls.beam_width.setValue(width)
    tab.controls.translate_button.click()


def assert_candidates_match(tab, trace):
    panel, n = tab.candidates, trace.n_steps
    rows = len(panel.token_ids)
    assert panel.step_index == n - 1 and rows >= 1
    np.testing.assert_array_equal(panel.token_ids, trace.candidate_ids[-1][:rows])
    np.testing.assert_allclose(panel.probabilities, trace.candidate_probabilities[-1][:rows])
    assert panel.chosen_id == int(trace.chosen_ids[-1])


def test_beam_view_ranks_hypotheses_and_no_column_is_clipped(shipped):
    window, tab = shipped
    beam(tab)
    view, tree = tab.beam_tree, window.explore.stepper.beam
    assert view.isVisibleTo(tab) and view.ranked.topLevelItemCount() == len(tree.hypotheses) >= 4
    first, second = view.ranked.topLevelItem(0), view.ranked.topLevelItem(1)
    assert first.text(0) == "#1" and second.text(0) == "#2"
    assert float(first.text(1)) == pytest.approx(tree.nodes[tree.hypotheses[0]].score, abs=1e-3)
    assert float(first.text(2)) == pytest.approx(tree.nodes[tree.hypotheses[0]].log_probability, abs=1e-3)
    assert first.text(3) == "Le chat noir ne mange pas la pomme. </s>" and "▁" not in first.text(3)
    assert first.toolTip(3).endswith("pomme ·. </s>")
    assert second.text(3) != first.text(3) and second.text(3).endswith("</s>") and "▁" not in second.text(3)
    assert "α = 0.6" in view.ranked.headerItem().toolTip(1) and "length penalty" in view.tree.headerItem().toolTip(2)
    assert view.tree.indentation() <= 12
    assert "▁" not in "".join(item.text(0) for item in view.items.values())
    for widget in (view.ranked, view.tree):  # default width: every column shown whole, nothing scrolled away
        header = widget.header()
        assert_columns_fit(widget, header, range(widget.columnCount()))
        last = widget.columnCount() - 1
        assert header.sectionViewportPosition(last) + header.sectionSize(last) <= widget.viewport().width()


def test_clicking_a_hypothesis_in_the_list_or_the_tree_updates_the_candidates(shipped):
    window, tab = shipped
    session = window.explore
    beam(tab)
    tree = session.stepper.beam
    for rank in (1, 0, 3):
        session.show_hypothesis(rank)
        assert list(session.trace.chosen_ids) == tree.token_ids(tree.hypotheses[rank])
        assert_candidates_match(tab, session.trace)
    # The row of the tree where hypothesis #2 leaves the best one: before, clicking
    # it did nothing and the panel kept the last hypothesis' numbers (</s> at its last step).
    second = tree.token_ids(tree.hypotheses[1])
    best = tree.token_ids(tree.hypotheses[0])
    parting = next(step for step, (a, b) in enumerate(zip(best, second)) if a != b)
    node = tree.hypotheses[1]
    while tree.nodes[node].step > parting:
        node = tree.nodes[node].parent
    before = tab.candidates.probabilities.copy()
    tab.beam_tree.click_node(node)
    trace = session.trace
    assert session.hypothesis_rank == 1 and trace.n_steps == parting + 1
    assert list(trace.chosen_ids) == second[: parting + 1]
    assert_candidates_match(tab, trace)
    assert tab.candidates.chosen_id == second[parting] and tab.candidates.token_ids[0] == best[parting]
    assert not np.allclose(tab.candidates.probabilities[: len(before)], before[: len(tab.candidates.probabilities)])
    assert tab.beam_tree.rank_items[1].isSelected() and not tab.beam_tree.rank_items[0].isSelected()
    tab.beam_tree.ranked.itemClicked.emit(tab.beam_tree.rank_items[2], 0)
    assert session.hypothesis_rank == 2 and list(session.trace.chosen_ids) == tree.token_ids(tree.hypotheses[2])
    assert_candidates_match(tab, session.trace)


# --- 4. the candidates panel ----------------------------------------------------------------------------------
def test_candidates_list_until_99_percent_then_the_rest_in_one_row(qtbot):
    panel = CandidatesView()
    qtbot.addWidget(panel)
    clicks = []
    panel.candidate_clicked.connect(lambda step, token: clicks.append((step, token)))
    probabilities = np.array([0.95, 0.035, 0.008, 0.004, 0.002, 0.001], np.float32)
    panel.set_candidates(4, [7, 8, 9, 10, 11, 12], ["▁La", "s", "</s>", "▁le", "x", "y"], probabilities, 8, vocabulary_size=200)
    assert panel.tokens == ["▁La", "s", "</s>"] and list(panel.token_ids) == [7, 8, 9]  # 0.993 >= 0.99
    np.testing.assert_allclose(panel.probabilities, probabilities[:3])
    assert panel.other_count == 197 and panel.other_probability == pytest.approx(0.007, abs=1e-6)
    assert panel.labels == ["La  0.950", "▶ ·s  0.035", "</s>  8.0e-03", "other (197 tokens)  7.0e-03"]
    assert [tick[1] for tick in panel.getAxis("left")._tickLevels[0]] == panel.labels
    np.testing.assert_allclose(panel.bars.opts["width"], [0.95, 0.035, 0.008, 0.007], atol=1e-6)
    panel.click_candidate(3)  # the "other" row
    assert clicks == []
    panel.click_candidate(2)
    assert clicks == [(4, 9)]
    assert "label smoothing" in panel.toolTip() and "ε = 0.1" in panel.toolTip()


def test_a_rare_candidate_keeps_a_visible_bar_and_a_label_click_forces_its_token(qtbot):
    from types import SimpleNamespace

    from PySide6.QtCore import QPointF, Qt

    from explorer.widgets.candidates_view import MIN_BAR

    panel = CandidatesView()
    qtbot.addWidget(panel)
    panel.resize(600, 300)
    panel.show()
    clicks = []
    panel.candidate_clicked.connect(lambda step, token: clicks.append((step, token)))
    probabilities = np.array([0.5, 0.3, 0.0001, 0.00002], np.float32)  # never 99%: four rows, then "other"
    panel.set_candidates(1, [4, 5, 6, 7], ["a", "b", "c", "d"], probabilities, 4, vocabulary_size=10)
    np.testing.assert_allclose(panel.bars.opts["width"], [0.5, 0.3, MIN_BAR, MIN_BAR, 0.19988], atol=1e-6)
    np.testing.assert_allclose(panel.probabilities, probabilities)  # the values themselves are kept
    assert panel.labels[2] == "·c  1.0e-04"  # and printed as they are (a piece continuing a word)
    for row in (2, 3):  # a click on the label, left of the bars
        point = panel.getPlotItem().vb.mapViewToScene(QPointF(-0.2, row))
        click = SimpleNamespace(scenePos=lambda point=point: point, modifiers=lambda: Qt.NoModifier, button=lambda: Qt.LeftButton)
        panel._on_clicked(click)
    assert clicks == [(1, 6), (1, 7)]
    below = panel.getPlotItem().vb.mapViewToScene(QPointF(-0.2, 7))  # below the last row: nothing
    panel._on_clicked(SimpleNamespace(scenePos=lambda: below, modifiers=lambda: Qt.NoModifier, button=lambda: Qt.LeftButton))
    assert clicks == [(1, 6), (1, 7)]


def test_a_label_smoothed_model_shows_its_spread_with_significant_digits(shipped, shipped_bundle):
    window, tab = shipped
    panel, trace = tab.candidates, window.explore.trace
    assert len(panel.token_ids) == 10  # the best token near 0.91: ten candidates never reach 99%
    assert panel.other_count == shipped_bundle.config.target_vocab_size - 10
    assert panel.other_probability == pytest.approx(1 - trace.candidate_probabilities[-1].sum(), abs=1e-5)
    assert 0.05 < panel.other_probability < 0.15  # about ε = 0.1 spread over the vocabulary
    numbers = [label.rsplit("  ", 1)[1] for label in panel.labels]
    assert "0.000" not in numbers and all(float(text) > 0 for text in numbers)
    assert numbers[1] == format_probability(trace.candidate_probabilities[-1][1]) and "e-0" in numbers[1]


def test_probability_format():
    assert [format_probability(p) for p in (0.912, 0.031, 3.1e-4, 0.0)] == ["0.912", "0.031", "3.1e-04", "0"]


def test_head_table_select_head_on_its_own(qtbot):
    table = HeadTable()
    qtbot.addWidget(table)
    table.set_weights(np.random.default_rng(0).dirichlet(np.ones(5), (2, 3, 4)), list("abcde"), "encoder")
    table.sortItems(4, Qt.DescendingOrder)
    table.select_head(1, 2)
    assert selected_heads(table) == [(1, 2)]
    table.set_weights(np.random.default_rng(1).dirichlet(np.ones(5), (2, 3, 4)), list("abcde"), "encoder")
    assert selected_heads(table) == [(1, 2)]  # a new step keeps the focused head selected
    table.select_head(None, None)
    assert selected_heads(table) == []
