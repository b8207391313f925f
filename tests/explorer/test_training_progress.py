"""The Train tab's progress line follows the steps at most every PROGRESS_INTERVAL_MS (a label's layout holds the
interpreter lock the training thread needs), always ends on the last step's figures, and never overwrites the
outcome's line."""

from __future__ import annotations

from explorer.tabs.training_tab import PROGRESS_INTERVAL_MS
from model.training.trainer import Progress


def _progress(step: int) -> Progress:
    return Progress(
        step=step,
        epoch=1,
        train_loss=1.0,
        token_accuracy=0.5,
        learning_rate=1e-4,
        tokens_per_second=1000.0 + step,
        eta_seconds=10.0,
        fraction=step / 100,
        elapsed_seconds=1.0,
    )


def test_steps_in_a_burst_show_the_first_at_once_and_the_last_after_the_interval(qtbot, window):
    tab = window.training_tab
    texts = []
    original = tab.progress_label.setText
    tab.progress_label.setText = lambda text: texts.append(text) or original(text)
    for step in range(1, 31):  # thirty steps in well under the interval
        tab._on_progress(_progress(step))
    assert len(texts) == 1 and "step 1 ·" in texts[0]  # the first at once, the rest held back
    assert len(tab.curves.train["step"]) == 30  # every point reaches the curves
    qtbot.waitUntil(lambda: len(texts) == 2, timeout=10 * PROGRESS_INTERVAL_MS)
    assert "step 30 ·" in texts[1] and "1,030 tokens/s" in texts[1] and tab.progress_bar.value() == 300
    qtbot.wait(2 * PROGRESS_INTERVAL_MS)
    assert len(texts) == 2  # nothing more to show


def test_the_outcome_is_not_overwritten_by_a_step_shown_late(qtbot, window):
    from model.training.run import TrainingOutcome
    from model.training.trainer import StopReason

    tab = window.training_tab
    tab._on_progress(_progress(1))
    tab._on_progress(_progress(2))  # held back
    tab._on_finished(TrainingOutcome(StopReason.CANCELLED, None))
    qtbot.wait(2 * PROGRESS_INTERVAL_MS)
    assert tab.progress_label.text().startswith("Training cancelled after 2 steps")
