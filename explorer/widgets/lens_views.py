"""The logit lens and DecoderLens as the Interventions view shows them.

``LensHeatmap``: readings (rows: the embeddings, then after each decoder sublayer) × steps (columns, labelled with the
token finally chosen there); each cell's colour is the probability that reading gives the finally chosen token, and
the reading's own top token is written in it: cut with "…" to the cell's width, and left out while the cells are lower
than a line of text (a 16-layer model's 33 readings in a small window; the tooltip still names it). The step the
Explore tab is at is outlined (``set_highlighted_step``).

``DecoderLensTable``: one row per encoder layer the decoder read: its greedy translation and log probability.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QGraphicsRectItem, QHeaderView, QTableWidget, QTableWidgetItem

from explorer.widgets.heatmap import HeatmapView, shown_labels
from model.data.token_labels import HIGHLIGHT
from model.interventions.decoder_lens import DecoderLensResult
from model.interventions.logit_lens import LogitLensResult

CELL_FONT_POINTS = 8
DARK_BELOW = 0.55  # a cell this bright (viridis) or brighter takes dark text


class LensHeatmap(HeatmapView):
    def __init__(self) -> None:
        super().__init__("viridis", "probability of the token chosen")
        self.plot.getAxis("left").set_name("reading")
        self.plot.getAxis("top").set_name("step: the token chosen")
        self.cell_texts: list[list[str]] = []  # [readings][steps] each reading's top token, as written
        self._texts: list[pg.TextItem] = []
        self.highlighted_step: int | None = None
        self.place = "step"  # what a column is: a step, or an encoder-only model's position (or sentence)
        self.column_outline = QGraphicsRectItem()
        self.column_outline.setPen(pg.mkPen(HIGHLIGHT, width=3, cosmetic=True))
        self.column_outline.setZValue(11)
        self.column_outline.hide()
        self.plot.addItem(self.column_outline, ignoreBounds=True)

    def set_lens(self, lens: LogitLensResult | None, step: int | None = None) -> None:
        """Show ``lens`` (None: nothing), the step ``step`` (from 0) outlined."""
        for item in self._texts:
            self.plot.removeItem(item)
        self._texts = []
        if lens is None:
            self.cell_texts = []
            self.plot.getAxis("top").set_name("step: the token chosen")
            self.set_matrix(np.zeros((0, 0), np.float32), [], [], "")
            self.set_highlighted_step(None)
            return
        if lens.reads_text:  # an encoder-only model's head on the text: the pieces read
            columns = [lens.column_label(column) for column in range(len(lens.chosen_ids))]
            steps = shown_labels(columns) if lens.place != "sentence" else columns
            what, chosen_as = lens.predicted, "predicted"
        else:
            chosen = lens.chosen_tokens or [lens.candidate_tokens[-1][column][0] for column in range(len(lens.chosen_ids))]
            steps = [f"{column + 1} {token}" for column, token in enumerate(shown_labels(chosen))]
            what, chosen_as = "token", "chosen"
        self.plot.getAxis("top").set_name(lens.columns_title)
        self.set_value_label(f"probability of the {what} {chosen_as}")
        self.place = lens.place
        title = f"Logit lens: each reading's top {what}; colour = probability of the {what} finally {chosen_as}"
        if lens.final_norm:
            title += " (read through the final norm)"
        self.set_matrix(lens.chosen_probabilities, lens.readings, steps, title)
        names = lens.predicted in ("tag", "class")  # names, not pieces
        tops = [[tokens[0] for tokens in reading] for reading in lens.candidate_tokens]  # [readings][columns]
        self.cell_texts = tops if names else [shown_labels(reading) for reading in tops]
        for row, texts in enumerate(self.cell_texts):
            for column, text in enumerate(texts):
                self._texts.append(self._cell_text(text, row, column, float(lens.chosen_probabilities[row, column])))
        self.set_highlighted_step(step)
        self._fit_texts()

    def _fit_texts(self) -> None:
        """Each cell's text cut to the cell's width; none while a cell is lower than a line of text."""
        if not self._texts:
            return
        n_rows, n_steps = self.values.shape
        box = self.plot.vb.boundingRect()
        cell_width, cell_height = box.width() / max(n_steps, 1), box.height() / max(n_rows, 1)
        metrics = QFontMetrics(self._texts[0].textItem.font())
        shown = cell_height >= metrics.height()
        for index, item in enumerate(self._texts):
            item.setVisible(shown)
            if shown:
                row, column = divmod(index, n_steps)
                item.setText(metrics.elidedText(self.cell_texts[row][column], Qt.TextElideMode.ElideRight, int(cell_width) - 4))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if hasattr(self, "_texts"):
            self._fit_texts()

    def _cell_text(self, text: str, row: int, column: int, value: float) -> pg.TextItem:
        item = pg.TextItem(text, color="#111111" if value >= DARK_BELOW else "#f2f2f2", anchor=(0.5, 0.5))
        font = item.textItem.font()
        font.setPointSize(CELL_FONT_POINTS)
        item.setFont(font)
        item.setPos(column + 0.5, row + 0.5)
        self.plot.addItem(item, ignoreBounds=True)
        return item

    def set_highlighted_step(self, step: int | None) -> None:
        """Outline the column of ``step`` (from 0; None or past the end: none)."""
        n_rows, n_steps = self.values.shape if self.values.ndim == 2 else (0, 0)
        self.highlighted_step = step if step is not None and 0 <= step < n_steps else None
        if self.highlighted_step is None:
            self.column_outline.hide()
            return
        self.column_outline.setRect(QRectF(self.highlighted_step, 0, 1, n_rows))
        self.column_outline.show()

    def describe_cell(self, query: int, key: int) -> str:
        return (
            f"{self.display_query_labels[query]}, {self.place} {self.display_key_labels[key]}: top candidate "
            f"{self.cell_texts[query][key]!r}; the one finally chosen has probability {self.values[query, key]:.4f}"
        )


class DecoderLensTable(QTableWidget):
    COLUMNS = ("encoder layer read", "greedy translation", "log probability")

    def __init__(self) -> None:
        super().__init__(0, len(self.COLUMNS))
        self.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)

    def set_result(self, result: DecoderLensResult | None) -> None:
        """One row per encoder layer (None: empty)."""
        rows = [] if result is None else list(zip(result.layers, result.translations, result.total_log_probabilities))
        self.setRowCount(len(rows))
        last = len(rows) - 1
        for row, (layer, translation, total) in enumerate(rows):
            texts = (layer + (" (the model's own)" if row == last else ""), translation, f"{float(total):.3f}")
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setToolTip(
                    f"The decoder reading encoder layer {layer}'s output: {translation!r}, log probability {float(total):.4f}"
                )
                self.setItem(row, column, item)
