"""The "Reading" box in the window: a contribution measure replaces the attention weights in every view (computed in
the background; the views say so until it is ready), a measure a kind or a model does not define is disabled with
the reason, ALTI+ and the saliencies give each step's source share in the focus title, exports say which measure
they show, and Ctrl+click on a candidate shows why the model chose its token and not that one. What the measure
controller computes: tests/explorer/controllers/test_measures_controller.py."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtCore import Qt

from explorer.controllers.measures import Contrast
from explorer.tabs.explore.measures import ExploreMeasures
from explorer.widgets.contrast_view import ContrastView
from model.attribution.measures import NAMES, integration_note
from model.decoding.trace import Trace
from model.kinds import AttentionKind
from tests.explorer.gui_helpers import explore_window


def choose(qtbot, tab, name: str) -> None:
    """Pick ``name`` in the Reading box and wait until the views show it."""
    tab.measure_box.set_measure(name)
    qtbot.waitUntil(lambda: tab.shown is not None and tab.shown.measure == name, timeout=60000)


def test_a_measure_replaces_the_weights_in_every_view(qtbot, open_window, toy_fr_bundle, toy_fr_rnn_bundle, tmp_path):
    """The Reading box reaches the measure controller and its measured traces reach the views; the measures it does not
    define are disabled with its reasons. (The measured values, the reasons themselves, the gradient job and its rows:
    tests/explorer/controllers/test_measures_controller.py.)"""
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    measures = window.controllers.measures
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))
    tab.views.setCurrentWidget(tab.grid)
    choose(qtbot, tab, "norm")
    assert measures.measure == "norm" and "Norm-based" in tab.focus_matrix.title and tab.grid.levels == (0.0, 1.0)
    np.testing.assert_array_equal(tab.shown.cross, measures.shown(window.explore.trace).cross)
    choose(qtbot, tab, "alti+")
    assert "% source, " in tab.focus._title
    np.testing.assert_array_equal(tab.grid.weights, measures.shown(window.explore.trace).cross)  # one map per layer
    figure = tab.export_view("focus", tmp_path / "focus.svg")
    assert "ALTI+" in figure.read_text(encoding="utf-8")
    # ALTI has no cross-attention: disabled for it, with the reason; the weights are shown if it stays chosen.
    items = tab.measure_box.model()
    alti = items.item(NAMES.index("alti"))
    reason = measures.availability(AttentionKind.CROSS)["alti"]
    assert not alti.isEnabled() and reason and tab.measure_box.itemData(NAMES.index("alti"), Qt.ToolTipRole) == reason
    tab.measure_box.set_measure("alti")
    qtbot.waitUntil(lambda: "showing the attention weights" in tab.hint.text())
    assert tab.shown.measure == ""
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.ENCODER))
    qtbot.waitUntil(lambda: tab.shown.measure == "alti", timeout=60000)
    # The gradient methods: computed off the window's thread; the views show them once they arrive.
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))
    choose(qtbot, tab, "ig")
    assert tab.measure_box.measure == "ig" and "Integrated gradients" in tab.focus_matrix.title
    qtbot.waitUntil(lambda: "completeness gap" in tab.focus._title, timeout=120000)  # the job's rows have arrived
    assert integration_note(tab.shown) in tab.focus._title  # read from the trace
    assert "Integrated gradients, step" in tab.export_view("focus", tmp_path / "ig.svg").read_text(encoding="utf-8")
    # Another family: every measure but the weights disabled.
    window.explore.set_model(toy_fr_rnn_bundle[0])
    qtbot.waitUntil(lambda: window.explore.trace is not None)
    assert not items.item(NAMES.index("norm")).isEnabled() and items.item(0).isEnabled()


def test_the_integrated_gradients_gap_is_shown_from_the_data_the_views_are_given(qtbot):
    n = 3
    trace = Trace(
        None,
        np.zeros((1, 1, n, n), np.float32),
        np.zeros((1, 1, n, 2), np.float32),
        ["▁a", "</s>"],
        ["▁x", "▁y", "</s>"],
        ["<s>", "▁x", "▁y"],
        measure="ig",
        source_share=np.array([0.5, 0.25, 0.75], np.float32),
        completeness_gap=np.array([0.004, 0.2, 0.001], np.float32),
        integration_points=np.array([1153, 8192, 129]),
        integration_converged=np.array([True, False, True]),
    )
    title = ExploreMeasures.focus_title("Cross-attention: Integrated gradients", trace)
    assert title == (
        "Cross-attention: Integrated gradients · step 3: 75% source, 25% target prefix · step 3: completeness gap 0.1% "
        "(converged, 129 points); NOT CONVERGED at step 2 (gap up to 20.0%): approximate"
    )
    assert ExploreMeasures.focus_title("T", trace.at_step(1)).endswith("step 1: completeness gap 0.4% (converged, 1,153 points)")
    assert "step 2: completeness gap 20.0%: NOT CONVERGED within 8,192 points" in ExploreMeasures.focus_title("T", trace.at_step(2))
    assert ExploreMeasures.focus_title("T", replace(trace, measure="norm", completeness_gap=np.zeros(0))).count("gap") == 0
    view = ContrastView()
    qtbot.addWidget(view)
    contrast = Contrast(1, "▁y", "▁z", "ig", ["▁a", "</s>"], np.ones(2), ["<s>", "▁x"], np.ones(2), 0.3, 8192, False)
    view.set_contrast(contrast)
    assert "completeness gap 30.0%: NOT CONVERGED within 8,192 points" in view.title.text()
    view.set_contrast(replace(contrast, completeness_gap=0.002, points=385, converged=True))
    assert "completeness gap 0.2% (converged, 385 points)" in view.title.text()
    view.set_contrast(replace(contrast, method="grad-input"))
    assert "completeness gap" not in view.title.text()


def test_ctrl_click_on_a_candidate_says_why_not_that_one(qtbot, open_window, toy_fr_bundle):
    """Ctrl+click on a candidate asks the measure controller for that step and token, and its contrast is shown.
    (What the contrast holds: tests/explorer/controllers/test_measures_controller.py.)"""
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    window.explore.go_to_step(2)
    candidates = tab.candidates
    other = next(i for i, token in enumerate(candidates.token_ids) if int(token) != candidates.chosen_id)
    point = candidates.getPlotItem().vb.mapViewToScene(__import__("PySide6.QtCore").QtCore.QPointF(0.01, other))
    before = list(window.explore.trace.chosen_ids)
    click = SimpleNamespace(scenePos=lambda: point, modifiers=lambda: Qt.ControlModifier, button=lambda: Qt.LeftButton)
    with qtbot.waitSignal(tab.measures.contrast_ready, timeout=60000) as ready:
        candidates._on_clicked(click)
    assert list(window.explore.trace.chosen_ids) == before  # nothing forced
    contrast = ready.args[0]
    other_piece = window.explore.bundle.target_tokenizer.piece(int(candidates.token_ids[other]))
    assert (contrast.step, contrast.other) == (1, other_piece)  # the step shown, the token clicked
    assert tab.contrast.isVisible() and "why" in tab.contrast.title.text() and tab.contrast.contrast is contrast
    tab.contrast._on_close_clicked()
    assert not tab.contrast.isVisible()


def test_head_importance_shows_on_the_grid(qtbot, open_window, toy_fr_bundle):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))
    tab.views.setCurrentWidget(tab.grid)
    importance = tab.readings.importance
    assert importance.compute(8)
    qtbot.waitUntil(lambda: importance.importance is not None, timeout=120000)
    importance.cancel()  # the pruning curve is not drawn on the grid
    n_layers, n_heads = window.explore.trace.cross.shape[:2]
    assert len(tab.grid.visible_importance_labels()) == n_layers * n_heads
    choose(qtbot, tab, "alti+")  # one map per layer: no per-head numbers on it
    assert tab.grid.visible_importance_labels() == []


def test_the_colour_bar_says_what_it_measures(qtbot, open_window, toy_fr_bundle):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    label = tab.focus.color_bar.getAxis("left").labelText
    assert label == "attention weight"
    choose(qtbot, tab, "norm")
    assert tab.focus.color_bar.getAxis("left").labelText == "share of the row"


def test_the_contrast_panel_has_room_after_a_beam_came_and_went(qtbot, open_window, toy_fr_bundle):
    """A beam tree that appears takes the hidden contrast panel's room; shown later, the panel gets a share back
    (it opened at zero width: Ctrl+click seemed to do nothing)."""
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    controls = tab.controls
    for strategy in ("beam", "greedy"):
        controls.strategy.setCurrentText(strategy)
        controls.source.returnPressed.emit()
        beam = strategy == "beam"
        qtbot.waitUntil(lambda beam=beam: (window.explore.trace.beam is not None) == beam, timeout=30000)
    panels = tab.side
    assert panels.sizes()[panels.indexOf(tab.contrast)] == 0  # taken by the beam while hidden
    window.explore.go_to_step(2)
    candidates = tab.candidates
    other = next(i for i, token in enumerate(candidates.token_ids) if int(token) != candidates.chosen_id)
    point = candidates.getPlotItem().vb.mapViewToScene(__import__("PySide6.QtCore").QtCore.QPointF(0.01, other))
    click = SimpleNamespace(scenePos=lambda: point, modifiers=lambda: Qt.ControlModifier, button=lambda: Qt.LeftButton)
    with qtbot.waitSignal(tab.measures.contrast_ready, timeout=60000):
        candidates._on_clicked(click)
    total = sum(panels.sizes())
    qtbot.waitUntil(lambda: panels.sizes()[panels.indexOf(tab.contrast)] >= int(total * 0.35), timeout=5000)
    assert tab.contrast.width() > 100


def test_a_layer_wide_measure_is_titled_all_heads_and_its_source_share_follows_the_layer(qtbot, open_window, toy_fr_bundle):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))
    tab.views.setCurrentWidget(tab.grid)
    choose(qtbot, tab, "alti+")
    box = tab.choices.head_box
    assert [box.itemText(i) for i in range(box.count())] == ["all heads"]  # no per-head choices or aggregates
    assert [title for _, title in tab.grid._drawn[1]] == ["all heads"]
    n_layers = tab.shown.cross.shape[0]
    assert [title for _, title in tab.grid._drawn[0]] == [f"layer {layer + 1}" for layer in range(n_layers)]
    titles = []
    for layer in range(n_layers):  # through layer N: that layer's rollout, not the last one's
        tab.choices.layer_box.setValue(layer + 1)
        share = float(tab.shown.cross[layer, 0, -1].sum())
        assert f": {share:.0%} source, {1 - share:.0%} target prefix" in tab.focus._title
        titles.append(tab.focus._title)
    assert float(tab.shown.cross[-1, 0, -1].sum()) == pytest.approx(float(tab.shown.source_share[-1]), abs=1e-6)
    tab.measure_box.set_measure("attention")  # the weights again: every head and the aggregates
    qtbot.waitUntil(lambda: tab.shown is not None and tab.shown.measure == "", timeout=60000)
    assert [box.itemText(i) for i in range(box.count())][:2] == ["head 1", "head 2"]
    assert [title for _, title in tab.grid._drawn[1]][0] == "head 1"
