"""The beam search view: the finished hypotheses ranked best first (rank, score, log p, text), then
the tree of everything the beam kept. Chains of tokens without a branch share one row, so the tree
only indents where hypotheses part.

Clicking a ranked hypothesis steps through it to its end (its attention); clicking a row of the tree
shows the best hypothesis through that row at the step where the row's first token was chosen, so the
candidates panel shows what it was chosen from. Scores are log p divided by the GNMT length penalty.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QSplitter, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from model.data.token_labels import CONTINUATION_MARK, display_labels

NODE = Qt.ItemDataRole.UserRole  # on tree rows: (first node, last node) of the row's chain
PRUNED = QColor("#8a8a8a")


def sentence(labels: list[str]) -> str:
    """Display labels as a sentence: a continuation piece ("·e") joins the piece before it."""
    words: list[str] = []
    for label in labels:
        if label.startswith(CONTINUATION_MARK) and words:
            words[-1] += label[len(CONTINUATION_MARK) :]
        else:
            words.append(label)
    return " ".join(words)


def score_help(alpha: float) -> str:
    return (
        f"Score = log p / length penalty, the GNMT penalty ((5 + length) / 6)^α with α = {alpha:g}: "
        "longer hypotheses are not punished for their extra tokens. Beam search ranks by it."
    )


class BeamTreeView(QWidget):
    hypothesis_clicked = Signal(int)  # rank, 0 = best
    node_clicked = Signal(int, int)  # rank of the best hypothesis through a tree row, steps to show

    def __init__(self):
        super().__init__()
        self.ranked = QTreeWidget()
        self.ranked.setRootIsDecorated(False)
        self.ranked.setUniformRowHeights(True)
        self.ranked.setHeaderLabels(["#", "Score", "log p", "Hypothesis"])
        self.ranked.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Tokens", "log p", "Score", "#"])
        self.tree.setIndentation(12)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        for view in (self.ranked, self.tree):
            view.header().setStretchLastSection(view is self.ranked)
            view.header().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.title = QLabel("<b>Beam search</b>: finished hypotheses, best first")
        self.tree_title = QLabel("Beam tree: every token kept on the beam (grey: fell off it)")
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.tree_title)
        lower_layout.addWidget(self.tree, 1)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.ranked)
        self.splitter.addWidget(lower)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.splitter, 1)
        self.alpha = 0.6
        self._set_help()
        self.ranks: dict[int, int] = {}  # node index -> rank of the hypothesis it ends
        self.best_rank: dict[int, int] = {}  # node index -> best rank among the hypotheses through it
        self.items: dict[int, QTreeWidgetItem] = {}  # node index -> the tree row holding it
        self.rank_items: list[QTreeWidgetItem] = []
        self._shown: tuple | None = None  # (tree, rank, alpha) last drawn
        self.ranked.itemClicked.connect(self._on_ranked_clicked)
        self.tree.itemClicked.connect(self._on_tree_clicked)

    def _set_help(self) -> None:
        help_text = score_help(self.alpha)
        self.setToolTip(
            "Beam search. Click a ranked hypothesis to step through it and see its attention; click a "
            "row of the tree to see the step where its first token was chosen.\n" + help_text
        )
        for view, columns in (
            (
                self.ranked,
                {
                    1: help_text,
                    2: "log p: summed log probability of the tokens",
                    0: "Rank by score, 1 = the translation beam search returns",
                },
            ),
            (
                self.tree,
                {2: help_text, 1: "log p of the prefix up to the row's last token", 3: "Rank of the hypothesis the row ends"},
            ),
        ):
            for column, text in columns.items():
                view.headerItem().setToolTip(column, text)

    # --- drawing --------------------------------------------------------------------------------------
    def set_tree(self, tree, shown_rank: int | None) -> None:
        """tree: a model.decoding.beam.BeamTree (nodes with their pieces, parents, log probabilities and scores,
        and the length penalty alpha it was searched with); ``shown_rank`` the hypothesis on screen."""
        alpha = tree.length_penalty if tree is not None else 0.6
        if self._shown is not None and self._shown[0] is tree and self._shown[2] == alpha:
            self._mark_shown(shown_rank)  # same tree: only the highlight moves
            return
        self._shown = (tree, shown_rank, alpha)
        self.alpha = alpha
        self._set_help()
        self.ranked.clear()
        self.tree.clear()
        self.items, self.ranks, self.best_rank, self.rank_items = {}, {}, {}, []
        if tree is None:
            return
        nodes = tree.nodes
        labels = {index: display_labels([tree.pieces[node] for node in tree.node_path(index)]) for index in range(len(nodes))}
        self.ranks = {node: rank for rank, node in enumerate(tree.hypotheses)}
        for rank, end in enumerate(tree.hypotheses):
            index = end
            while index >= 0:
                self.best_rank.setdefault(index, rank)
                index = nodes[index].parent
            node = nodes[end]
            item = QTreeWidgetItem([f"#{rank + 1}", f"{node.score:.3f}", f"{node.log_probability:.3f}", sentence(labels[end])])
            for column in (0, 1, 2):
                item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setData(0, Qt.ItemDataRole.UserRole, rank)
            item.setToolTip(3, "Pieces: " + " ".join(labels[end]))
            self.ranked.addTopLevelItem(item)
            self.rank_items.append(item)
        children: dict[int, list[int]] = {}
        for index, node in enumerate(nodes):
            children.setdefault(node.parent, []).append(index)
        self._add_rows(None, -1, children, nodes, labels)
        self.tree.expandAll()
        self._fit()
        self._mark_shown(shown_rank)

    def _add_rows(self, parent_item, parent: int, children, nodes, labels) -> None:
        """One row per chain of nodes without a branch, nested under the row of its parent."""
        for first in children.get(parent, []):
            last = first
            while len(children.get(last, [])) == 1 and last not in self.ranks:
                last = children[last][0]
            node = nodes[last]
            length = nodes[last].step - nodes[first].step + 1
            rank = self.ranks.get(last)
            item = QTreeWidgetItem(
                [
                    " ".join(labels[last][-length:]),
                    f"{node.log_probability:.3f}",
                    f"{node.score:.3f}",
                    f"#{rank + 1}" if rank is not None else "",
                ]
            )
            item.setData(0, NODE, (first, last))
            for column in (1, 2, 3):
                item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if rank is not None:
                font = item.font(0)
                font.setBold(True)
                for column in range(4):
                    item.setFont(column, font)
            if last not in self.best_rank:
                for column in range(4):
                    item.setForeground(column, QBrush(PRUNED))
                item.setToolTip(0, "Fell off the beam: no finished hypothesis goes through here")
            (parent_item.addChild(item) if parent_item is not None else self.tree.addTopLevelItem(item))
            index = last
            while True:  # every node of the chain maps to this row
                self.items[index] = item
                if index == first:
                    break
                index = nodes[index].parent
            self._add_rows(item, last, children, nodes, labels)

    def _fit(self) -> None:
        """Columns as wide as their headers and contents; the widget asks for that much room."""
        for view in (self.ranked, self.tree):
            for column in range(view.columnCount()):
                view.resizeColumnToContents(column)
                width = max(view.columnWidth(column), view.header().sectionSizeHint(column))
                view.header().resizeSection(column, width)
        rows = self.ranked.topLevelItemCount()
        row_height = self.ranked.sizeHintForRow(0) if rows else 0
        wanted = self.ranked.header().sizeHint().height() + rows * row_height + 2 * self.ranked.frameWidth() + 4
        total = max(sum(self.splitter.sizes()), 2 * wanted)
        self.splitter.setSizes([min(wanted, total // 2), total - min(wanted, total // 2)])
        self.updateGeometry()

    def content_width(self) -> int:
        """Width that shows every column of both lists unclipped (plus frame and scroll bar)."""
        widths = []
        for view in (self.ranked, self.tree):
            columns = sum(max(view.sizeHintForColumn(c), view.header().sectionSizeHint(c)) for c in range(view.columnCount()))
            widths.append(columns + 2 * view.frameWidth() + view.verticalScrollBar().sizeHint().width() + 4)
        return max(widths)

    def sizeHint(self):
        hint = super().sizeHint()
        hint.setWidth(max(hint.width(), self.content_width()))
        return hint

    def _mark_shown(self, shown_rank: int | None) -> None:
        """Select the ranked row and the tree row of the hypothesis on screen."""
        moved = self._shown is None or self._shown[1] != shown_rank
        if self._shown is not None:
            self._shown = (self._shown[0], shown_rank, self._shown[2])
        for view in (self.ranked, self.tree):
            view.blockSignals(True)
            view.clearSelection()
        if shown_rank is not None and 0 <= shown_rank < len(self.rank_items):
            self.rank_items[shown_rank].setSelected(True)
            ends = [node for node, rank in self.ranks.items() if rank == shown_rank]
            if ends and ends[0] in self.items:
                self.items[ends[0]].setSelected(True)
                if moved:
                    self.tree.scrollToItem(self.items[ends[0]])
        for view in (self.ranked, self.tree):
            view.blockSignals(False)

    # --- clicks ---------------------------------------------------------------------------------------
    def click_hypothesis(self, rank: int) -> None:
        self.hypothesis_clicked.emit(rank)

    def click_node(self, node_index: int) -> None:
        """As a click on the tree row holding this node."""
        if node_index in self.items:
            self._on_tree_clicked(self.items[node_index], 0)

    def _on_ranked_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        self.hypothesis_clicked.emit(int(item.data(0, Qt.ItemDataRole.UserRole)))

    def _on_tree_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        first, last = item.data(0, NODE)
        rank = self.best_rank.get(last)
        if rank is None:
            return  # fell off the beam: no hypothesis to step through
        step = self._shown[0].nodes[first].step if self._shown is not None else 0
        self.node_clicked.emit(rank, step + 1)
