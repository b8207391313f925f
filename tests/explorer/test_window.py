"""The main window (offscreen): models open, fail and persist; the Train tab's buttons reach the training controller
and its progress, curves, validations and messages reach the tab, and closing mid-training stops it. What training
itself does (stages, pause, resume, stop, keep, discard, bad corpora): tests/explorer/controllers/."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from tests.conftest import saved_model
from tests.explorer.gui_helpers import close_window


def test_window_opens_empty_and_says_how_to_get_a_model(window):
    assert window.isVisible()
    assert "Open model" in window.model_label.text() and "Train" in window.model_label.text()
    assert "Device:" in window.device_label.text()
    assert not window.save_action.isEnabled()


def test_open_a_model_names_it_in_the_status_bar_and_remembers_it(qtbot, tmp_path, open_window, copy_bundle):
    bundle, _ = copy_bundle
    path = saved_model(bundle, tmp_path)
    window = open_window()
    window.open_model(str(path))
    qtbot.waitUntil(lambda: window.explore.bundle is not None, timeout=10000)
    text = window.model_label.text()
    assert "copy" in text and "2+2 layers" in text and "d_model 32" in text and "parameters" in text
    assert str(path.resolve()) in window.recent_models()
    assert [a.text() for a in window.recent_menu.actions()] == [str(path.resolve())]
    assert window.save_action.isEnabled()
    out = tmp_path / "saved as.safetensors"
    assert window.save_model(str(out)) and out.exists()
    close_window(window)
    # settings persist: a new window restores the recent list and the last tab
    again = open_window()
    assert str(out.resolve()) == again.recent_models()[0]


def test_a_bad_model_file_gets_a_message_and_the_model_stays(qtbot, tmp_path, open_window, copy_bundle):
    bundle, _ = copy_bundle
    window = open_window(bundle)
    bad = tmp_path / "broken.safetensors"
    bad.write_bytes(b"\x00\x01not a model at all")
    window.open_model(str(bad))
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=10000)
    message = window.error_box.text()
    assert window.error_box.windowTitle() == "Could not open the model"
    assert "broken.safetensors" in message and "not a Transformer Explorer model" in message
    assert "still open" in message
    assert window.explore.bundle is bundle
    window.error_box.close()
    window.open_model(str(tmp_path / "missing.safetensors"))
    qtbot.waitUntil(lambda: "no such file" in window.error_box.text(), timeout=10000)
    assert window.explore.bundle is bundle


def test_dropping_a_checkpoint_opens_it(qtbot, tmp_path, window, copy_bundle):
    from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    path = saved_model(copy_bundle[0], tmp_path, "dropped.safetensors")
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPoint(10, 10), Qt.CopyAction, data, Qt.LeftButton, Qt.NoModifier)
    window.dropEvent(event)
    qtbot.waitUntil(lambda: window.explore.bundle is not None, timeout=10000)
    assert "dropped.safetensors" in window.model_label.text()


def _tiny_training(form, epochs=2, corpus_size=400):
    form.corpus.setCurrentText("copy")  # from code: the preview follows
    assert "Copy a sequence of symbols" in form.corpus_info.text()
    form.corpus_size.setValue(corpus_size)
    for box, value in (
        (form.encoder_layers, 1),
        (form.decoder_layers, 1),
        (form.d_model, 32),
        (form.heads, 2),
        (form.d_ff, 64),
        (form.vocab_size, 100),
        (form.epochs, epochs),
        (form.batch_size, 16),
        (form.warmup, 50),
        (form.max_steps, 0),
        (form.max_minutes, 0),
        (form.valid_every, 0),
    ):
        box.setValue(value)


def test_training_buttons_reach_the_run_and_its_progress_reaches_the_tab(qtbot, window):
    """The wiring: Start, Pause, Resume and Stop & keep reach the training controller, its progress reaches the curves,
    the bar and the line, and the kept model becomes the active one. What the run does (no step while paused, going on
    after Resume, the model kept): tests/explorer/controllers/test_training_controller.py."""
    tab = window.training_tab
    _tiny_training(tab.form, epochs=200, corpus_size=2000)
    assert "pairs" in tab.form.corpus_info.text() and tab.form.samples.rowCount() > 0
    reported = []
    window.controllers.training.progress.connect(reported.append)
    tab.start_button.click()
    assert tab.is_training() and not tab.start_button.isEnabled() and not tab.form.isEnabled()
    qtbot.waitUntil(lambda: tab.last_progress is not None and tab.last_progress.step >= 5, timeout=60000)
    tab.curves.flush()
    steps, losses = tab.curves.series("train_loss")
    assert list(steps) == [p.step for p in reported] and list(losses) == [p.train_loss for p in reported]
    assert tab.last_progress is reported[-1]
    assert "tokens/s" in tab.progress_label.text() and "ETA" in tab.progress_bar.format()
    assert tab.progress_bar.value() == int(1000 * tab.last_progress.fraction)

    tab.pause_button.click()
    assert tab.is_paused() and window.controllers.training.paused
    assert tab.resume_button.isEnabled() and not tab.pause_button.isEnabled()
    assert tab.progress_label.text().endswith(" — paused")
    tab.resume_button.click()
    assert not tab.is_paused() and tab.is_training() and tab.pause_button.isEnabled() and not tab.resume_button.isEnabled()

    with qtbot.waitSignal(tab.trained, timeout=30000) as trained:
        tab.keep_button.click()
    assert trained.args[0] is window.explore.bundle
    qtbot.waitUntil(lambda: not tab.is_training() and tab.start_button.isEnabled(), timeout=10000)
    assert "stopped" in tab.progress_label.text() and not tab.cancel_button.isEnabled()
    assert "copy" in window.model_label.text() and "unsaved" in window.model_label.text()


def test_training_to_the_end_makes_the_model_active_and_cancel_discards(qtbot, window):
    """The validations reach the curves and the samples; the model trained becomes the active one, a cancelled run
    keeps it. (The run's validations and outcome: tests/explorer/controllers/test_training_controller.py.)"""
    tab = window.training_tab
    _tiny_training(tab.form, epochs=2)
    with qtbot.waitSignal(tab.trained, timeout=120000):
        tab.start_button.click()
    assert len(tab.validations) == 2 and "finished" in tab.progress_label.text()
    assert tab.progress_bar.value() == 1000
    tab.curves.flush()
    assert list(tab.curves.series("bleu")[1]) == pytest.approx([v.scores.bleu for v in tab.validations], nan_ok=True)
    assert tab.samples.rowCount() == len(tab.validations[-1].scores.samples) > 0
    trained = window.explore.bundle
    assert trained is not None and window.explore.has_unsaved_training()
    # a second run, cancelled: the first model stays
    qtbot.waitUntil(tab.start_button.isEnabled, timeout=10000)
    _tiny_training(tab.form, epochs=200, corpus_size=2000)
    tab.start_button.click()
    qtbot.waitUntil(lambda: tab.last_progress is not None, timeout=60000)
    tab.cancel_button.click()
    qtbot.waitUntil(lambda: not tab.is_training(), timeout=30000)
    assert window.explore.bundle is trained and "nothing was kept" in tab.progress_label.text()


def test_closing_mid_training_stops_the_worker(qtbot, window):
    tab = window.training_tab
    _tiny_training(tab.form, epochs=500, corpus_size=2000)
    tab.start_button.click()
    qtbot.waitUntil(lambda: tab.last_progress is not None, timeout=60000)
    thread = window.runner.current("training").thread
    finished = []
    tab.training.finished.connect(finished.append)
    assert window.close()
    assert not thread.is_alive() and not window.controllers.training.running
    QApplication.processEvents()  # what the job had sent before it ended is dropped: the window has closed
    assert finished == []


def test_a_bad_corpus_and_a_bad_config_get_messages(qtbot, tmp_path, window):
    """The wiring: the training controller's messages about a bad corpus reach the form, an error box and the progress
    line; the form refuses a configuration before Start. (The messages themselves:
    tests/explorer/controllers/test_training_controller.py.)"""
    tab = window.training_tab
    said = []
    window.controllers.training.corpus_failed.connect(lambda text: said.append(("corpus", text)))
    window.controllers.training.failed.connect(lambda text: said.append(("training", text)))
    bad = tmp_path / "pairs.tsv"
    bad.write_text("hello\tbonjour\nno tab on this line\n", encoding="utf-8")
    with qtbot.waitSignal(tab.form.corpus_error, timeout=10000) as error:
        tab.form.set_corpus_file(str(bad))
    [(_, why)] = said
    assert said == [("corpus", why)] and error.args == [why]
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=5000)
    assert window.error_box.windowTitle() == "Training failed" and window.error_box.text() == why
    assert tab.form.corpus_info.text() == f"<b>Cannot use this corpus:</b> {why}"
    window.error_box.close()
    window.error_box = None
    # starting anyway: the worker reports the same problem, the app keeps running
    _tiny_training(tab.form)
    tab.form.set_corpus_file(str(bad))
    qtbot.waitUntil(lambda: len(said) == 2, timeout=10000)  # the preview read it again
    tab.start_button.click()
    # the failure is reported from the worker thread; Start comes back once the thread's end reaches the window
    qtbot.waitUntil(lambda: not tab.is_training() and tab.start_button.isEnabled() and len(said) == 3, timeout=30000)
    assert said[2] == ("training", why) and tab.progress_label.text() == f"Training failed: {why}"
    tab.form.corpus.setCurrentText("copy")
    tab.form.heads.setValue(3)  # 32 is not a multiple of 3
    tab.start_button.click()
    qtbot.waitUntil(lambda: window.error_box is not None and "multiple" in window.error_box.text(), timeout=5000)
    assert not tab.is_training() and len(said) == 3  # refused by the form: nothing reached the controller


