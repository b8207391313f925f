"""Fixes found by new users (offscreen): the positional tab's colour scales, legends, tick steps, Rₖ and
the Dimensions box's message; the window keeping its width while training; the Explore tab swapping
a sentence the new model cannot read for one it can; asking before an unsaved trained model is replaced."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

from explorer.tabs.explore.tab import EXAMPLE_SENTENCE
from model.io import checkpoint
from tests.conftest import saved_model, tiny_bundle


def settle(window, rounds: int = 5) -> None:
    for _ in range(rounds):
        QApplication.processEvents()


# --- 1. the positional-encoding tab ---------------------------------------------------------------
@pytest.fixture
def positional(open_window, copy_bundle):
    window = open_window(copy_bundle[0])
    window.tabs.setCurrentIndex(1)
    settle(window)
    return window, window.positional_tab


def test_all_positive_similarity_gets_a_sequential_scale_and_the_table_a_diverging_one(positional):
    _window, tab = positional
    similarity, table = tab.report.similarity, tab.report.table
    assert similarity.min() > 0  # sinusoidal, d_model 32, 64 positions: every dot product is positive
    low, high = tab.similarity_view.color_bar.levels()
    assert low == pytest.approx(float(similarity.min())) and high == pytest.approx(float(similarity.max()))
    assert tab.similarity_view.color_bar.colorMap().name == "viridis"
    assert table.min() < 0 < table.max()
    limit = float(np.abs(table).max())
    assert tab.table_view.color_bar.levels() == pytest.approx((-limit, limit))
    assert tab.table_view.color_bar.colorMap().name == "CET-D1"
    from explorer.tabs.positional_tab import colour_scale

    assert colour_scale(np.array([[-1.0, 3.0]])) == ((-3.0, 3.0), "CET-D1")
    assert colour_scale(np.array([[2.0, 3.0]])) == ((2.0, 3.0), "viridis")


def test_learned_positions_with_both_signs_keep_the_diverging_scale(open_window):
    bundle, _ = tiny_bundle("copy", size=200, positional_encoding="learned")
    window = open_window(bundle)
    tab = window.positional_tab
    similarity = tab.report.similarity
    assert tab.report.kind == "learned" and similarity.min() < 0 < similarity.max()
    limit = float(np.abs(similarity).max())
    assert tab.similarity_view.color_bar.levels() == pytest.approx((-limit, limit))
    assert tab.similarity_view.color_bar.colorMap().name == "CET-D1"


def test_legends_sit_below_the_plots_and_name_rk_with_a_subscript(positional):
    _window, tab = positional
    for plot, names in (
        (tab.curves, ["dim 0", "dim 1", "dim 8", "dim 9"]),
        (tab.rotation, ["after rotation Rₖ", "without rotation"]),
    ):
        assert plot.getPlotItem().legend is None  # nothing floats over the curves
        assert plot.legend_names() == names and plot.legend.isVisible()
        for name in names:
            assert name in plot.legend.text()
        data_area = plot.getPlotItem().vb.sceneBoundingRect()
        plot_bottom = plot.plot_widget.mapTo(plot, plot.plot_widget.mapFromScene(data_area.bottomLeft())).y()
        assert plot.legend.geometry().top() >= plot_bottom
        assert not plot.legend.geometry().intersects(plot.plot_widget.geometry())
    title = tab.rotation.getPlotItem().titleLabel.text
    assert "Rₖ" in title and "R_k" not in title


def _major_spacing(axis, view_range) -> float:
    size = axis.width() if axis.orientation in ("left", "right") else axis.height()
    return axis.tickValues(view_range[0], view_range[1], max(size, 100))[0][0]


def _heatmap_step(view, side: str) -> int:
    ticks = view.plot.getAxis(side)._tickLevels[0]
    return int(ticks[1][0] - ticks[0][0])


def test_tick_steps_stay_the_same_when_positions_or_dimensions_change(positional):
    _window, tab = positional
    plot = tab.curves.getPlotItem()
    seen = []
    for positions, dimensions in ((64, "0, 1"), (60, "15"), (50, "0, 1, 8, 9"), (64, "14, 15")):
        tab.positions.setValue(positions)
        tab.dimensions.setText(dimensions)
        tab.dimensions.editingFinished.emit()
        settle(tab)
        x_range, y_range = plot.viewRange()
        seen.append(
            (
                _heatmap_step(tab.table_view, "left"),
                _heatmap_step(tab.table_view, "top"),
                _heatmap_step(tab.similarity_view, "top"),
                _major_spacing(plot.getAxis("bottom"), x_range),
                _major_spacing(plot.getAxis("left"), y_range),
                tuple(np.round(y_range, 6)),
            )
        )
        labels = [label for _, label in tab.table_view.plot.getAxis("left")._tickLevels[0]]
        assert labels[:3] == ["0", "10", "20"]
    assert seen[0][:5] == (10, 5, 10, 10, 0.5)
    assert all(entry == seen[0] for entry in seen)  # same steps, same value axis: only the curves change
    from explorer.tabs.positional_tab import nice_step

    assert [nice_step(span) for span in (7, 30, 64, 130, 4095)] == [1, 5, 10, 20, 1000]


def test_invalid_dimensions_are_named_and_the_valid_ones_still_drawn(positional):
    _window, tab = positional
    tab.dimensions.setText("0, 500, abc, 1, 0, -2")
    tab.dimensions.editingFinished.emit()
    assert tab.curves.legend_names() == ["dim 0", "dim 1"]
    assert len(tab.curves.getPlotItem().listDataItems()) == 2
    message = tab.dimensions_error.text()
    assert tab.dimensions_error.isVisible() and "border" in tab.dimensions.styleSheet()
    for part in ("500 is out of range 0..31", "“abc” is not a number", "0 is a duplicate", "-2 is out of range"):
        assert part in message
    tab.dimensions.setText(", ".join(str(d) for d in range(14)))
    tab.dimensions.editingFinished.emit()
    assert len(tab.curves.legend_names()) == 12 and "at most 12" in tab.dimensions_error.text()
    assert "12" in tab.dimensions_error.text() and "13" in tab.dimensions_error.text()
    tab.dimensions.setText("3; 4")
    tab.dimensions.editingFinished.emit()
    assert tab.curves.legend_names() == ["dim 3", "dim 4"]
    assert not tab.dimensions_error.isVisible() and tab.dimensions.styleSheet() == ""
    from explorer.tabs.positional_tab import parse_dimensions

    assert parse_dimensions("7, x", 8) == ([7], ["“x” is not a number"])


# --- 2. the window keeps its width ------------------------------------------------------------------
def _tiny_training(form) -> None:
    form.corpus.setCurrentText("copy")
    form.corpus_size.setValue(400)
    for box, value in (
        (form.encoder_layers, 1),
        (form.decoder_layers, 1),
        (form.d_model, 32),
        (form.heads, 2),
        (form.d_ff, 64),
        (form.vocab_size, 100),
        (form.epochs, 1),
        (form.batch_size, 16),
        (form.warmup, 50),
        (form.max_steps, 0),
        (form.max_minutes, 0),
        (form.valid_every, 0),
    ):
        box.setValue(value)


def test_the_window_keeps_its_width_while_training_and_with_long_progress_texts(qtbot, window):
    window.tabs.setCurrentIndex(2)
    tab = window.training_tab
    settle(window)
    width = window.width()
    _tiny_training(tab.form)
    with qtbot.waitSignal(tab.trained, timeout=120000):
        tab.start_button.click()
    settle(window)
    assert window.width() == width and "finished" in tab.progress_label.text()
    long_model = "/home/someone/corpora/" + "a-long-folder-name/" * 6 + "pairs.tsv: 6+6 layers x 8 heads, d_model 512"
    from model.training.run import Prepared
    from model.training.trainer import Progress

    tab._on_prepared(Prepared(train=1234567, valid=65432, test=65432, skipped_lines=12, model=long_model, device="CPU"))
    settle(window)
    assert window.width() == width and long_model in tab.samples_label.text()
    tab._on_progress(
        Progress(
            epoch=123,
            step=12345678,
            train_loss=1.2345,
            token_accuracy=0.5,
            learning_rate=1.5e-4,
            tokens_per_second=12345678.0,
            elapsed_seconds=360000.0,
            eta_seconds=720000.0,
            fraction=0.3,
        )
    )
    qtbot.waitUntil(lambda: "12,345,678 tokens/s" in tab.progress_label.text(), timeout=2000)  # within the refresh
    settle(window)
    assert window.width() == width and "12,345,678 tokens/s" in tab.progress_label.text()
    assert tab.progress_label.heightForWidth(300) > tab.progress_label.fontMetrics().height()  # it wraps
    tab._on_status(f"Loading {long_model} and training tokenizers…")
    settle(window)
    assert window.width() == width
    # a second run while the first model is unsaved asks first (Save / Discard / Cancel); Discard starts it
    asked = []
    window.ask_to_keep_trained_model = lambda what: asked.append(what) or QMessageBox.Discard
    assert window.explore.has_unsaved_training()
    tab.form.epochs.setValue(500)
    tab.start_button.click()
    assert asked == ["The model this training makes will replace it."] and tab.is_training()
    tab.cancel_button.click()
    qtbot.waitUntil(lambda: not tab.is_training(), timeout=60000)
    window.ask_to_keep_trained_model = lambda *_: QMessageBox.Discard  # quitting asks (tested below)


# --- 3. a sentence the new model cannot read -------------------------------------------------------
# Which sentence each model gets, and why: tests/explorer/controllers/test_examples_controller.py. Here: what the
# Explore controller says reaches the Source field, the hint and the status bar.
def _explore_with(open_window, bundle):
    """A window whose Explore tab shows its example sentence, then ``bundle`` opened; what the controller said."""
    window = open_window()
    tab = window.explore_tab
    assert tab.controls.source.text() == EXAMPLE_SENTENCE and window.explore.text == EXAMPLE_SENTENCE
    said = []
    window.explore.text_replaced.connect(lambda text, why: said.append((text, why)))
    window.explore.message.connect(said.append)
    window.explore.set_model(bundle)
    return window, tab, said


def test_a_model_of_another_language_gets_a_sentence_of_its_corpus(open_window, russian_bundle):
    bundle, _corpus, lines = russian_bundle
    window, tab, said = _explore_with(open_window, bundle)
    [(sentence, why), message] = said
    assert sentence == lines[0][0] == window.explore.text and tab.controls.source.text() == sentence
    assert not tab.hint.isHidden() and tab.hint.text() == why
    assert window.statusBar().currentMessage() == message
    assert tab.source_tokens.tokens == window.explore.trace.source_tokens


def test_a_builtin_symbol_model_gets_a_generated_example_and_a_readable_sentence_stays(open_window, toy_fr_bundle):
    bundle, _ = tiny_bundle("copy", size=200)
    window, tab, said = _explore_with(open_window, bundle)
    [(sentence, why), _message] = said
    assert tab.controls.source.text() == sentence and tab.hint.text() == why and not tab.hint.isHidden()
    tab.controls.source.setText(EXAMPLE_SENTENCE)  # typed, not translated: the model decodes what it decoded
    said.clear()
    window.explore.set_model(toy_fr_bundle[0])  # toy-fr reads that sentence: nothing is replaced, the hint goes
    assert said == [] and tab.controls.source.text() == EXAMPLE_SENTENCE and tab.hint.isHidden()


# --- 4. an unsaved trained model is not discarded without asking -----------------------------------
@pytest.fixture
def trained_window(tmp_path, window):
    trained, _ = tiny_bundle("copy", size=200)
    window.training_tab.trained.emit(trained)  # as when a training run finishes
    other = saved_model(tiny_bundle("reverse", size=200)[0], tmp_path, "other.safetensors")
    asked = []
    answers = []
    window.ask_to_keep_trained_model = lambda *_: asked.append(True) or (answers.pop(0) if answers else QMessageBox.Discard)
    assert window.explore.bundle is trained
    yield window, trained, other, asked, answers
    window.ask_to_keep_trained_model = lambda *_: QMessageBox.Discard


def test_quitting_asks_too_and_cancel_keeps_the_window_open(trained_window):
    window, trained, _other, asked, answers = trained_window
    answers.append(QMessageBox.Cancel)
    assert not window.close()
    assert asked == [True] and window.isVisible() and window.explore.bundle is trained


def test_cancel_keeps_the_trained_model_and_opens_nothing(trained_window):
    from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    window, trained, other, asked, answers = trained_window
    answers.append(QMessageBox.Cancel)
    window.open_model(str(other))
    assert asked == [True] and not window.is_opening() and window.explore.bundle is trained
    answers.append(QMessageBox.Cancel)  # dropping a file asks the same
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(other))])
    window.dropEvent(QDropEvent(QPoint(10, 10), Qt.CopyAction, data, Qt.LeftButton, Qt.NoModifier))
    assert len(asked) == 2 and not window.is_opening() and window.explore.bundle is trained


def test_discard_opens_the_other_model(qtbot, trained_window):
    window, trained, other, asked, answers = trained_window
    assert window.explore.has_unsaved_training()
    answers.append(QMessageBox.Discard)
    window.open_model(str(other))
    qtbot.waitUntil(lambda: window.explore.bundle is not trained, timeout=10000)
    assert asked == [True] and window.explore.bundle.path == str(other)
    assert not window.explore.has_unsaved_training()
    window.open_model(str(other))  # a model opened from a file is not asked about
    assert asked == [True]
    qtbot.waitUntil(lambda: not window.is_opening(), timeout=10000)


def test_save_runs_the_dialog_and_opens_only_once_saved(qtbot, tmp_path, trained_window, monkeypatch):
    window, trained, other, asked, answers = trained_window
    chosen = [("", ""), (str(tmp_path / "kept.safetensors"), "")]  # first cancelled, then a file
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: chosen.pop(0))
    answers.append(QMessageBox.Save)
    window.open_model(str(other))
    assert not window.is_opening() and window.explore.bundle is trained and trained.path is None
    answers.append(QMessageBox.Save)
    window.open_model(str(other))
    assert trained.path == str(tmp_path / "kept.safetensors")
    kept = checkpoint.load(tmp_path / "kept.safetensors")
    assert kept.config == trained.config and kept.corpus.name == "copy"
    qtbot.waitUntil(lambda: window.explore.bundle is not trained, timeout=10000)
    assert window.explore.bundle.path == str(other) and len(asked) == 2


def test_training_another_model_asks_first_and_cancel_starts_nothing(qtbot, trained_window):
    window, trained, _other, asked, answers = trained_window
    tab = window.training_tab
    answers.append(QMessageBox.Cancel)
    tab.start_button.click()
    assert asked == [True] and not tab.is_training() and window.explore.bundle is trained
    answers.append(QMessageBox.Discard)
    tab.start_button.click()
    assert len(asked) == 2 and tab.is_training()
    window.controllers.training.stop(keep=False)
    qtbot.waitUntil(lambda: not tab.is_training(), timeout=30000)
    assert window.explore.bundle is trained  # nothing replaced it: the run was stopped without keeping
