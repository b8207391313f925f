"""The Explore tab's layout at any window size: only the view shown sets how narrow the views' tabs may get.

A QTabWidget is as wide as its widest page needs, shown or not: the report card's 900 px kept the model grid's side
of the splitter that wide at every window size, and the focus heatmap had what was left (a third of a 1400 px window,
less at 1280). Here a page not shown asks for no room (its size policy ignored until it is shown again).
"""

from __future__ import annotations

from PySide6.QtWidgets import QSizePolicy, QTabWidget, QWidget

IGNORED = QSizePolicy.Policy.Ignored


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