def test_many_qt_calls_do_not_exhaust_none(window):
    """PySide6 6.12 on Python 3.11 drops a reference to None per void call; the app's guard keeps
    None alive (on 3.12+ None is immortal and the guard stays off)."""
    import sys

    from PySide6.QtGui import QColor

    from explorer.app import leaks_none
    from explorer.runtime import protect_none

    active = protect_none(leaks_none)
    assert not active or (sys.version_info < (3, 12) and sys.getrefcount(None) > 1 << 39)
    colour = QColor(0, 0, 0)
    for _ in range(50000):  # far more than None's ordinary reference count
        colour.setAlphaF(0.5)
    assert abs(colour.alphaF() - 0.5) < 1e-3


def test_collector_paused_freezes_what_was_built_and_always_turns_collection_back_on():
    import gc

    import pytest

    from explorer.runtime import collector_paused

    assert gc.isenabled()
    before = gc.get_freeze_count()
    with collector_paused():
        assert not gc.isenabled()
        built = [[index] for index in range(1000)]  # stands for the corpus: lives on after building
    assert gc.isenabled() and gc.get_freeze_count() >= before + len(built)
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("bad corpus")
    assert gc.isenabled()
    gc.unfreeze()


def test_training_curves_draw_a_light_cached_grid(qtbot):
    from explorer.widgets.training_curves import TrainingCurves

    curves = TrainingCurves()
    qtbot.addWidget(curves)
    for plot in (curves.loss_plot, curves.accuracy_plot, curves.rate_plot, curves.bleu_plot):
        for side in ("left", "bottom"):
            axis = plot.getAxis(side)
            assert axis.grid and axis.style["maxTickLevel"] == 1
            assert axis.cacheMode() == axis.CacheMode.DeviceCoordinateCache
    from model.training.trainer import Progress

    curves.add_progress(
        Progress(
            step=1,
            epoch=1,
            train_loss=5.0,
            token_accuracy=0.1,
            learning_rate=1e-4,
            tokens_per_second=0.0,
            eta_seconds=0.0,
            fraction=0.0,
            elapsed_seconds=0.0,
        )
    )
    curves.flush()
    x, y = curves.series("train_loss")
    assert list(x) == [1.0] and list(y) == [5.0]


