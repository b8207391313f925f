"""The Corpus tab's result tables: the tokens nearest a token (each in its sentence, the matched piece highlighted) and
the sentences where a head behaves as asked (every statistic in a column). Both sort by any column (numbers as
numbers); clicking a row asks for that sentence at that token (``result_chosen``).

The tables show plain rows handed to them (``TokenRow``, or columns and rows); they know nothing of the index.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QAbstractTextDocumentLayout, QPalette, QTextDocument
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableWidget,
    QTableWidgetItem,
)

from model.data.token_labels import HIGHLIGHT, display_labels

ROW_DATA = Qt.ItemDataRole.UserRole + 1  # (sentence id, side, position) on the first item of a row
HTML_TEXT = Qt.ItemDataRole.UserRole + 2  # rich text a cell draws instead of its plain text


@dataclass
class TokenRow:
    distance: float
    sentence_id: int
    position: int  # from 0
    token: str
    side: str
    tokens: list[str]  # the side's pieces of the sentence
    output: str  # the sentence's translation


def highlighted_html(pieces: list[str], position: int) -> str:
    """The pieces as people read them, the one at ``position`` bold in the highlight colour."""
    labels = [html.escape(label) for label in display_labels(pieces)]
    if 0 <= position < len(labels):
        labels[position] = f'<b style="color:{HIGHLIGHT}">{labels[position]}</b>'
    return " ".join(labels)


class RichTextDelegate(QStyledItemDelegate):
    """Draws a cell's HTML_TEXT (one line) where it has one."""

    @staticmethod
    def _document(text: str, option: QStyleOptionViewItem) -> QTextDocument:
        document = QTextDocument()
        document.setDefaultFont(option.font)
        document.setHtml(text)
        return document

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802
        text = index.data(HTML_TEXT)
        if not text:
            return super().sizeHint(option, index)
        document = self._document(text, option)
        return QSize(int(document.idealWidth()) + 8, int(document.size().height()))

    def paint(self, painter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        text = index.data(HTML_TEXT)
        if not text:
            super().paint(painter, option, index)
            return
        self.initStyleOption(option, index)
        option.text = ""
        option.widget.style().drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        document = self._document(text, option)
        context = QAbstractTextDocumentLayout.PaintContext()
        if option.state & QStyle.StateFlag.State_Selected:
            context.palette.setColor(QPalette.ColorRole.Text, option.palette.color(QPalette.ColorRole.HighlightedText))
        painter.save()
        painter.translate(option.rect.left() + 3, option.rect.top() + (option.rect.height() - document.size().height()) / 2)
        painter.setClipRect(QRectF(0, 0, option.rect.width() - 3, option.rect.height()))
        document.documentLayout().draw(painter, context)
        painter.restore()


def _item(value) -> QTableWidgetItem:
    """A cell that sorts numbers as numbers."""
    item = QTableWidgetItem()
    if isinstance(value, float):
        item.setData(Qt.ItemDataRole.DisplayRole, round(value, 4))
    else:
        item.setData(Qt.ItemDataRole.DisplayRole, value)
    return item


class ResultTable(QTableWidget):
    """A sortable, read-only table whose rows each name a sentence and a token (``result_chosen`` on a click)."""

    result_chosen = Signal(int, str, int)  # sentence id, side, position (-1: the sentence only)

    def __init__(self, tip: str) -> None:
        super().__init__(0, 0)
        self.setToolTip(tip)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.setItemDelegate(RichTextDelegate(self))
        self.cellClicked.connect(self._on_cell_clicked)

    def fill(self, headers: list[str], rows: list[list], row_data: list[tuple[int, str, int]], html_column: int = -1) -> None:
        """Rows of values (a str in ``html_column`` is drawn as rich text) and what each row names."""
        self.setSortingEnabled(False)
        self.clearContents()
        self.setColumnCount(len(headers))
        self.setHorizontalHeaderLabels(headers)
        self.setRowCount(len(rows))
        for number, (values, data) in enumerate(zip(rows, row_data)):
            for column, value in enumerate(values):
                item = _item(value)
                if column == html_column:
                    item.setData(HTML_TEXT, value)
                    item.setData(Qt.ItemDataRole.DisplayRole, "")
                    item.setToolTip(html.unescape(str(value)).replace("<b>", "").replace("</b>", ""))
                if column == 0:
                    item.setData(ROW_DATA, data)
                self.setItem(number, column, item)
        self.resizeColumnsToContents()
        self.setSortingEnabled(True)

    def row_data(self, row: int) -> tuple[int, str, int] | None:
        item = self.item(row, 0)
        return None if item is None else item.data(ROW_DATA)

    def _on_cell_clicked(self, row: int, _column: int) -> None:
        data = self.row_data(row)
        if data is not None:
            self.result_chosen.emit(*data)


class TokenMatchesTable(ResultTable):
    HEADERS = ["Distance", "Sentence", "Position", "Token", "In its sentence", "Translation"]

    def __init__(self) -> None:
        super().__init__("The nearest tokens, each in its sentence (the token in colour); click a row to open it in Explore")

    def set_rows(self, rows: list[TokenRow]) -> None:
        values = [
            [
                row.distance,
                row.sentence_id,
                row.position,
                display_labels([row.token])[0],
                highlighted_html(row.tokens, row.position),
                row.output,
            ]
            for row in rows
        ]
        self.fill(self.HEADERS, values, [(row.sentence_id, row.side, row.position) for row in rows], html_column=4)


class SentencesTable(ResultTable):
    def __init__(self) -> None:
        super().__init__("The sentences where the head behaves so, with its statistics; click a header to sort, a row to open it")

    def set_result(self, columns: list[str], rows: list[tuple]) -> None:
        """A head query's columns and rows (sentence_id first); the sentence and its translation last."""
        shown = [name for name in columns if name not in ("source", "output")] + ["source", "output"]
        places = [columns.index(name) for name in shown]
        values = [[row[place] for place in places] for row in rows]
        headers = [name.replace("_share", "").replace("_", " ") for name in shown]
        self.fill(headers, values, [(int(row[columns.index("sentence_id")]), "encoder", -1) for row in rows])
