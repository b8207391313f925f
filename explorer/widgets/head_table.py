"""The head table: for every layer and head of the chosen kind, its role, entropy, mean distance and
peakedness at the current step. It sorts by any column; clicking a row focuses that head, and the row
of the focused head stays selected whatever the sort. Columns fit their headers and values after
every update; the sort direction is an arrow in the sorted header's text (Qt's own indicator would
reserve room for an arrow in every header and push the last columns out of view)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from model.inspection.heads import ROLE_SCORE_HELP, describe_role, heads_statistics
from model.kinds import AttentionKind
from model.neuron.terms import CLASS_RULE, HeadTerms

COLUMNS = (
    "Layer",
    "Head",
    "Role",
    "Role\nscore",
    "Entropy\n(nats)",
    "Normalised\nentropy",
    "Distance",
    "Max\nweight",
    "By its\nterms",
)
COLUMN_HELP = (
    "Layer (from 1)",
    "Head (from 1)",
    "What the head mostly does at this step: a sink (<s>, </s>, punctuation), positional (self, previous, "
    "next), broad, diffuse, alignment-like or focused (cross) or mixed (self)",
    ROLE_SCORE_HELP,
    "Mean over queries of the entropy of the attention row, in nats",
    "Entropy divided by the log of the number of keys a query could see: 0 = all on one key, 1 = uniform",
    "Mean distance between query and key weighted by attention (for cross-attention: from the diagonal)",
    "Mean over queries of the largest weight of the row (peakedness)",
    f"Positional, content or mixed from the algebra of its scores (the neuron view), with the share of the score's "
    f"row-centred magnitude in the terms that vary with the key's position. {CLASS_RULE}",
)
HEAD_ROLE = Qt.ItemDataRole.UserRole + 1  # (layer, head) on every item of a row
COLUMN_PADDING = 6  # pixels beside the widest header or value
SORT_KEYS = ("layer", "head", "role", "role_score", "entropy", "normalised_entropy", "distance", "max_weight", "terms_share")
TERMS = len(COLUMNS) - 1  # the column of the term shares: hidden for a model whose scores do not split


class HeadTable(QTableWidget):
    head_clicked = Signal(int, int)  # layer, head (0-based)

    def __init__(self):
        super().__init__(0, len(COLUMNS))
        self.setHorizontalHeaderLabels(COLUMNS)
        for column, text in enumerate(COLUMN_HELP):
            item = self.horizontalHeaderItem(column)
            assert item is not None, "set by setHorizontalHeaderLabels"
            item.setToolTip(text)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)  # fitted to contents after every update
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignCenter)
        header.setStretchLastSection(True)
        header.setSectionsClickable(True)
        header.sectionClicked.connect(self._on_header_clicked)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.sort_column, self.sort_order = -1, Qt.SortOrder.AscendingOrder  # rows are sorted here, not by Qt's items
        self.setToolTip("What each head does at this step; click a header to sort, a row to focus the head")
        self.cellClicked.connect(self._on_cell_clicked)
        self.rows: list[dict] = []
        self.shown_texts: list[list[str]] = []  # each row's texts as last set (an item's text is set when it changes)
        self.fitted_to: tuple[str, ...] | None = None  # each column's longest text when the columns were last fitted
        self.focused: tuple[int, int] | None = None  # the head the focus view shows, if a single head

    def set_weights(self, weights, key_tokens: list[str], kind: AttentionKind, terms: HeadTerms | None = None) -> None:
        """weights [layers, heads, queries, keys] of one kind; ``terms``: every head's term shares (model/neuron/), None
        while they are not computed (the column says "…")."""
        self.rows = []
        n_heads = weights.shape[1]
        every_head = heads_statistics(weights, key_tokens, kind) if weights.shape[2] else []  # roles too
        for index, stats in enumerate(every_head):
            layer, head = divmod(index, n_heads)
            self.rows.append(
                {
                    "layer": layer,
                    "head": head,
                    "role": stats.role,
                    "role_score": stats.role_score,
                    "entropy": stats.entropy,
                    "normalised_entropy": stats.normalised_entropy,
                    "distance": stats.distance,
                    "max_weight": stats.max_weight,
                    "terms": terms.label(layer, head) if terms else "…",
                    "terms_detail": terms.detail(layer, head) if terms else "the term shares are being computed",
                    "terms_share": float(np.nan_to_num(terms.positional_share(layer, head), nan=-1.0)) if terms else -1.0,
                }
            )
        self._fill()

    def _fill(self) -> None:
        """The rows in the chosen order; items are reused from the last step and only what changed is set (a step
        changes the numbers; sorting, the rows' heads), which keeps a step of 12 layers × 16 heads within the window's
        redraw budget."""
        if self.sort_column >= 0:
            key = SORT_KEYS[self.sort_column]
            self.rows.sort(key=lambda values: values[key], reverse=self.sort_order == Qt.SortOrder.DescendingOrder)
        self.setUpdatesEnabled(False)
        self.clearSelection()
        if self.rowCount() != len(self.rows):
            self.setRowCount(len(self.rows))
            self.shown_texts = [[] for _ in self.rows]
        for row, values in enumerate(self.rows):
            texts = [str(values["layer"] + 1), str(values["head"] + 1), values["role"]]
            texts += [f"{values[key]:.3f}" for key in SORT_KEYS[3:TERMS]] + [values["terms"]]
            self._fill_row(row, values, texts)
        longest = tuple(max((texts[column] for texts in self.shown_texts), key=len, default="") for column in range(len(COLUMNS)))
        if longest != self.fitted_to:  # a column's widest text may have changed: fit them again
            self.fit_columns()
            self.fitted_to = longest
        self.setUpdatesEnabled(True)
        if self.focused is not None:
            self.select_head(*self.focused)

    def _fill_row(self, row: int, values: dict, texts: list[str]) -> None:
        """One row's items: each text set where it changed, the head on the first item, the tooltips."""
        shown = self.shown_texts[row]
        rule = f"{values['role']}: {describe_role(values['role'])}"
        for column, text in enumerate(texts):
            item = self.item(row, column)
            if item is None:
                item = QTableWidgetItem()
                if column not in (2, TERMS):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(row, column, item)
            if column >= len(shown) or shown[column] != text:
                item.setText(text)
            if column == 0:
                item.setData(HEAD_ROLE, (values["layer"], values["head"]))  # what a click on any of the row's cells reads
            if column in (2, 3, TERMS):
                item.setToolTip(rule if column != TERMS else values["terms_detail"])
        self.shown_texts[row] = texts

    def show_terms(self, shown: bool) -> None:
        """Show the term shares' column (a model whose scores split into positional terms) or hide it."""
        self.setColumnHidden(TERMS, not shown)

    def _on_header_clicked(self, column: int) -> None:
        """Sort by a column; a second click on it reverses the order."""
        reverse = column == self.sort_column and self.sort_order == Qt.SortOrder.AscendingOrder
        self.sortByColumn(column, Qt.SortOrder.DescendingOrder if reverse else Qt.SortOrder.AscendingOrder)

    def sortItems(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:  # noqa: N802 - Qt's name
        self.sortByColumn(column, order)

    def sortByColumn(self, column: int, order: Qt.SortOrder) -> None:  # noqa: N802 - Qt's name
        """Sort by ``column`` in ``order`` (as a header click does)."""
        self.sort_column, self.sort_order = column, order
        for index, label in enumerate(COLUMNS):
            arrow = (" ▲" if order == Qt.SortOrder.AscendingOrder else " ▼") if index == column else ""
            header_item = self.horizontalHeaderItem(index)
            if header_item is not None:
                header_item.setText(label + arrow)
        self.fitted_to = None  # the sorted header is wider by its arrow
        self._fill()

    def fit_columns(self) -> None:
        """Every column as wide as its header (sort arrow included) and its widest value."""
        header = self.horizontalHeader()
        for column in range(self.columnCount()):
            width = max(self.sizeHintForColumn(column), header.sectionSizeHint(column)) + COLUMN_PADDING
            header.resizeSection(column, width)

    def head_at(self, row: int) -> tuple[int, int]:
        item = self.item(row, 0)
        assert item is not None
        layer, head = item.data(HEAD_ROLE)
        return int(layer), int(head)

    def row_of(self, layer: int, head: int) -> int | None:
        """The row showing (layer, head) in the current sort, None if absent."""
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and tuple(item.data(HEAD_ROLE)) == (layer, head):
                return row
        return None

    def select_head(self, layer: int | None, head: int | None) -> None:
        """Select the row of the focused head whatever the sort; no row for the mean, max or rollout."""
        self.focused = (layer, head) if layer is not None and head is not None else None
        row = self.row_of(*self.focused) if self.focused is not None else None
        self.blockSignals(True)
        if row is None:
            self.clearSelection()
        else:
            self.selectRow(row)
            item = self.item(row, 0)
            if item is not None:
                self.scrollToItem(item)
        self.blockSignals(False)

    def _on_cell_clicked(self, row: int, _column: int) -> None:
        self.head_clicked.emit(*self.head_at(row))
