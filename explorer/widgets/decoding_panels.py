"""The Explore tab's lower row, for the step shown: the next-token candidates (at step 0, those step 1 is chosen
from), or what an encoder-only model's head says instead; the contrastive saliency (given by the tab); and the beam
tree, which takes the room its columns need when a beam appears."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget

from explorer.widgets.beam_tree_view import BeamTreeView
from explorer.widgets.candidates_view import CandidatesView
from explorer.widgets.predictions_view import PredictionsView
from model.decoding.trace import Trace

BEAM_SHARE = 0.65  # the most of the row a beam tree takes when it appears


class DecodingPanels(QSplitter):
    def __init__(self, contrast: QWidget) -> None:
        super().__init__(Qt.Orientation.Horizontal)
        self.candidates = CandidatesView()
        self.predictions = PredictionsView()  # an encoder-only model's head: mask candidates, classes
        self.beam_tree = BeamTreeView()
        for widget in (self.candidates, self.predictions, contrast, self.beam_tree):
            self.addWidget(widget)
        self.beam_tree.hide()
        self.predictions.hide()

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
            sizes = [0] * self.count()  # the hidden head predictions and contrast get nothing
            sizes[self.indexOf(self.candidates)] = total - wanted
            sizes[self.indexOf(self.beam_tree)] = wanted
            self.setSizes(sizes)
