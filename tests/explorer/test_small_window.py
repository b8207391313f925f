"""The window at small sizes (issue 39): it takes 1024×640 (what does not fit scrolls, with a scroll bar), shows the
Explore tab whole at 1280×720, the timeline bar's snapshot line ends with "…" when cut (the whole line in its tooltip,
back in full when there is room), and the curves over training fit their view at any window size (their plots, the
"Alignment-like from" label)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QScrollArea

from explorer.widgets.timeline_plots import MIN_PLOT_PX
from tests.explorer.test_timeline_window import open_timeline_window
from tests.explorer.window_invariants import graphics_clipped, label_clipped, outside, scrolled

WAIT_MS = 60000


@pytest.fixture
def timeline_window(qtbot, open_window):
    """(window, Explore tab, the copy run's timeline), as tests/explorer/test_timeline_window.py opens it, its
    background work done."""
    return open_timeline_window(qtbot, open_window, settled=True)


def show_size(qtbot, window, width: int, height: int) -> None:
    window.resize(width, height)
    QApplication.processEvents()
    assert (window.width(), window.height()) == (width, height), f"asked {width}×{height}, got {window.width()}×{window.height()}"
    window.grab()  # laid out and painted, as on a screen
    QApplication.processEvents()


def scroll_bars(window) -> list[str]:
    """The window's scroll areas (its own, around the tabs) that show a scroll bar."""
    shown = []
    for area in window.findChildren(QScrollArea):
        for name, bar in (("horizontal", area.horizontalScrollBar()), ("vertical", area.verticalScrollBar())):
            if area.isVisible() and bar.isVisible() and bar.maximum() > bar.minimum():
                shown.append(f"{name} scroll bar of {type(area.widget()).__name__}")
    return shown


def test_the_window_takes_1024_by_640_and_what_does_not_fit_scrolls(qtbot, timeline_window):
    window, tab, _source = timeline_window
    tab.controls.strategy.setCurrentText("sample")  # the widest row of controls
    for size in ((1024, 640), (1100, 700)):
        window.resize(*size)
        QApplication.processEvents()
        assert (window.width(), window.height()) == size, f"asked {size}, got {window.width()}×{window.height()}"
    show_size(qtbot, window, 1024, 640)
    seen, whole = window.tabs.visibleRegion().boundingRect(), window.tabs.rect()
    assert seen == whole or scroll_bars(window), f"the tabs show {seen} of {whole} and no scroll bar says so"
    assert tab.height() >= tab.minimumSizeHint().height() and tab.width() >= tab.minimumSizeHint().width()


def test_the_explore_tab_needs_no_scroll_bar_at_1280_by_720(qtbot, timeline_window):
    window, tab, _source = timeline_window
    for strategy in ("greedy", "sample"):
        tab.controls.strategy.setCurrentText(strategy)
        show_size(qtbot, window, 1280, 720)
        assert not scroll_bars(window), f"{strategy}: {scroll_bars(window)}"
    tab.controls.strategy.setCurrentText("greedy")
    show_size(qtbot, window, 1024, 640)
    assert "horizontal" not in " ".join(scroll_bars(window)), "the controls are wider than a 1024 px window"


def test_the_snapshot_line_ends_with_an_ellipsis_when_cut(qtbot, timeline_window):
    window, tab, _source = timeline_window
    bar = tab.over_training.bar
    long = "training loss 1.074 · validation: " + " · ".join(f"exact_match_{n} 0.{n}12" for n in range(12))
    bar.show_snapshot(3, long)
    whole = f"Snapshot 3 of 0–7: {long}"
    for width in (1024, 1300, 1700):
        show_size(qtbot, window, width, 800)
        assert label_clipped(bar.details) == "", f"at {width} px"
        assert bar.details.text().endswith("…") and whole.startswith(bar.details.text()[:-1])
        assert bar.details.toolTip() == whole and bar.details.full_text == whole
    bar.show_snapshot(3, "training loss 1.074")
    assert bar.details.text() == "Snapshot 3 of 0–7: training loss 1.074"  # room enough: whole
    bar.names[3] = "step 1,200 of 9,000 (" + "a long note on this snapshot, " * 8 + ")"
    bar.show_snapshot(3, "")
    show_size(qtbot, window, 1024, 640)
    assert label_clipped(bar.name) == "" and bar.name.toolTip() == bar.name.full_text


def curves_problems(view) -> list[str]:
    """What the window state test finds cut in the curves view (a widget in a scroll area whose bar shows is not cut)."""
    found = []
    if not scrolled(view.layout_widget) and (
        why := graphics_clipped(view.layout_widget) or outside(view.layout_widget, view.window())
    ):
        found.append(f"the curves' plots: {why}")
    for label in view.findChildren(QLabel):
        if scrolled(label) or not label.isVisible() or not label.text():
            continue
        if why := label_clipped(label) or outside(label, view.window()):
            found.append(f"{label.text()[:40]!r}: {why}")
    for plot in view.plots:  # each plot's curves readable, each title's lines within its plot, as high as its row
        if plot.vb.height() < MIN_PLOT_PX - 1:
            found.append(f"the plot {plot.titleLabel.item.toPlainText()[:40]!r} draws its curves {plot.vb.height():.0f} px high")
        title = plot.titleLabel
        text = title.item.mapRectToParent(title.item.boundingRect())
        if text.width() > title.size().width() + 1 or text.height() > title.size().height() + 1:
            found.append(
                f"the title {title.item.toPlainText()[:40]!r} is {text.width():.0f}×{text.height():.0f} px in {title.size()}"
            )
    return found


@pytest.mark.parametrize("importance", [False, True])
def test_the_curves_fit_their_view_at_any_window_size(qtbot, timeline_window, importance):
    window, tab, _source = timeline_window
    view, curves = tab.over_training.curves_view, window.controllers.curves
    tab.views.setCurrentWidget(view)
    qtbot.waitUntil(lambda: curves.curves is not None and not curves.running, timeout=WAIT_MS)
    if importance:
        view.importance.setChecked(True)
        view.importance_pairs.setValue(3)
        view.compute_button.click()
        qtbot.waitUntil(lambda: bool(curves.curves.importance) and not curves.running, timeout=WAIT_MS)
    found = []
    for size in ((1024, 640), (1280, 720), (1024, 1440), (2560, 640), (1300, 850)):
        show_size(qtbot, window, *size)
        found += [f"{size}: {problem}" for problem in curves_problems(view)]
    assert not found, "\n".join(found)


def test_the_corpus_tab_fits_1024_by_640_but_for_the_query_key_map(qtbot, window):
    """Only the Corpus panel shown sets the tab's size: the query-key map's row made every panel scroll sideways."""
    tab = window.corpus_tab
    window.tabs.setCurrentWidget(tab)
    for panel in (tab.similar, tab.heads):
        tab.panels.setCurrentWidget(panel)
        show_size(qtbot, window, 1024, 640)
        assert not scroll_bars(window), f"{tab.panels.tabText(tab.panels.currentIndex())}: {scroll_bars(window)}"
    tab.panels.setCurrentWidget(tab.maps)
    show_size(qtbot, window, 1024, 640)  # wider than 1024 px: it scrolls (the window keeps its size)
    seen, whole = window.tabs.visibleRegion().boundingRect(), window.tabs.rect()
    assert seen == whole or scroll_bars(window)


def test_a_long_grid_title_wraps_within_the_grid(qtbot, timeline_window):
    """The model grid's title (the two snapshots a difference subtracts) asked for its whole width: the grid's plots
    were wider than its view, the last heads cut off (the window state test, at 1104 px)."""
    window, tab, _source = timeline_window
    tab.views.setCurrentWidget(tab.grid)
    tab.grid.set_title("step 7,174 of 7,174 (final: the weights of step 6,000) minus step 232 of 7,174 (the onset) " * 2)
    for size in ((1024, 640), (1104, 1355)):
        show_size(qtbot, window, *size)
        assert graphics_clipped(tab.grid) == "", size
        title = tab.grid.plot.titleLabel
        assert title.item.mapRectToParent(title.item.boundingRect()).width() <= title.size().width() + 1
    tab.grid.set_title("")  # no title: no room kept for it, at any size
    show_size(qtbot, window, 1300, 850)
    assert tab.grid.plot.layout.rowMaximumHeight(0) == 0 and not tab.grid.plot.titleLabel.isVisible()
