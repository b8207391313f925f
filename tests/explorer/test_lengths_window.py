"""The Positional tab's length-experiment page in the window (explorer/widgets/lengths_panel.py): the form's settings
run in the background, the curves are drawn with the trained lengths shaded, and a point opens its scheme's model and
sentence in the Explore tab."""

from __future__ import annotations

from explorer.main_window import EXPLORE_TAB, POSITIONAL_TAB

WAIT_MS = 120_000  # a bound on waiting for a job, not a timing claim


def test_a_run_from_the_form_draws_its_curves_and_a_point_opens_in_explore(qtbot, open_window, copy_bundle):
    window = open_window(copy_bundle[0])
    window.tabs.setCurrentIndex(POSITIONAL_TAB)
    tab = window.positional_tab
    tab.pages.setCurrentIndex(1)
    panel = tab.pages.currentWidget()
    assert tab.pages.tabText(1) == "Length experiment"
    panel.train_max.setValue(3)
    panel.test_max.setValue(5)
    panel.steps.setValue(10)
    panel.per_length.setValue(2)
    for name, box in panel.schemes.items():
        box.setChecked(name in ("rope", "alibi"))
    controller = window.controllers.lengths
    panel.run_button.click()
    assert controller.running and panel.cancel_button.isEnabled() and not panel.run_button.isEnabled()
    qtbot.waitUntil(lambda: controller.result is not None and not controller.running, timeout=WAIT_MS)
    assert panel.run_button.isEnabled() and panel.save_button.isEnabled()
    for plot in panel.plots:
        assert plot.legend_names() == ["rope", "alibi"] and len(plot.plot_item.listDataItems()) == 4  # a line and its points
    assert "click a point" in panel.note.text()
    window.explore.set_source("the black cat sees the small dog")  # a sentence the symbol models cannot read
    window.statusBar().clearMessage()
    panel.point_clicked.emit("alibi", 5)  # what a click on that point emits
    assert window.tabs.currentIndex() == EXPLORE_TAB and window.explore.bundle.config.positional_encoding == "alibi"
    example = controller.row("alibi", 5).example
    assert window.explore.text == example and window.explore_tab.controls.source.text() == example  # the box shows it
    assert "Example sentence replaced" not in window.statusBar().currentMessage()  # no sentence was swapped in on the way
