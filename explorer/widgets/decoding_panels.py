"""The Explore tab's lower row, for the step shown: the next-token candidates (at step 0, those step 1 is chosen
from), or what an encoder-only model's head says instead; the contrastive saliency (given by the tab); and the beam
tree, which takes the room its columns need when a beam appears."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QSplitter, QWidget

from explorer.widgets.beam_tree_view import BeamTreeView
from explorer.widgets.candidates_view import CandidatesView
from explorer.widgets.predictions_view import PredictionsView
from model.decoding.trace import Trace

BEAM_SHARE = 0.65  # the most of the row a beam tree takes when it appears
CONTRAST_SHARE = 0.4  # the row's share a contrast panel that shows up with no width gets


class DecodingPanels(QSplitter):
    def __init__(self, contrast: QWidget) -> None:
        super().__init__(Qt.Orientation.Horizontal)
        self.candidates = CandidatesView()
        self.predictions = PredictionsView()  # an encoder-only model's head: mask candidates, classes
        self.beam_tree = BeamTreeView()
        self.contrast = contrast
        for widget in (self.candidates, self.predictions, contrast, self.beam_tree):
            self.addWidget(widget)
        self.beam_tree.hide()
        self.predictions.hide()
        contrast.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        """The contrast panel showing up with no width (a beam that appeared while it was hidden took its room, and
        a splitter keeps a hidden panel's size): it gets a share of the row from the candidates."""
        if watched is self.contrast and event.type() == QEvent.Type.Show:
            QTimer.singleShot(0, self._give_the_contrast_room)
        return super().eventFilter(watched, event)

    def _give_the_contrast_room(self) -> None:
        sizes, index = self.sizes(), self.indexOf(self.contrast)
        total = sum(sizes)
        if self.contrast.isHidden() or total <= 0 or sizes[index] > 0:
            return
        donor = self.indexOf(self.candidates if self.candidates.isVisible() else self.predictions)
        share = int(total * CONTRAST_SHARE)
        sizes[index], sizes[donor] = share, max(sizes[donor] - share, 0)
        self.setSizes(sizes)

    def clear(self) -> None:
        """Nothing decoded: no candidates, no beam."""
        self.candidates.set_candidates(None, [], [], [], None)
        self.beam_tree.set_tree(None, None)
        self.beam_tree.hide()

    def show_trace(self, trace: Trace) -> None:
        """The candidates (or the head's predictions) and the beam of ``trace``'s current step."""
        head_output = self.predictions.set_trace(trace)
        self.predictions.setVisible(head_output)
        self.candidates.setVisible(not head_output)
        n = trace.n_steps
        vocabulary = trace.target_vocab_size or None
        if n and len(trace.candidate_ids) == n:  # a trace may hold no candidates (a teacher-forced pass)
            self.candidates.set_candidates(
                n - 1,
                trace.candidate_ids[-1],
                trace.candidate_tokens[-1],
                trace.candidate_probabilities[-1],
                int(trace.chosen_ids[-1]),
                vocabulary,
            )
        elif len(trace.next_candidate_ids):
            self.candidates.set_candidates(
                0, trace.next_candidate_ids, trace.next_candidate_tokens, trace.next_candidate_probabilities, None, vocabulary
            )
        else:
            self.candidates.set_candidates(None, [], [], [], None)
        self._show_beam(trace)

    def _show_beam(self, trace: Trace) -> None:
        beam = trace.beam
        appearing = beam is not None and self.beam_tree.isHidden()
        self.beam_tree.set_tree(beam, trace.hypothesis_rank)
        self.beam_tree.setVisible(beam is not None)
        total = sum(self.sizes())
        if appearing and total > 0:  # room for every column of the beam view, the rest to the candidates
            wanted = min(self.beam_tree.sizeHint().width(), int(total * BEAM_SHARE))
            sizes = [0] * self.count()  # the hidden head predictions get nothing; a contrast shown keeps its width
            contrast = self.indexOf(self.contrast)
            if not self.contrast.isHidden():
                sizes[contrast] = self.sizes()[contrast]
            sizes[self.indexOf(self.candidates)] = max(total - wanted - sizes[contrast], 0)
            sizes[self.indexOf(self.beam_tree)] = wanted
            self.setSizes(sizes)
