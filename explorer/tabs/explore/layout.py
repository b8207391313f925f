"""The Explore tab's layout at any window size: the controls and token rows above two splitters (the views beside the
focus heatmap, above the decoding panels), their shares kept in the settings; only the view shown sets how narrow the
views' tabs may get.

A QTabWidget is as wide as its widest page needs, shown or not: the report card's 900 px kept the model grid's side
of the splitter that wide at every window size, and the focus heatmap had what was left (a third of a 1400 px window,
less at 1280). Here a page not shown asks for no room (its size policy ignored until it is shown again).

The token rows wrap onto more lines as the window narrows or the sentence grows, which a layout's minimum size does
not count (it is the same at every width): a six-line Target row at 1024x640 squeezed the splitters below their minimum
and cut the candidates' plot, with no sign (issue 39). The tab's minimum counts the rows at its width
(``minimum_size``), so the main window's scroll area shows a scroll bar instead.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QSplitter, QTabWidget, QVBoxLayout, QWidget

from explorer.settings_values import SettingsValues

# explorer.tabs.explore.tab.ExploreTab, which imports this module: named here, not imported (no cycle)
ExploreTab = Any

IGNORED = QSizePolicy.Policy.Ignored
TOP_SIZES = [600, 700]  # the views beside the focus heatmap
MAIN_SIZES = [560, 300]  # the views and the focus above the decoding panels


def lay_out(tab: ExploreTab, view_row: QHBoxLayout) -> tuple[QSplitter, QSplitter]:
    """Lay the tab out (controls, timeline bar, tokens, the view row, the hint, then the splitters); returns the
    splitters (views | focus, and that above the decoding panels), their last shares restored from the settings."""
    top = QSplitter(Qt.Orientation.Horizontal)
    top.addWidget(tab.views)
    top.addWidget(tab.focus)
    size_to_current_page(tab.views)  # a hidden page's minimum (the report card's 900 px) leaves the focus room
    top.setSizes(TOP_SIZES)
    main = QSplitter(Qt.Orientation.Vertical)
    main.addWidget(top)
    main.addWidget(tab.side)
    main.setSizes(MAIN_SIZES)
    tab.settings.restore("explore/top_splitter", top.restoreState)
    tab.settings.restore("explore/splitter", main.restoreState)
    layout = QVBoxLayout(tab)
    for widget in (tab.controls, tab.over_training.bar, tab.source_tokens, tab.target_tokens):
        layout.addWidget(widget)
    layout.addLayout(view_row)
    layout.addWidget(tab.hint)
    layout.addWidget(main, 1)
    tab.installEventFilter(MinimumFollower(tab))
    return top, main


def minimum_size(tab: QWidget, hint: QSize) -> QSize:
    """``hint`` (the layout's minimum, blind to rows that wrap), no lower than what the rows need at the tab's width."""
    layout = tab.layout()
    if layout is None or not layout.hasHeightForWidth():
        return hint
    return hint.expandedTo(QSize(0, layout.minimumHeightForWidth(max(tab.width(), hint.width()))))


class MinimumFollower(QObject):
    """Tells the tab's parents its minimum changed when its width or its rows did (a row that wraps onto more lines)."""

    def __init__(self, tab: QWidget) -> None:
        super().__init__(tab)
        self.tab, self.height = tab, -1

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.tab and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            height = self.tab.minimumSizeHint().height()
            if height != self.height:
                self.height = height
                self.tab.updateGeometry()
        return False


def save_layout(tab: ExploreTab, settings: SettingsValues) -> None:
    """The splitters' shares, restored by ``lay_out`` next time."""
    settings.setValue("explore/splitter", tab.main_splitter.saveState())
    settings.setValue("explore/top_splitter", tab.top_splitter.saveState())


def size_to_current_page(tabs: QTabWidget) -> None:
    """Give the page shown its own size policy back, and every other page an ignored one."""
    policies: dict[QWidget, tuple[QSizePolicy.Policy, QSizePolicy.Policy]] = tabs.__dict__.setdefault("own_policies", {})
    current = tabs.currentWidget()
    for index in range(tabs.count()):
        page = tabs.widget(index)
        if page is None:
            continue
        if page not in policies:
            policy = page.sizePolicy()
            policies[page] = (policy.horizontalPolicy(), policy.verticalPolicy())
        wanted = policies[page] if page is current else (IGNORED, IGNORED)
        policy = page.sizePolicy()
        if (policy.horizontalPolicy(), policy.verticalPolicy()) != wanted:
            policy.setHorizontalPolicy(wanted[0])
            policy.setVerticalPolicy(wanted[1])
            page.setSizePolicy(policy)
    tabs.updateGeometry()
