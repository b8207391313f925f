"""The candidates for the next token: a horizontal bar chart of the most likely tokens at the current
step, the chosen token highlighted. Rows go down until they hold 99% of the probability (at most the k
kept: ten by default), then one "other (N tokens)" row holds the rest of the vocabulary's mass. Clicking a candidate
forces that token (what-if); the "other" row is not clickable. At step 0 the panel shows the
distribution step 1 will be chosen from, nothing marked as chosen.

The rows fit the panel's height: their labels shrink (down to 7 pt) until every row has a line; past that (a low
panel, 1280x720) the last candidates are folded into the last row, which says how many ("… 4 more, other (1342
tokens)"); the chosen one always shows, and the tooltip lists those folded.

The attributes ``tokens`` (raw pieces), ``token_ids``, ``probabilities`` and ``step_index`` describe
the candidate rows only (not the "other" row): exports read them.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, Signal

from explorer.widgets.plot_style import items_minimum
from explorer.widgets.token_axis import MIN_POINT_SIZE, label_font, line_height, point_sizes
from model.data.token_labels import display_candidate
from model.decoding.candidates import candidate_rows, format_probability
from model.training.trainer import TrainingOptions

CHOSEN_BRUSH = pg.mkBrush("#f58518")
OTHER_BRUSH = pg.mkBrush("#4c78a8")
REST_BRUSH = pg.mkBrush("#b0b0b0")
CHOSEN_MARK = "▶ "  # before the chosen token's label: its bar can be too thin to see
LABEL_SMOOTHING = TrainingOptions.label_smoothing  # the training default: the spread the tooltip explains
TOOLTIP = (
    "The most likely next tokens at this step (orange and ▶: chosen), until they hold 99% of the probability; "
    "the grey row holds the rest of the vocabulary. Click a token to force it and decode on from there; "
    "Ctrl+click (or right-click) one to see why the model chose its token and not that one.\n"
    f"A model trained with label smoothing (ε = {LABEL_SMOOTHING:g} by default) learns to spread about ε of "
    "its probability over the whole vocabulary, so the best token rarely goes above about "
    f"{1 - LABEL_SMOOTHING:.1f} and most of the rest is that even spread, not real alternatives."
)
MIN_BAR = 0.004  # the narrowest bar drawn (a share of the axis, about 4 px): a rare candidate stays visible


class CandidatesView(pg.PlotWidget):
    candidate_clicked = Signal(int, int)  # step index (0-based), token id
    contrast_requested = Signal(int, int)  # step index, token id: why the chosen token and not this one

    def __init__(self):
        super().__init__(enableMenu=False)
        self.setMouseEnabled(x=False, y=False)
        self.invertY(True)
        self.setLabel("bottom", "probability")
        self.setXRange(0, 1, padding=0.02)
        self.setToolTip(TOOLTIP)
        self.step_index: int | None = None
        self.chosen_id: int | None = None
        self.token_ids = np.zeros(0, np.int64)
        self.tokens: list[str] = []
        self.probabilities = np.zeros(0, np.float32)
        self.labels: list[str] = []  # every row: candidates, then the "other" row
        self.shown_labels: list[str] = []  # the rows drawn (the last candidates folded into one when the panel is low)
        self.shown_rows: list[int] = []  # the candidate (index into ``tokens``) of each drawn row; the last rows: none
        self.point_size = point_sizes()[0]
        self._widths: list[float] = []
        self._brushes: list = []
        self.other_probability = 0.0  # mass of every token not in a row
        self.other_count = 0
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.7, width=[])
        self.addItem(self.bars)
        self.scene().sigMouseClicked.connect(self._on_clicked)
        self.getPlotItem().vb.sigResized.connect(self._fit_rows)  # the rows' room is the view box's height
        self._drawn: tuple | None = None

    def set_candidates(
        self,
        step_index: int | None,
        token_ids,
        tokens: list[str],
        probabilities,
        chosen_id: int | None,
        vocabulary_size: int | None = None,
    ) -> None:
        """The best-first candidates [k] of step ``step_index`` (0-based); ``chosen_id`` None when no token
        was chosen yet (step 0). ``vocabulary_size`` counts the tokens of the "other" row."""
        probabilities = np.asarray(probabilities, dtype=np.float32)  # [k]
        n = candidate_rows(probabilities) if len(probabilities) else 0
        self.step_index, self.chosen_id = step_index, chosen_id
        self.token_ids = np.asarray(token_ids, dtype=np.int64)[:n]  # [n]
        self.tokens = [str(t) for t in list(tokens)[:n]]
        self.probabilities = probabilities[:n]  # [n]
        self.other_probability = max(0.0, 1.0 - float(np.sum(self.probabilities, dtype=np.float64))) if n else 0.0
        total = vocabulary_size if vocabulary_size is not None else len(probabilities)
        self.other_count = max(total - n, 0) if n else 0
        chosen = [chosen_id is not None and int(token) == chosen_id for token in self.token_ids]
        self.labels = [
            f"{CHOSEN_MARK if is_chosen else ''}{display_candidate(t)}  {format_probability(float(p))}"
            for t, p, is_chosen in zip(self.tokens, self.probabilities, chosen)
        ]
        widths = [max(float(p), MIN_BAR) for p in self.probabilities]  # a rare candidate still shows a bar to click
        brushes = [CHOSEN_BRUSH if is_chosen else OTHER_BRUSH for is_chosen in chosen]
        if self.other_count:
            self.labels.append(f"other ({self.other_count} tokens)  {format_probability(self.other_probability)}")
            widths.append(max(self.other_probability, MIN_BAR))
            brushes.append(REST_BRUSH)
        self._widths, self._brushes = widths, brushes
        self.setTitle(f"Candidates for step {step_index + 1}" if step_index is not None else "Candidates")
        self._fit_rows()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """No smaller than the plot's own minimum (its title, axes and one row): a splitter that gave it less would cut
        the plot off (issue 39: 68 px for a plot of 69.6 at 1024x640), with no scroll bar to say so."""
        return super().minimumSizeHint().expandedTo(items_minimum(self, self.getPlotItem()))

    def _room(self) -> float:
        """The px the rows have: the view box's height once laid out, else the widget's less the title and axis."""
        box = self.getPlotItem().vb.height()
        return box if box > 0 else max(self.height() - 80.0, 0.0)

    def _fit_rows(self) -> None:
        """Draw the rows at the largest label size that gives each its line; below 7 pt, fold the last candidates
        (never the chosen one) into one row with the rest, which says how many."""
        rows, room = len(self.labels), self._room() / 1.04  # the y range's padding
        fits = [size for size in point_sizes() if rows * line_height(size) <= room]
        self.point_size = fits[0] if fits or not rows else MIN_POINT_SIZE
        keep = list(range(len(self.tokens)))
        lines = int(room // line_height(MIN_POINT_SIZE)) if rows and not fits else rows
        if lines < rows:  # the candidates that fit, then one row for the rest; the chosen one among those shown
            chosen = [i for i in keep if self.chosen_id is not None and int(self.token_ids[i]) == self.chosen_id]
            keep = keep[: max(lines - 1, 1)]
            if chosen and chosen[0] not in keep:
                keep = [*keep[:-1], chosen[0]]
        folded = [i for i in range(len(self.tokens)) if i not in keep]
        labels = [self.labels[i] for i in keep]
        widths, brushes = [self._widths[i] for i in keep], [self._brushes[i] for i in keep]
        if folded and lines < 2:  # room for one line: the candidate shown says how many more there are
            labels[-1] += f"  (… {len(folded)} more)"
        elif folded:
            mass = self.other_probability + float(np.sum(self.probabilities[folded], dtype=np.float64))
            rest = f", other ({self.other_count} tokens)" if self.other_count else ""
            labels.append(f"… {len(folded)} more{rest}  {format_probability(mass)}")
            widths.append(max(mass, MIN_BAR))
            brushes.append(REST_BRUSH)
        elif len(self.labels) > len(self.tokens):  # the "other" row
            labels.append(self.labels[-1])
            widths.append(self._widths[-1])
            brushes.append(self._brushes[-1])
        self.shown_rows, self.shown_labels = keep, labels
        self._draw_rows(labels, widths, brushes, [self.labels[i] for i in folded])

    def _draw_rows(self, labels: list[str], widths: list[float], brushes: list, folded: list[str]) -> None:
        drawn = (labels, widths, [id(brush) for brush in brushes], self.point_size)
        if drawn == self._drawn:
            return  # a resize that changes nothing (the axis' width moves the view box, which fits again)
        self._drawn = drawn
        rows = len(labels)
        self.bars.setOpts(
            x0=np.zeros(rows), y=np.arange(rows), width=np.array(widths, dtype=np.float64), height=0.7, brushes=brushes
        )
        axis = self.getAxis("left")
        if axis.style.get("tickFont") is None or axis.style["tickFont"].pointSizeF() != self.point_size:
            axis.setStyle(tickFont=label_font(self.point_size))
        axis.setTicks([list(enumerate(labels)), []])
        self.updateGeometry()  # the labels' width and size set the plot's minimum, hence the view's
        more = f"\n\nFolded for lack of room (drag the splitter above up to see them): {'; '.join(folded)}" if folded else ""
        self.setToolTip(TOOLTIP + more)
        self.setYRange(-0.5, max(rows, 1) - 0.5, padding=0.02)

    def click_candidate(self, index: int) -> None:
        """Force candidate ``index`` (of ``tokens``); the "other" row and rows past it do nothing."""
        if self.step_index is not None and 0 <= index < len(self.token_ids):
            self.candidate_clicked.emit(self.step_index, int(self.token_ids[index]))

    def contrast_candidate(self, index: int) -> None:
        """Ask why the chosen token and not the candidate of row ``index`` (the chosen one's own row does nothing)."""
        if self.step_index is not None and self.chosen_id is not None and 0 <= index < len(self.token_ids):
            if int(self.token_ids[index]) != self.chosen_id:
                self.contrast_requested.emit(self.step_index, int(self.token_ids[index]))

    def _on_clicked(self, event) -> None:
        point = self.getPlotItem().vb.mapSceneToView(event.scenePos())
        if point.x() <= 1.05 and -0.5 <= point.y() < len(self.shown_rows) - 0.5:  # a candidate's bar, or its label
            row = self.shown_rows[int(round(point.y()))]
            contrast = event.button() == Qt.MouseButton.RightButton or bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            (self.contrast_candidate if contrast else self.click_candidate)(row)
