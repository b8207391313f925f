"""The head table: for every layer and head of the chosen kind, its role, entropy, mean distance and
peakedness at the current step. It sorts by any column; clicking a row focuses that head."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from model.analysis import head_statistics

COLUMNS = ("Layer", "Head", "Role", "Role score", "Entropy (nats)", "Normalised entropy", "Distance", "Max weight")
ANALYSIS_KIND = {"encoder": "self", "decoder": "decoder", "cross": "cross"}


class _NumberItem(QTableWidgetItem):
    """Sorts by the number it holds, not by its text."""

    def __init__(self, value: float, text: str):
        super().__init__(text)
        self.setData(Qt.UserRole, float(value))

    def __lt__(self, other) -> bool:
        return float(self.data(Qt.UserRole)) < float(other.data(Qt.UserRole))


class HeadTable(QTableWidget):
    head_clicked = Signal(int, int)  # layer, head (0-based)

    def __init__(self):
        super().__init__(0, len(COLUMNS))
        self.setHorizontalHeaderLabels(COLUMNS)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)  # sized once per update
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.setSortingEnabled(True)
        self.setToolTip("What each head does at this step; click a header to sort, a row to focus the head")
        self.cellClicked.connect(self._on_cell_clicked)
        self.rows: list[dict] = []
        self._sized = False

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
        self.setRowCount(len(self.rows))
        for row, values in enumerate(self.rows):
            items = [_NumberItem(values["layer"] + 1, str(values["layer"] + 1)),
                     _NumberItem(values["head"] + 1, str(values["head"] + 1)), QTableWidgetItem(values["role"])]
            items += [_NumberItem(values[key], f"{values[key]:.3f}")
                      for key in ("role_score", "entropy", "normalised_entropy", "distance", "max_weight")]
            for column, item in enumerate(items):
                item.setData(Qt.UserRole + 1, (values["layer"], values["head"]))
                self.setItem(row, column, item)
        self.setSortingEnabled(True)
        if sorting_column >= 0:
            self.sortByColumn(sorting_column, order)
        if not self._sized:
            self.resizeColumnsToContents()
            self._sized = bool(self.rows)
        self.setUpdatesEnabled(True)

    def head_at(self, row: int) -> tuple[int, int]:
        return tuple(self.item(row, 0).data(Qt.UserRole + 1))

    def _on_cell_clicked(self, row: int, _column: int) -> None:
        self.head_clicked.emit(*self.head_at(row))