def test_positional_and_train_tabs_are_built_when_first_shown(window, copy_bundle):
    bundle, _ = copy_bundle
    window.explore.set_model(bundle)
    assert set(window._built_tabs) == {0}  # only Explore at start-up
    assert not window.is_training()
    window.tabs.setCurrentIndex(2)  # as a click on "Train" does
    assert set(window._built_tabs) == {0, 2}
    assert window.tabs.currentWidget() is window.training_tab and window.tabs.currentIndex() == 2
    assert window.training_tab.start_button.isEnabled()
    assert "Train" in window.tabs.tabText(2) and window.tabs.tabToolTip(2)
    positional = window.positional_tab  # asking for it builds it too, already showing the open model
    assert window.tabs.indexOf(positional) == 1 and window.tabs.currentIndex() == 2
    assert positional.explore.bundle is bundle and positional.summary.text()


def test_choosing_a_corpus_file_and_cancelling_the_dialog(qtbot, tmp_path, window, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from explorer.tabs.training_form import TSV_CHOICE

    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("".join(f"the cat {i}\tle chat {i}\n" for i in range(40)), encoding="utf-8")
    form = window.training_tab.form
    answers = [(str(corpus), ""), ("", "")]  # the user picks the file, then cancels the next dialog
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: answers.pop(0))
    form.corpus.setCurrentText(TSV_CHOICE)
    form.corpus.activated.emit(form.corpus.currentIndex())
    qtbot.waitUntil(lambda: "40 pairs" in form.corpus_info.text(), timeout=10000)
    assert form.samples.item(0, 0).text().startswith("the cat") and form.corpus_paths == (str(corpus), None)
    form.corpus.activated.emit(form.corpus.currentIndex())  # the file entry again; the dialog is cancelled
    assert form.corpus.currentIndex() == 0 and form.corpus.currentText() != TSV_CHOICE
    assert "generated from seed" in form.corpus_info.text()  # the built-in corpus it fell back to


def test_a_status_message_has_the_line_while_it_shows_then_the_model_comes_back(qtbot, window):
    """The model's description (a permanent widget that stretches) left temporary messages no width at all: an
    export's "Exported …" could not be seen."""
    bar = window.statusBar()
    bar.showMessage("Exported /tmp/figure.png", 200)
    assert window.model_label.isHidden() and bar.currentMessage() == "Exported /tmp/figure.png"
    qtbot.waitUntil(lambda: bar.currentMessage() == "", timeout=5000)
    assert not window.model_label.isHidden()
