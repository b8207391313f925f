"""The Explore tab's Report card view, wired in one place: the view among the tab's views and the report-card
controller (explorer/controllers/report_card.py) behind it: Grade and Cancel to the controller, its progress, card and
messages to the view, Save… through the controller (a CSV or the one-page figure, by the suffix)."""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget

from explorer.controllers.explore import ExploreController
from explorer.controllers.report_card import ReportCardController
from explorer.widgets.report_card_view import ReportCardView

VIEW_TITLE = "Report card"


class ExploreReportCard:
    def __init__(self, views: QTabWidget, explore: ExploreController, controller: ReportCardController) -> None:
        self.explore, self.controller = explore, controller
        self.view = ReportCardView()
        views.addTab(self.view, VIEW_TITLE)
        views.setTabToolTip(
            views.indexOf(self.view), "Every reading graded: faithfulness, plausibility (AER, correct position) and sanity"
        )
        view = self.view
        view.compute_requested.connect(controller.compute)
        view.cancel_requested.connect(controller.cancel)
        view.save_requested.connect(controller.save)
        controller.progress.connect(view.set_progress)
        controller.ready.connect(view.show_card)
        controller.message.connect(view.show_message)
        controller.running_changed.connect(view.set_running)
        explore.model_changed.connect(lambda _bundle: self._on_model_changed())
        self._on_model_changed()

    def _on_model_changed(self) -> None:
        """Grade enabled (or why not), and the note said again either way: "Open or train a model first" must not
        outlive the model's opening, nor a cleared card's caption its table."""
        self.view.show_unavailable(self.controller.unavailable(), self.controller.running)
