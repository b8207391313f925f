"""The candidates for the next token: a horizontal bar chart of the top-k probabilities at the
current step, the chosen token highlighted. Clicking a bar forces that token (what-if)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal

CHOSEN_BRUSH = pg.mkBrush("#f58518")
OTHER_BRUSH = pg.mkBrush("#4c78a8")


class CandidatesView(pg.PlotWidget):
    candidate_clicked = Signal(int, int)  # step index (0-based), token id

    def __init__(self):
        super().__init__()
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.invertY(True)
        self.setLabel("bottom", "probability")
        self.setXRange(0, 1, padding=0.02)
        self.setToolTip("The most likely next tokens at this step (orange: chosen). Click one to force it "
                        "and decode on from there.")
        self.step_index: int | None = None
        self.token_ids = np.zeros(0, np.int64)
        self.tokens: list[str] = []
        self.probabilities = np.zeros(0, np.float32)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[])
        self.addItem(self.bars)
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def set_candidates(self, step_index: int | None, token_ids, tokens: list[str], probabilities,
                       chosen_id: int | None) -> None:
        self.step_index = step_index
        self.token_ids = np.asarray(token_ids, dtype=np.int64)
        self.tokens = list(tokens)
        self.probabilities = np.asarray(probabilities, dtype=np.float32)
        n = len(self.tokens)
        brushes = [CHOSEN_BRUSH if int(token) == chosen_id else OTHER_BRUSH for token in self.token_ids]
        self.bars.setOpts(x0=np.zeros(n), y=np.arange(n), width=self.probabilities, height=0.7, brushes=brushes)
        self.getAxis("left").setTicks([[(i, f"{t}  {p:.3f}") for i, (t, p) in
                                        enumerate(zip(self.tokens, self.probabilities))], []])
        title = f"Candidates for step {step_index + 1}" if step_index is not None else "Candidates"
        self.setTitle(title)
        self.setYRange(-0.5, max(n, 1) - 0.5, padding=0.02)

    def click_candidate(self, index: int) -> None:
        if self.step_index is not None and 0 <= index < len(self.token_ids):
            self.candidate_clicked.emit(self.step_index, int(self.token_ids[index]))

    def _on_clicked(self, event) -> None:
        point = self.getPlotItem().vb.mapSceneToView(event.scenePos())
        if 0 <= point.x() <= 1.05:
            self.click_candidate(int(round(point.y())))
