"""The Train tab's presets and expected duration, the stages of preparation on its progress line, and quitting while
the window is still loading. (The stages themselves and the step timing: tests/explorer/controllers/test_training_controller.py.)"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from model.errors import UserError
from model.training.presets import builtin_preset
from model.training.recording import DEFAULT_SNAPSHOTS


def test_each_corpus_fills_the_form_with_its_preset(window):
    form = window.training_tab.form
    form.corpus.setCurrentText("copy")
    copy = builtin_preset("copy")
    assert form.encoder_layers.value() == copy.model["n_encoder_layers"] and form.heads.value() == copy.model["n_heads"]
    assert form.max_minutes.value() == 2.0 and form.epochs.value() == 0 and form.epochs.text() == "no limit"
    assert form.lr_decay.currentText() == "linear" and form.keep_best.isChecked()
    assert "Preset</b> (copy)" in form.preset_info.text() and not form.preset_button.isEnabled()
    request = form.request()
    assert request.training.max_minutes == 2.0 and request.model_options["d_ff"] == copy.model["d_ff"]

    form.d_model.setValue(64)  # the user's change survives a change of corpus, and is listed
    form.corpus.setCurrentText("toy-fr")
    assert form.max_minutes.value() == 10.0 and form.heads.value() == 4 and form.d_model.value() == 64
    assert "Changed by you: d model" in form.preset_info.text() and form.preset_button.isEnabled()
    form.preset_button.click()
    assert form.d_model.value() == 128 and "Changed by you" not in form.preset_info.text()


def test_the_timeline_box_sets_the_snapshots_recorded(window):
    """On by default (the core's count), 0 reads "none" and records nothing, 1 is refused with the reason."""
    form = window.training_tab.form
    form.corpus.setCurrentText("copy")
    assert form.timeline.value() == DEFAULT_SNAPSHOTS and form.request().timeline.snapshots == DEFAULT_SNAPSHOTS
    form.timeline.setValue(0)
    assert form.timeline.text() == "none" and not form.request().timeline.enabled
    form.timeline.setValue(1)
    with pytest.raises(UserError, match="snapshot"):
        form.request()


def test_the_expected_duration_shows_before_start(qtbot, window):
    tab = window.training_tab
    window.tabs.setCurrentWidget(tab)
    tab.form.corpus.setCurrentText("copy")
    qtbot.waitUntil(lambda: "2m00s (the time budget; about" in tab.expected_label.text(), timeout=20000)
    assert tab.expected_label.isVisible() and "ms a step" in tab.expected_label.text()
    tab.form.max_minutes.setValue(0)
    tab.form.epochs.setValue(2)
    qtbot.waitUntil(lambda: tab.expected_label.text().startswith("Expected duration: about"), timeout=20000)
    assert "steps at" in tab.expected_label.text() and "on this machine" in tab.expected_label.text()
    tab.form.epochs.setValue(0)
    qtbot.waitUntil(lambda: "until you stop it" in tab.expected_label.text(), timeout=5000)


def test_preparation_is_shown_in_stages(qtbot, window):
    tab = window.training_tab
    form = tab.form
    form.corpus.setCurrentText("copy")
    form.corpus_size.setValue(400)
    for box, value in (
        (form.encoder_layers, 1),
        (form.decoder_layers, 1),
        (form.d_model, 32),
        (form.heads, 2),
        (form.d_ff, 64),
        (form.vocab_size, 100),
        (form.max_minutes, 0),
        (form.max_steps, 3),
    ):
        box.setValue(value)
    shown = []  # each stage the controller says, and whether the progress line shows it then (the tab hears it first)
    window.controllers.training.status.connect(lambda text: shown.append((text, tab.progress_label.text() == text)))
    tab.start_button.click()
    assert tab.progress_bar.maximum() == 0  # busy until the first step
    qtbot.waitUntil(lambda: not tab.is_training(), timeout=60000)  # the stages arrive before the end, in order
    assert len(shown) == 5 and all(on_the_line for _, on_the_line in shown), shown  # the stages: the controller's tests
    assert tab.progress_bar.maximum() == 1000


def test_ctrl_q_while_the_window_is_still_loading_quits(qtbot, open_window):
    window = open_window(build=False)  # the frame only, as the app shows it before loading PyTorch
    qtbot.waitExposed(window)
    with qtbot.waitActive(window):
        window.activateWindow()
    qtbot.keyClick(window, Qt.Key_Q, Qt.ControlModifier)
    assert not window.isVisible() and window.closed_early
    window.build()  # the app's delayed build then does nothing
    assert not window.built
