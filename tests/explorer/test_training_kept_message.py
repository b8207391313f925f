"""After Stop & keep the Train tab says which weights were kept, in the saved history's own words (issue 39: it said
only "Training stopped after N steps", while a validation had said "the best so far: these weights are kept")."""

from __future__ import annotations

from types import SimpleNamespace

from model.training.run import TrainingOutcome
from model.training.trainer import StopReason
from tests.explorer.test_window import _tiny_training

KEPT = "the weights of step 500 (the best validation BLEU); stopped by the user at step 669"


def test_the_outcome_line_says_what_the_history_says_was_kept(window):
    tab = window.training_tab
    tab.trained.disconnect()  # the line alone: no window taking a fake model
    bundle = SimpleNamespace(history={"stopped": "cancelled", "kept": KEPT})
    tab._on_finished(TrainingOutcome(StopReason.CANCELLED, bundle))
    assert f"Kept {KEPT}." in tab.progress_label.text()


def test_stop_and_keep_after_a_validation_names_the_weights_the_model_has(qtbot, window):
    tab = window.training_tab
    _tiny_training(tab.form, epochs=200, corpus_size=2000)
    tab.form.valid_every.setValue(5)
    tab.form.keep_best.setChecked(True)
    tab.start_button.click()
    qtbot.waitUntil(lambda: len(tab.validations) >= 1 and tab.last_progress.step > tab.validations[0].step, timeout=120000)
    with qtbot.waitSignal(tab.trained, timeout=60000) as trained:
        tab.keep_button.click()
    history = trained.args[0].history
    assert history["kept"] and f"Kept {history['kept']}." in tab.progress_label.text()
    best = max((v for v in tab.validations if v.best), key=lambda v: v.step)  # "the best so far: these weights are kept"
    assert history.get("kept_step") == best.step and f"step {best.step} " in history["kept"]
