"""The Explore tab's readings beyond raw attention, gathered in one place: the Reading box, the contrastive
saliency, the AER table of every measure, and head importance with the pruning curve.

``ExploreMeasures`` builds these widgets for the tab (which places them) and wires them to the controllers the
main window built (explorer/controllers/: measures, alignment, importance): each widget is handed plain data and
says what the user asked through its signals. It also says which trace the views draw (``measured``: the chosen
measure in place of the weights, or the weights and why).
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from explorer.controllers.alignment import AlignmentController
from explorer.controllers.explore import ExploreController
from explorer.controllers.importance import ImportanceController
from explorer.controllers.measures import MeasureController
from explorer.widgets.alignment_view import AlignmentView
from explorer.widgets.contrast_view import ContrastView
from explorer.widgets.importance_view import ImportanceView
from explorer.widgets.measure_box import MeasureBox
from model.attribution.measures import integration_note
from model.decoding.trace import Trace
from model.inspection.selection import prediction_source_share
from model.kinds import AttentionKind


class ExploreMeasures:
    def __init__(
        self,
        explore: ExploreController,
        measures: MeasureController,
        alignment: AlignmentController,
        importance: ImportanceController,
    ) -> None:
        self.explore, self.measures, self.alignment, self.importance = explore, measures, alignment, importance
        self.box = MeasureBox()
        self.status = QLabel()
        self.status.setStyleSheet("color: palette(mid); font-style: italic;")
        self.contrast = ContrastView()  # why this token and not that one (Ctrl+click a candidate)
        self.alignment_view = AlignmentView()
        self.importance_view = ImportanceView()
        measures.contrast_ready.connect(self.contrast.set_contrast)
        self.contrast.closed.connect(measures.clear_contrast)
        self.box.measure_chosen.connect(measures.set_measure)
        measures.busy.connect(self.status.setText, check_nargs=False)  # a Qt method: no signature to check
        wire_alignment(self.alignment_view, alignment)
        wire_importance(self.importance_view, importance)
        for source in (measures.message, alignment.message, self.alignment_view.message, importance.message):
            source.connect(explore.message)

    def measured(self, trace: Trace, kind: AttentionKind) -> tuple[Trace, str]:
        """(the trace the views draw, a note): the chosen measure in place of the weights, or the weights and why."""
        self.box.set_available(self.measures.availability(kind))
        if self.box.measure == "attention" or not trace.n_steps and kind is not AttentionKind.ENCODER:
            return trace, ""
        reason = self.box.reason()
        if reason:
            return trace, f"{reason}: showing the attention weights."
        measured = self.measures.shown(trace)
        if measured is None:
            return trace, f"{self.box.currentText()} is being computed: the attention weights until it is ready."
        return measured, ""

    @staticmethod
    def focus_title(title: str, shown: Trace, layer: int = -1) -> str:
        """The focus matrix's title; with a measure that splits predictions, the current step's source share (through
        ``layer`` for a rolled-out one); with integrated gradients, its completeness gap and points, and a warning when a
        prediction did not converge."""
        share = prediction_source_share(shown, layer)
        if share is not None:
            title += f" · step {shown.n_steps}: {share:.0%} source, {1 - share:.0%} target prefix"
        integration = integration_note(shown)
        return f"{title} · {integration}" if integration else title


def wire_alignment(view: AlignmentView, alignment: AlignmentController) -> None:
    """The AER table view shows what the alignment controller reports and sends it the user's requests."""
    view.score_requested.connect(lambda n_pairs, seed: alignment.compute(n_pairs, seed=seed))
    view.cancel_requested.connect(alignment.cancel)
    alignment.progress.connect(view.set_progress)
    alignment.ready.connect(lambda table: view.show_table(table, alignment.unavailable()))
    alignment.message.connect(view.show_message)
    alignment.running_changed.connect(view.set_running)
    view.show_table(alignment.table, alignment.unavailable())


def wire_importance(view: ImportanceView, importance: ImportanceController) -> None:
    """The importance view shows what the importance controller reports and sends it the user's requests."""
    view.compute_requested.connect(importance.compute)
    view.corpus_chosen.connect(importance.choose_corpus)
    importance.corpora_changed.connect(view.set_corpora)
    view.cancel_requested.connect(importance.cancel)
    importance.progress.connect(view.set_progress)
    importance.importance_ready.connect(view.show_importance)
    importance.curve_ready.connect(view.show_curve)
    importance.message.connect(view.show_message)
    importance.running_changed.connect(view.set_running)
