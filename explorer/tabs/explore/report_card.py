"""The Explore tab's Report card view, wired in one place: the view among the tab's views and the report-card
controller (explorer/controllers/report_card.py) behind it: Grade and Cancel to the controller, its progress, card and
messages to the view, Save… through the controller (a CSV or the one-page figure, by the suffix). "This sentence"
grades the decoding the Explore tab shows (its tokens up to its step, through the model that decoded them)."""

from __future__ import annotations

from PySide6.QtWidgets import QBoxLayout, QPushButton, QTabWidget

from explorer.controllers.explore import ExploreController
from explorer.controllers.report_card import ReportCardController
from explorer.widgets.report_card_view import ReportCardView

VIEW_TITLE = "Report card"
SENTENCE_TIP = "Grade every reading on the decoding the Explore tab shows, up to its step (in the background)"


class ExploreReportCard:
    def __init__(self, views: QTabWidget, explore: ExploreController, controller: ReportCardController) -> None:
        self.explore, self.controller = explore, controller
        self.view = ReportCardView()
        views.addTab(self.view, VIEW_TITLE)
        views.setTabToolTip(
            views.indexOf(self.view), "Every reading graded: faithfulness, plausibility (AER, correct position) and sanity"
        )
        view = self.view
        self.sentence_button = QPushButton("This sentence")
        beside_grade(view, self.sentence_button)
        view.compute_requested.connect(controller.compute)
        view.corpus_chosen.connect(self._on_corpus_chosen)
        self.sentence_button.clicked.connect(lambda: controller.compute_sentence(view.sanity_pairs.value()))
        view.cancel_requested.connect(controller.cancel)
        view.save_requested.connect(controller.save)
        controller.progress.connect(view.set_progress)
        controller.ready.connect(view.show_card)
        controller.message.connect(view.show_message)
        controller.running_changed.connect(view.set_running)
        controller.running_changed.connect(self._on_running_changed)
        explore.model_changed.connect(lambda _bundle: self._on_model_changed())
        self._on_model_changed()

    def _on_running_changed(self, running: bool) -> None:
        self._enable_sentence()
        graded = self.controller.graded
        if running and graded is not None:
            self.view.note.setText(f"Grading the sentence “{graded.text}” as decoded, “{graded.translation}”, in the background…")

    def _enable_sentence(self) -> None:
        why = self.controller.unavailable(sentence=True)
        self.sentence_button.setEnabled(not why and not self.controller.running)
        self.sentence_button.setToolTip(why or SENTENCE_TIP)

    def _on_model_changed(self) -> None:
        """Grade enabled (or why not), and the note said again either way: "Open or train a model first" must not
        outlive the model's opening, nor a cleared card's caption its table. A model that says no training corpus is
        offered the corpora it may be graded on."""
        self.view.set_corpora(self.controller.corpora())  # chooses the first: _on_corpus_chosen says the rest
        self.view.allow_shuffled(self.controller.shuffled_unavailable())
        self.view.show_unavailable(self.controller.unavailable(), self.controller.running)
        self._enable_sentence()

    def _on_corpus_chosen(self, name: str) -> None:
        self.controller.choose_corpus(name)
        self.view.show_unavailable(self.controller.unavailable(), self.controller.running)


def beside_grade(view: ReportCardView, button: QPushButton) -> None:
    """``button`` placed in the view's row of buttons, after Grade."""
    layout = view.layout()
    item = layout.itemAt(0) if layout is not None else None
    row = item.layout() if item is not None else None
    if not isinstance(row, QBoxLayout):
        raise RuntimeError("the report card view has no row of buttons")  # a programming error, not the user's
    row.insertWidget(row.indexOf(view.grade_button) + 1, button)
