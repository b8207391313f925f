"""The Explore tab's ways into the corpus index, wired in one place: right-click a source piece or a target token for
"Find similar tokens in the corpus", or a row of the heads table for "Sentences in the corpus where this head …". Each
asks the corpus controller (explorer/controllers/corpus.py), which shows the Corpus tab with the answer.

A target token is searched for where the decoder reads it: token t (produced at step t + 1) is the decoder's input at
position t + 1, as the index labels decoder positions; the last token (usually </s>) is never read, and says so.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtWidgets import QMenu

from explorer.controllers.corpus import CorpusController
from model.nn.masking import Head

SIMILAR = "Find similar tokens in the corpus"
HEAD_SENTENCES = "Sentences in the corpus where this head does this"


class ExploreCorpus:
    def __init__(self, tab: Any, corpus: CorpusController) -> None:
        self.tab, self.corpus = tab, corpus
        for view, side in ((tab.source_tokens, "encoder"), (tab.target_tokens, "decoder")):
            view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            view.customContextMenuRequested.connect(lambda point, view=view, side=side: self._token_menu(view, side, point))
        tab.head_table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        tab.head_table.customContextMenuRequested.connect(self._head_menu)

    def decoder_position(self, chip: int) -> int | None:
        """The decoder position that reads target token ``chip`` (None for the last: it is never fed back)."""
        trace = self.tab.explore.trace
        position = chip + 1
        return position if trace is not None and position < len(trace.decoder_input_tokens) else None

    def find_similar(self, side: str, chip: int) -> bool:
        """Search the index for the chip's token ("encoder": a source piece, "decoder": a target token)."""
        if self.tab.word_level.isChecked():
            self.tab.explore.message.emit("The corpus index holds pieces: untick Words to search for one.")
            return False
        position = chip if side == "encoder" else self.decoder_position(chip)
        if position is None:
            self.tab.explore.message.emit(
                "The decoder has not read this token (the last one is never read): choose another to search for."
            )
            return False
        return self.corpus.find_similar(side, position)

    def search_head(self, layer: int, head: int) -> None:
        """Sentences of the corpus where the head (of the kind shown) does what its role here says."""
        role = next((row["role"] for row in self.tab.head_table.rows if (row["layer"], row["head"]) == (layer, head)), "")
        self.corpus.choose_head(Head(self.tab.current_kind(), layer, head), role)

    def _token_menu(self, view: Any, side: str, point: QPoint) -> None:
        chip = view.chip_at(QPointF(point))
        if chip is None:
            return
        menu = QMenu(view)
        menu.addAction(SIMILAR, lambda: self.find_similar(side, chip))
        menu.exec(view.mapToGlobal(point))

    def _head_menu(self, point: QPoint) -> None:
        table = self.tab.head_table
        item = table.itemAt(point)
        if item is None:
            return
        layer, head = table.head_at(item.row())
        menu = QMenu(table)
        menu.addAction(HEAD_SENTENCES, lambda: self.search_head(layer, head))
        menu.exec(table.viewport().mapToGlobal(point))
