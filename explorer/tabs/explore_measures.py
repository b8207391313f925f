"""The Explore tab's readings beyond raw attention, gathered in one place: the Reading box and its worker, the
contrastive saliency, the AER table of every measure, and head importance with the pruning curve.

``ExploreMeasures`` builds these widgets and their sessions for the tab (which places them), says which trace the
views draw (``measured``: the chosen measure in place of the weights, or the weights and why), and ends every
worker when the window closes (``stop``).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QLabel

from explorer.alignment_session import AlignmentSession
from explorer.importance_session import ImportanceSession
from explorer.measure_session import MeasureSession
from explorer.widgets.alignment_view import AlignmentView
from explorer.widgets.contrast_view import ContrastView
from explorer.widgets.importance_view import ImportanceView
from explorer.widgets.measure_box import MeasureBox
from model.kinds import AttentionKind


class ExploreMeasures:
    def __init__(self, session):
        self.session = session
        self.measures = MeasureSession(session)  # raw weights or a contribution measure, computed off the window's thread
        self.box = MeasureBox()
        self.status = QLabel()
        self.status.setStyleSheet("color: palette(mid); font-style: italic;")
        self.contrast = ContrastView()  # why this token and not that one (Ctrl+click a candidate)
        self.alignment = AlignmentSession(session)
        self.alignment_view = AlignmentView(self.alignment)
        self.importance = ImportanceSession(session)
        self.importance_view = ImportanceView(self.importance)
        self.measures.contrast_ready.connect(self.contrast.set_contrast)
        self.contrast.closed.connect(self.measures.clear_contrast)
        self.box.measure_chosen.connect(self.measures.set_measure)
        self.measures.busy.connect(self.status.setText)
        for source in (self.measures, self.alignment, self.alignment_view, self.importance):
            source.message.connect(session.message)

    def measured(self, trace, kind: AttentionKind):
        """(the trace the views draw, a note): the chosen measure in place of the weights, or the weights and why."""
        stepper, bundle = self.session.stepper, self.session.bundle
        model = stepper.model if stepper is not None else (bundle.model if bundle is not None else None)
        self.box.set_available(model, kind)
        if self.box.measure == "attention" or not trace.n_steps and kind is not AttentionKind.ENCODER:
            return trace, ""
        reason = self.box.reason(model, kind)
        if reason:
            return trace, f"{reason}: showing the attention weights."
        measured = self.measures.shown(trace)
        if measured is None:
            return trace, f"{self.box.currentText()} is being computed: the attention weights until it is ready."
        return measured, ""

    @staticmethod
    def focus_title(title: str, shown) -> str:
        """The focus matrix's title; with a measure that splits predictions, the current step's source share."""
        shares = shown.source_share
        if len(shares) and shown.n_steps and not np.isnan(shares[-1]):
            title += f" · step {shown.n_steps}: {shares[-1]:.0%} source, {1 - shares[-1]:.0%} target prefix"
        return title

    def stop(self) -> None:
        """The window is closing: end the background work (a measure, importance, the alignment table)."""
        self.measures.stop()
        self.alignment.stop()
        self.importance.stop()
