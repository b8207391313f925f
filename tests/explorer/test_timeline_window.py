"""The timeline in the window, on the copy run's snapshots (tests/model/timeline/recorded.py) given as the model's
timeline: the bar shows for a model that has one and not for one that has none, the slider re-decodes the sentence
and every view follows with the snapshot named (the sentence, step, kind, layer and head kept), Play then Pause, the
difference of two snapshots (of one against itself all zero, the colour bar symmetric), two snapshots side by side,
the curves view (a phase change clicked moves the slider) and every export over training. What the controllers
decide: tests/explorer/controllers/test_timeline_controller.py."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PySide6.QtWidgets import QFileDialog

from explorer.controllers.timeline import SIDE_BY_SIDE
from explorer.widgets.heatmap import DIVERGING
from model.io import checkpoint
from model.kinds import AttentionKind
from model.provenance.embed import read_record
from tests.conftest import pdf_pages, png_size, svg_root
from tests.explorer.gui_helpers import explore_window
from tests.model.timeline.helpers import record
from tests.model.timeline.recorded import copy_timeline

SENTENCE = "a b c d e f"
WAIT_MS = 60000


def settle(qtbot, window) -> None:
    qtbot.waitUntil(lambda: not window.controllers.timeline.running, timeout=WAIT_MS)


def open_timeline_window(qtbot, open_window, settled: bool = False):
    """(window, Explore tab, the copy run's timeline): its final model open with SENTENCE translated, the bar shown
    (``settled``: and the timeline's background work done)."""
    source = copy_timeline()[0]
    window = open_window()
    window.controllers.timeline.find = lambda bundle: source if bundle is source.bundle else None
    window.explore.set_model(source.bundle)
    tab = window.explore_tab
    tab.controls.source.setText(SENTENCE)
    tab.controls.source.returnPressed.emit()
    timeline = window.controllers.timeline
    qtbot.waitUntil(lambda: tab.over_training.bar.isVisible() and not (settled and timeline.running), timeout=WAIT_MS)
    return window, tab, source


@pytest.fixture
def timeline_window(qtbot, open_window):
    """(window, Explore tab, the copy run's timeline): its final model open with SENTENCE translated, the bar shown."""
    return open_timeline_window(qtbot, open_window)


def choose_comparison(bar, index: int | None, mode: str = "difference") -> None:
    """What choosing in the bar's two boxes does."""
    bar.mode_box.setCurrentIndex(bar.mode_box.findData(mode))
    position = bar.compare_box.findData(index) if index is not None else 0
    bar.compare_box.setCurrentIndex(position)
    bar.compare_box.activated.emit(position)


def test_a_model_without_a_timeline_shows_no_bar(qtbot, open_window, copy_bundle):
    window, tab = explore_window(open_window, copy_bundle[0], SENTENCE)
    qtbot.waitUntil(lambda: not window.controllers.timeline.running, timeout=WAIT_MS)
    assert not tab.over_training.bar.isVisible() and tab.views.indexOf(tab.over_training.curves_view) < 0
    assert window.explore.snapshot == "" and "<br>" not in tab.focus._title


def test_the_slider_redecodes_and_every_view_follows(qtbot, timeline_window):
    window, tab, source = timeline_window
    bar, explore = tab.over_training.bar, window.explore
    assert bar.slider.maximum() == 7 and bar.slider.value() == 7 and bar.name.text() == "step 500 of 500 (the model as opened)"
    assert tab.views.tabText(tab.views.count() - 1) == "Over training"
    tab.views.setCurrentWidget(tab.grid)
    tab.grid.cell_clicked.emit(0, 1)  # the user's head
    explore.go_to_step(3)
    final = explore.trace
    bar.slider.setValue(5)  # what a drag does at each position it passes
    settle(qtbot, window)
    assert explore.snapshot == "step 177 of 500" and bar.name.text() == "step 177 of 500"
    assert "training loss" in bar.details.text() and "Snapshot 5 of 0–7" in bar.details.text()
    assert tab.controls.source.text() == SENTENCE and explore.text == SENTENCE and explore.current_step == 3
    assert (tab.state.layer, tab.state.head) == (0, 1) and tab.current_kind() is AttentionKind.CROSS
    assert tab.focus._title.endswith("<br>step 177") and tab.grid.title == "step 177 of 500"
    np.testing.assert_array_equal(tab.grid.weights, explore.trace.cross)
    assert not np.allclose(tab.grid.weights, final.cross)
    assert tab.focus.values.shape == (3, len(explore.trace.source_tokens))
    tab.views.setCurrentWidget(tab.head_table)  # the heads table and roles of this snapshot
    assert tab.head_table.rowCount() == 2
    tab.views.setCurrentWidget(tab.lines)
    assert tab.lines.weights.shape[:2] == (2, 3)  # layer 1's two heads, three steps
    shown = tab.candidates.probabilities  # this snapshot's candidates for step 3
    assert len(shown) and np.allclose(shown, explore.trace.candidate_probabilities[-1][: len(shown)])
    assert not np.allclose(shown, final.candidate_probabilities[-1][: len(shown)])
    assert tab.exports.request("focus").figure.model_name == "unsaved model, step 177 of 500"
    positional = window.positional_tab
    assert positional.snapshot.text().endswith("step 177 of 500")
    bar.slider.setValue(7)
    settle(qtbot, window)
    assert explore.bundle is source.bundle and explore.current_step == 3
    bar.names[-1] = "step 500 of 500 (final: the weights of step 400)"  # a kept best validation: one parenthesis
    bar.show_snapshot(7, "")
    assert bar.name.text() == "step 500 of 500 (final: the weights of step 400; the model as opened)"


def test_play_then_pause(qtbot, timeline_window):
    window, tab, _source = timeline_window
    bar, line = tab.over_training.bar, window.controllers.timeline
    bar.timer.setInterval(30)
    bar.play_button.click()
    assert line.playing and bar.play_button.text() == "Pause" and bar.timer.isActive()
    qtbot.waitUntil(lambda: bar.slider.value() >= 3, timeout=WAIT_MS)
    bar.play_button.click()
    settle(qtbot, window)
    stopped = bar.slider.value()
    assert not line.playing and not bar.timer.isActive() and bar.play_button.text() == "Play"
    qtbot.wait(150)
    assert bar.slider.value() == stopped and window.explore.snapshot.startswith(f"step {source_step(line, stopped)}")


def source_step(line, index: int) -> str:
    return f"{line.source.snapshots[index].step:,}"


def test_the_difference_of_two_snapshots(qtbot, timeline_window):
    window, tab, _source = timeline_window
    bar, explore = tab.over_training.bar, window.explore
    tab.views.setCurrentWidget(tab.grid)
    bar.slider.setValue(4)
    settle(qtbot, window)
    choose_comparison(bar, 4)  # a snapshot against itself
    settle(qtbot, window)
    assert np.all(tab.focus.values == 0) and np.all(tab.grid.weights == 0)
    assert tab.focus._levels == (-1.0, 1.0) and tab.focus.color_bar.colorMap().name == DIVERGING
    assert tab.focus._title.endswith("<br>step 63 − step 63") and tab.grid.title == "difference: step 63 of 500 minus step 63"
    choose_comparison(bar, 1)
    settle(qtbot, window)
    low, high = tab.focus._levels
    assert low == -high and high == pytest.approx(np.abs(tab.focus.values).max()) and high > 0.01
    assert tab.grid.levels[0] == -tab.grid.levels[1] and np.abs(tab.grid.weights).max() > 0.01
    assert tab.hint.text() == "The focus and the grid show the difference of the attention weights."
    assert tab.focus._value_label == "difference of attention weight"
    tab.colormap.setCurrentText("magma")  # the difference keeps its diverging map
    assert tab.focus.color_bar.colorMap().name == DIVERGING
    choose_comparison(bar, None)
    settle(qtbot, window)
    assert tab.focus._levels == (0.0, 1.0) and tab.focus.values.min() >= 0 and tab.grid.title == "step 63 of 500"
    assert tab.focus.color_bar.colorMap().name == "magma" and explore.snapshot == "step 63 of 500"


def test_two_snapshots_side_by_side(qtbot, timeline_window):
    window, tab, _source = timeline_window
    bar = tab.over_training.bar
    bar.slider.setValue(3)
    settle(qtbot, window)
    choose_comparison(bar, 7, SIDE_BY_SIDE)
    settle(qtbot, window)
    assert tab.views.currentWidget() is tab.compare_view
    qtbot.waitUntil(lambda: len(tab.compare_view.panels) == 2, timeout=WAIT_MS)
    headings = [heading.text() for heading in tab.compare_view.headings]
    assert "step 22 of 500" in headings[0] and "step 500 of 500" in headings[1]
    assert tab.compare_view.partner.currentText() == "snapshot 7: step 500 of 500"
    choose_comparison(bar, None)
    assert window.controllers.compare.bundle is None and tab.compare_view.partner.currentText() == "(none)"


def test_the_curves_view_and_a_phase_change_clicked(qtbot, timeline_window):
    window, tab, _source = timeline_window
    view, curves = tab.over_training.curves_view, window.controllers.curves
    tab.views.setCurrentWidget(view)
    assert not tab.focus.isVisible()  # the curves take its place
    qtbot.waitUntil(lambda: curves.curves is not None and not curves.running, timeout=WAIT_MS)  # shown: on their own
    assert not curves.curves.importance and len(view.plots) == 5  # importance only when asked
    view.importance.setChecked(True)
    view.importance_pairs.setValue(3)
    view.compute_button.click()
    qtbot.waitUntil(lambda: bool(curves.curves.importance) and not curves.running, timeout=WAIT_MS)
    assert curves.curves.importance_where == "3 fresh pairs, seed 12345" and len(view.plots) == 6
    assert view.changes.count() == len(curves.curves.phase_changes) > 0
    assert "alignment-like from" in view.onsets.text() and view.compute_button.isEnabled()
    lines = view.onsets.text().count("<br>") + 1
    assert view.onsets.height() >= lines * view.onsets.fontMetrics().lineSpacing()  # every line shown
    change = curves.curves.phase_changes[1]
    view.changes.itemClicked.emit(view.changes.item(1))
    settle(qtbot, window)
    bar = tab.over_training.bar
    assert bar.slider.value() == change.after and bar.compare_box.currentData() == change.before
    layer, head = change.heads[0]
    assert (tab.state.kind, tab.state.layer, tab.state.head) == (change.kind, layer, head)
    assert tab.views.currentWidget() is tab.grid and window.controllers.timeline.differing
    marker = view._markers[0]
    assert marker.value() == pytest.approx(np.log10(1 + curves.curves.steps[change.after]))


def test_a_phase_change_chooses_its_head_as_the_user_would(qtbot, timeline_window, copy_bundle):
    """Issue 39: a phase change of another kind than the one shown switched the views while the Attention box kept the
    old kind (and the Neuron view and the exports followed the views); the box, the views, the Neuron view and the
    exports read one choice, the Explore controller's, also after another model is opened."""
    window, tab, _source = timeline_window
    view, curves = tab.over_training.curves_view, window.controllers.curves
    tab.views.setCurrentWidget(view)
    qtbot.waitUntil(lambda: curves.curves is not None and not curves.running, timeout=WAIT_MS)
    assert tab.kind.currentData() == AttentionKind.CROSS
    position, change = next((n, c) for n, c in enumerate(curves.curves.phase_changes) if c.kind is not AttentionKind.CROSS)
    view.changes.itemClicked.emit(view.changes.item(position))
    settle(qtbot, window)
    layer, head = change.heads[0]
    chosen = window.explore.view
    assert (chosen.kind, chosen.layer, chosen.head) == (change.kind, layer, head) and tab.state == chosen
    assert tab.kind.currentData() == change.kind == tab.shown_state.kind  # the box says what is drawn
    assert tab.layer_box.value() == layer + 1 and tab.head_box.currentData() == head
    tab.views.setCurrentWidget(tab.neuron.view)
    neuron = window.controllers.neuron
    assert (neuron.kind, neuron.layer, neuron.head) == (change.kind, layer, head)
    assert tab.exports.request("focus").kind == change.kind
    window.explore.set_model(copy_bundle[0])  # another model: the box still says what the views draw
    tab.controls.source.returnPressed.emit()
    settle(qtbot, window)
    assert tab.kind.currentData() == tab.shown_state.kind == window.explore.view.kind == change.kind
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))  # the user's choice: the same one path
    assert window.explore.view.kind == tab.shown_state.kind == AttentionKind.CROSS


