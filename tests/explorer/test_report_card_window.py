"""The Report card view of the Explore tab in the window: Grade runs in the background (the window keeps handling
events: a timer of the window's thread keeps firing and the progress bar moves), the card fills the table (each
column's best in bold on green with ★, the reasons as tooltips) and the plots, Save… writes what the controller
saves; Cancel ends a run and the window goes on; an encoder-only tagger's card says what it grades; a model it
cannot grade (a bare encoder) disables Grade and says why. (The controller
alone: tests/explorer/controllers/test_report_card_controller.py.)"""

from __future__ import annotations

import csv

from PySide6.QtCore import QTimer

from model.grading.metrics import METRICS
from model.io.models import open_model

WAIT_MS = 120_000  # a bound on waiting for a job, not a timing claim


def test_grade_fills_the_table_and_the_plots_and_the_window_keeps_going(qtbot, open_window, copy_bundle, tmp_path):
    window = open_window(copy_bundle[0])
    tab = window.explore_tab
    view = tab.report_card.view
    tab.views.setCurrentWidget(view)
    assert not tab.focus.isVisibleTo(tab) and view.grade_button.isEnabled()
    view.sentences.setValue(1)
    view.sanity_pairs.setValue(1)
    ticks, formats = [], []
    timer = QTimer(window)
    timer.timeout.connect(lambda: (ticks.append(1), formats.append(view.progress_bar.format())))
    timer.start(20)
    controller = window.controllers.report_card
    view.grade_button.click()
    assert controller.running and view.cancel_button.isEnabled() and not view.grade_button.isEnabled()
    qtbot.waitUntil(lambda: controller.card is not None, timeout=WAIT_MS)
    timer.stop()
    assert len(ticks) > 1 and any(text.startswith("sentences") for text in formats)  # events handled while it ran
    card = controller.card
    assert view.table.rowCount() == len(card.rows) and view.table.columnCount() == len(METRICS) + 1
    assert view.table.verticalHeaderItem(0).text() == card.rows[0].label
    best = [
        view.table.item(r, c)
        for r in range(view.table.rowCount())
        for c in range(len(METRICS))
        if view.table.item(r, c).text().endswith("★")
    ]
    assert best and all(item.font().bold() for item in best)
    alti = [row.name for row in card.rows].index("alti")
    assert view.table.item(alti, 0).text() == "—" and "ALTI has no cross-attention" in view.table.item(alti, 0).toolTip()
    assert len(view.plots[0].plotItem.listDataItems()) == sum(row.deletion_curve is not None for row in card.rows)
    assert view.plots[2].plotItem.listDataItems()  # the cascade's similarities
    assert view.save_button.isEnabled() and card.caption() == view.note.text()
    view.save_requested.emit(str(tmp_path / "card.csv"))  # what Save… emits once a file is chosen
    with open(tmp_path / "card.csv", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == len(card.rows)


def test_cancel_then_a_tagger_graded_and_a_model_it_cannot_grade(qtbot, open_window, copy_bundle, bare_encoder_folder):
    window = open_window(copy_bundle[0])
    tab = window.explore_tab
    view, controller = tab.report_card.view, window.controllers.report_card
    tab.views.setCurrentWidget(view)
    view.sentences.setValue(200)
    view.grade_button.click()
    view.cancel_button.click()
    assert not controller.running and view.note.text() == "Report card cancelled." and view.grade_button.isEnabled()
    window.explore.set_model(open_model("tagger"))  # an encoder-only model: its tags as it decides them
    view.sentences.setValue(1)
    view.sanity_pairs.setValue(0)
    view.grade_button.click()
    qtbot.waitUntil(lambda: controller.card is not None, timeout=WAIT_MS)
    assert "tags as the model decides them" in view.note.text()
    assert view.plots[0].plotItem.getAxis("bottom").labelText == "share of text pieces hidden"
    assert view.plots[0].plotItem.getAxis("left").labelText == "mean p(tag)"
    window.explore.set_model(open_model(bare_encoder_folder))
    assert not view.grade_button.isEnabled() and "no head" in view.grade_button.toolTip() and "no head" in view.note.text()
