"""The head table: for every layer and head of the chosen kind, its role, entropy, mean distance and
peakedness at the current step. It sorts by any column; clicking a row focuses that head, and the row
of the focused head stays selected whatever the sort. Columns fit their headers and values after
every update; the sort direction is an arrow in the sorted header's text (Qt's own indicator would
reserve room for an arrow in every header and push the last columns out of view)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from model.analysis import ROLE_SCORE_HELP, describe_role, head_statistics

COLUMNS = ("Layer", "Head", "Role", "Role\nscore", "Entropy\n(nats)", "Normalised\nentropy", "Distance",
           "Max\nweight")
COLUMN_HELP = (
    "Layer (from 1)",
    "Head (from 1)",
    "What the head mostly does at this step: a sink (<s>, </s>, punctuation), positional (self, previous, "
    "next), broad, diffuse, alignment-like (cross) or mixed (self)",
    ROLE_SCORE_HELP,
    "Mean over queries of the entropy of the attention row, in nats",
    "Entropy divided by the log of the number of keys a query could see: 0 = all on one key, 1 = uniform",
    "Mean distance between query and key weighted by attention (for cross-attention: from the diagonal)",
    "Mean over queries of the largest weight of the row (peakedness)",
)
ANALYSIS_KIND = {"encoder": "self", "decoder": "decoder", "cross": "cross"}
HEAD_ROLE = Qt.UserRole + 1  # (layer, head) on every item of a row
COLUMN_PADDING = 6  # pixels beside the widest header or value


class _NumberItem(QTableWidgetItem):
    """Sorts by the number it holds, not by its text."""

    def __init__(self, value: float, text: str):
        super().__init__(text)
        self.setData(Qt.UserRole, float(value))
        self.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)

    def __lt__(self, other) -> bool:
        return float(self.data(Qt.UserRole)) < float(other.data(Qt.UserRole))


class HeadTable(QTableWidget):
    head_clicked = Signal(int, int)  # layer, head (0-based)

    def __init__(self):
        super().__init__(0, len(COLUMNS))
        self.setHorizontalHeaderLabels(COLUMNS)
        for column, text in enumerate(COLUMN_HELP):
            self.horizontalHeaderItem(column).setToolTip(text)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.Interactive)  # fitted to contents after every update
        header.setDefaultAlignment(Qt.AlignCenter)
        header.setStretchLastSection(True)
        header.sortIndicatorChanged.connect(self._on_sort_changed)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self._enable_sorting()
        self.setToolTip("What each head does at this step; click a header to sort, a row to focus the head")
        self.cellClicked.connect(self._on_cell_clicked)
        self.rows: list[dict] = []
        self.focused: tuple[int, int] | None = None  # the head the focus view shows, if a single head

    def set_weights(self, weights, key_tokens: list[str], kind: str) -> None:
        """weights [layers, heads, queries, keys] of one kind."""
        analysis_kind = ANALYSIS_KIND[kind]
        self.rows = []
        n_layers, n_heads = weights.shape[:2]
        for layer in range(n_layers):
            for head in range(n_heads):
                if weights.shape[2] == 0:
                    continue
                stats = head_statistics(weights[layer, head], key_tokens, analysis_kind)  # role included
                role, score = stats.role, stats.role_score
                self.rows.append({"layer": layer, "head": head, "role": role, "role_score": score,
                                  "entropy": stats.entropy, "normalised_entropy": stats.normalised_entropy,
                                  "distance": stats.distance, "max_weight": stats.max_weight})
        sorting_column = self.horizontalHeader().sortIndicatorSection()
        order = self.horizontalHeader().sortIndicatorOrder()
        self.setSortingEnabled(False)
        self.setUpdatesEnabled(False)
        self.clearSelection()
        self.setRowCount(len(self.rows))
        for row, values in enumerate(self.rows):
            items = [_NumberItem(values["layer"] + 1, str(values["layer"] + 1)),
                     _NumberItem(values["head"] + 1, str(values["head"] + 1)), QTableWidgetItem(values["role"])]
            items += [_NumberItem(values[key], f"{values[key]:.3f}")
                      for key in ("role_score", "entropy", "normalised_entropy", "distance", "max_weight")]
            rule = f"{values['role']}: {describe_role(values['role'])}"
            items[2].setToolTip(rule)
            items[3].setToolTip(rule)
            for column, item in enumerate(items):
                item.setData(HEAD_ROLE, (values["layer"], values["head"]))
                self.setItem(row, column, item)
        self._enable_sorting()
        if sorting_column >= 0:
            self.sortByColumn(sorting_column, order)
        self.fit_columns()
        self.setUpdatesEnabled(True)
        if self.focused is not None:
            self.select_head(*self.focused)

    def _enable_sorting(self) -> None:
        self.setSortingEnabled(True)
        self.horizontalHeader().setSortIndicatorShown(False)  # setSortingEnabled shows it again

    def _on_sort_changed(self, column: int, order: Qt.SortOrder) -> None:
        for index, label in enumerate(COLUMNS):
            arrow = (" ▲" if order == Qt.AscendingOrder else " ▼") if index == column else ""
            self.horizontalHeaderItem(index).setText(label + arrow)
        self.fit_columns()

    def fit_columns(self) -> None:
        """Every column as wide as its header (sort arrow included) and its widest value."""
        header = self.horizontalHeader()
        for column in range(self.columnCount()):
            width = max(self.sizeHintForColumn(column), header.sectionSizeHint(column)) + COLUMN_PADDING
            header.resizeSection(column, width)

    def head_at(self, row: int) -> tuple[int, int]:
        return tuple(self.item(row, 0).data(HEAD_ROLE))

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
        row = self.row_of(layer, head) if self.focused is not None else None
        self.blockSignals(True)
        if row is None:
            self.clearSelection()
        else:
            self.selectRow(row)
            self.scrollToItem(self.item(row, 0))
        self.blockSignals(False)

    def selected_head(self) -> tuple[int, int] | None:
        """The (layer, head) of the selected row, if any."""
        rows = self.selectionModel().selectedRows()
        return self.head_at(rows[0].row()) if rows else None

    def _on_cell_clicked(self, row: int, _column: int) -> None:
        self.head_clicked.emit(*self.head_at(row))