def test_every_export_over_training(qtbot, timeline_window, tmp_path):
    window, tab, _source = timeline_window
    over, exports = tab.over_training, window.controllers.timeline_exports
    texts = [action.text() for action in tab.exports.menu.actions() if action.menu()]
    assert texts == ["Over training"]

    def written(export, path):
        assert export(path)
        qtbot.waitUntil(lambda: not exports.running, timeout=WAIT_MS)
        assert path.exists(), window.statusBar().currentMessage()
        return path

    tab.views.setCurrentWidget(tab.grid)
    with Image.open(written(over.export_animation, tmp_path / "grid.gif")) as gif:
        assert gif.n_frames == 8 and gif.size[0] == 500
    tab.views.setCurrentWidget(tab.lines)
    assert png_size(written(over.export_strip, tmp_path / "strip.png"))[0] > 1000
    rows = list(csv.DictReader(open(written(over.export_curves, tmp_path / "curves.csv"), encoding="utf-8")))
    assert len(rows) == 8 * 3 * 2 and {row["step"] for row in rows} == {"1", "3", "8", "22", "63", "177", "250", "500"}
    assert len(pdf_pages(written(over.export_curves, tmp_path / "curves.pdf"))) == 1
    assert not over.export_difference(tmp_path / "none.svg")  # nothing compared yet: a message, no file
    choose_comparison(tab.over_training.bar, 0)
    settle(qtbot, window)
    root = svg_root(written(over.export_difference, tmp_path / "difference.svg"))
    assert "minus step 1" in "".join(root.itertext())
    # each file records the timeline command that draws it (model/provenance/); run, it writes the same record
    for name in ("grid.gif", "strip.png", "curves.csv", "difference.svg"):
        assert read_record(tmp_path / name).command[0] == "timeline"
    record = read_record(tmp_path / "strip.png")  # this model was trained here and never saved: it says so
    assert record.command[:2] == ["timeline", "--model"] and "a model not saved to a file" in record.view["not on the command line"]


