"""The Explore tab's views greyed out for a model that does not serve them, each with the reason as its tooltip
(explorer/controllers/served_views.py says which and why)."""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget

from explorer.controllers.served_views import view_reasons
from model.family import Bundle


class ServedTabs:
    """Keeps ``views``' tabs enabled as the open model serves them; a tab's own tooltip comes back when it is."""

    def __init__(self, views: QTabWidget) -> None:
        self.views = views
        self.tooltips: dict[str, str] = {}  # a view's own tooltip, kept while the reason stands in its place

    def follow(self, bundle: Bundle | None) -> dict[str, str]:
        """Grey out (or enable again) each view for ``bundle``'s model; returns the reasons (view -> '' or why not)."""
        reasons = view_reasons(bundle)
        for index in range(self.views.count()):
            title = self.views.tabText(index)
            if title not in reasons:
                continue
            own = self.tooltips.setdefault(title, self.views.tabToolTip(index))
            why = reasons[title]
            if why and self.views.currentIndex() == index:
                self.views.setCurrentIndex(0)  # the first view (the model grid) serves every model
            self.views.setTabEnabled(index, not why)
            self.views.setTabToolTip(index, f"Not for this model: {why}" if why else own)
        return reasons
