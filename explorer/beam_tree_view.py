"""The beam tree: every node beam search expanded, nested under its parent, with its log
probability; finished hypotheses are ranked. Clicking a hypothesis shows its attention."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem


class BeamTreeView(QTreeWidget):
    hypothesis_clicked = Signal(int)  # rank, 0 = best

    def __init__(self):
        super().__init__()
        self.setHeaderLabels(["Token", "log p", "Score", "Hypothesis"])
        self.setToolTip("Beam search: each node is a token kept on the beam. Click a ranked hypothesis "
                        "to step through it and see its attention.")
        self.ranks: dict[int, int] = {}  # node index -> rank of the hypothesis it ends
        self.items: dict[int, QTreeWidgetItem] = {}
        self.itemClicked.connect(self._on_item_clicked)

    def set_tree(self, tree, tokenizer, shown_rank: int | None) -> None:
        """tree: a model.beam.BeamTree (nodes with token_id, parent, log_probability, score, finished)."""
        self.clear()
        self.items, self.ranks = {}, {}
        if tree is None:
            return
        self.ranks = {node: rank for rank, node in enumerate(tree.hypotheses)}
        for index, node in enumerate(tree.nodes):
            parent = self.items.get(node.parent) if node.parent >= 0 else None
            rank = self.ranks.get(index)
            item = QTreeWidgetItem([tokenizer.piece(node.token_id), f"{node.log_probability:.3f}",
                                    f"{node.score:.3f}", f"#{rank + 1}" if rank is not None else ""])
            item.setData(0, Qt.UserRole, index)
            if rank is not None:
                font = item.font(0)
                font.setBold(True)
                for column in range(4):
                    item.setFont(column, font)
                if rank == shown_rank:
                    for column in range(4):
                        item.setBackground(column, QBrush(QColor("#ff2d55")))
                        item.setForeground(column, QBrush(QColor("white")))
            (parent.addChild(item) if parent is not None else self.addTopLevelItem(item))
            self.items[index] = item
        self.expandAll()
        for column in range(4):
            self.resizeColumnToContents(column)

    def click_hypothesis(self, rank: int) -> None:
        self.hypothesis_clicked.emit(rank)

    def _on_item_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        rank = self.ranks.get(item.data(0, Qt.UserRole))
        if rank is not None:
            self.hypothesis_clicked.emit(rank)