def test_each_save_dialog_chooses_the_filter_of_the_name_it_proposes(qtbot, timeline_window, monkeypatch):
    """Issue 39: the strip's dialog proposed over-training.pdf with the PNG filter chosen (Qt starts on the first filter
    unless told): every export dialog over training, and the side-by-side pair's, choose the proposed suffix's."""
    window, tab, _source = timeline_window
    asked = []

    def dialog(_parent, _title, proposed, filters, selected="", *_options):
        asked.append((Path(proposed).suffix, selected or filters.split(";;")[0]))  # Qt's choice when none is given
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", dialog)
    over = tab.over_training
    for ask in (over.animation_dialog, over.strip_dialog, over.difference_dialog, lambda: over.curves_dialog(".csv")):
        ask()
    over.curves_dialog(".png")
    tab.compare_view._on_export_clicked()
    assert [suffix for suffix, _ in asked] == [".gif", ".pdf", ".pdf", ".csv", ".png", ".pdf"]
    for suffix, chosen in asked:
        assert f"*{suffix})" in chosen, (suffix, chosen)


def test_a_model_file_saved_with_its_recorded_timeline_opens_with_the_bar(qtbot, open_window, tmp_path):
    """The whole path, no fake: training records the timeline, saving writes it beside the model, opening the model
    file finds it (model.timeline.source.timeline_for) and the bar scrubs through the recorded snapshots."""
    trained = record(24, snapshots=5, valid_every=12).bundle
    checkpoint.save(trained, tmp_path / "tiny.safetensors")
    assert (tmp_path / "tiny.timeline.safetensors").is_file()
    window = open_window()
    window.open_model(str(tmp_path / "tiny.safetensors"))
    qtbot.waitUntil(lambda: window.explore.bundle is not None, timeout=WAIT_MS)
    tab = window.explore_tab
    tab.controls.source.setText(SENTENCE)
    tab.controls.source.returnPressed.emit()
    bar = tab.over_training.bar
    qtbot.waitUntil(lambda: bar.isVisible(), timeout=WAIT_MS)
    assert bar.slider.maximum() == 4 and bar.slider.value() == 4
    bar.slider.setValue(0)
    settle(qtbot, window)
    assert window.explore.snapshot.startswith("step 0") and "step 0" in tab.focus._title
