"""The Report card view's note follows the model (issue 39): a model opened after the window says nothing of
"Open or train a model first", and a card cleared by another model (a training's, a file's) takes its caption with it."""

from __future__ import annotations

from explorer.widgets.report_card_view import HINT

WAIT_MS = 120_000  # a bound on waiting for a job, not a timing claim


def test_a_model_opened_after_the_window_clears_the_open_a_model_note(open_window, copy_bundle):
    window = open_window()
    view = window.explore_tab.report_card.view
    assert view.note.text().startswith("Open or train a model first")
    window.explore.set_model(copy_bundle[0])
    assert view.grade_button.isEnabled() and view.note.text() == HINT
    window.explore.set_model(None)
    assert not view.grade_button.isEnabled() and view.note.text().startswith("Open or train a model first")


def test_another_model_takes_the_old_cards_caption_with_its_table(qtbot, open_window, copy_bundle):
    window = open_window(copy_bundle[0])
    view, controller = window.explore_tab.report_card.view, window.controllers.report_card
    view.sentences.setValue(1)
    view.sanity_pairs.setValue(0)
    view.grade_button.click()
    qtbot.waitUntil(lambda: controller.card is not None, timeout=WAIT_MS)
    assert view.note.text() == controller.card.caption() and view.table.rowCount()
    window.explore.set_model(copy_bundle[0])  # another model (as a training's end opens its model)
    assert view.table.rowCount() == 0 and view.note.text() == HINT and not view.save_button.isEnabled()
