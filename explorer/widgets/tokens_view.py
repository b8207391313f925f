"""A row of tokens as clickable chips: the source pieces, or the target so far with the current
step highlighted, forced tokens marked (✎) and pieces the model does not know (<unk>) in a dashed warning
border. Clicking a target token selects that step; so do the
arrow keys and Enter when the row has the keyboard focus. A chip's tooltip names its raw piece.

Chips show tokens as people read them (``model.data.token_labels.display_labels``: "▁La" prints "La", a
continuation piece "·a"), never the tokenizer's word marker; ``tokens`` keeps the raw pieces.

The chips are painted by the widget itself, wrapped to its width: a rich-text label of 200 linked
chips took about 10 ms to lay out again on every step; this takes well under one.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPalette, QPen, QPixmap, QStaticText
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from explorer.widgets.heatmap import HIGHLIGHT, shown_labels

PAD_X, PAD_Y, SPACING, MARGIN = 4.0, 2.0, 4.0, 2.0  # px inside a chip, between chips, around the row
FORCED_MARK = "✎"
UNKNOWN_COLOUR = "#d95f02"  # the border of a piece the model does not know (orange: visible on light and dark)


class TokensView(QWidget):
    token_clicked = Signal(int)  # index of the token

    def __init__(self, caption: str, tip: str):
        super().__init__()
        self.caption = caption
        self.tip = tip
        self.tokens: list[str] = []  # raw pieces (or words)
        self.display_tokens: list[str] = []  # as the chips show them
        self.current: int | None = None
        self.forced: list[bool] = []
        self.unknown: list[bool] = []  # pieces the model's tokenizer did not know (read as <unk>)
        self.keyboard_index: int | None = None  # the chip Enter would choose
        self.chip_rects: list[QRectF] = []  # where each chip is drawn
        self._shown: tuple | None = None  # what was last set, so an unchanged row is not laid out again
        self._laid_out_width = -1
        self._height = 0.0
        self._widths: dict[tuple[str, bool], float] = {}
        self._statics: dict[tuple[str, bool], QStaticText] = {}
        self._pixmap: QPixmap | None = None  # the row as last drawn; None: draw it again
        self.setToolTip(tip)
        self.setAccessibleName(caption)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.set_tokens([])

    def set_tokens(
        self,
        tokens: list[str],
        current: int | None = None,
        forced: list[bool] | None = None,
        token_level: str | None = None,
        unknown: list[bool] | None = None,
    ) -> None:
        """Raw pieces (or words: ``token_level`` "word"), the current one highlighted, forced ones marked, unknown
        ones (``unknown``: one flag per token, or none) bordered."""
        forced = list(forced) if forced is not None else [False] * len(tokens)
        unknown = [bool(flag) for flag in unknown] if unknown is not None and len(unknown) == len(tokens) else []
        shown = (list(tokens), current, forced, token_level, unknown)
        if shown == self._shown:
            return
        self._shown = shown
        self.tokens, self.current, self.forced, self.unknown = list(tokens), current, forced, unknown
        self.display_tokens = shown_labels(self.tokens, token_level)
        self.setAccessibleDescription(" ".join(self.display_tokens))  # what a screen reader says
        if self.keyboard_index is not None and self.keyboard_index >= len(self.tokens):
            self.keyboard_index = None
        self._laid_out_width, self._pixmap = -1, None
        old_height = self._height
        self._layout(self.width())
        if self._height != old_height:
            self.updateGeometry()
        self.update()

    # --- layout -----------------------------------------------------------------------------------
    def _fonts(self) -> tuple[QFont, QFont]:
        bold = QFont(self.font())
        bold.setBold(True)
        return self.font(), bold

    def _text_width(self, text: str, bold: bool) -> float:
        width = self._widths.get((text, bold))
        if width is None:
            if len(self._widths) > 5000:
                self._widths.clear()
            width = self._widths[(text, bold)] = QFontMetricsF(self._fonts()[bold]).horizontalAdvance(text)
        return width

    def _flow(self, width: float) -> tuple[list[QRectF], float]:
        """Chip rects wrapped to ``width`` (after the caption) and the row's height."""
        line = QFontMetricsF(self._fonts()[1]).height() + 2 * PAD_Y
        x = MARGIN + self._text_width(self.caption, True) + SPACING
        y, rects = MARGIN, []
        for index, text in enumerate(self.display_tokens or ["—"]):
            chip = self._text_width(text, index == self.current) + 2 * PAD_X
            mark = self._text_width(FORCED_MARK, False) if index < len(self.forced) and self.forced[index] else 0.0
            if x + chip + mark > width - MARGIN and x > MARGIN:
                x, y = MARGIN, y + line + SPACING
            rects.append(QRectF(x, y, chip, line))
            x += chip + mark + SPACING
        return rects, y + line + MARGIN

    def _layout(self, width: int) -> None:
        if width == self._laid_out_width:
            return
        self.chip_rects, self._height = self._flow(float(max(width, 1)))
        self._pixmap = None
        if not self.display_tokens:
            self.chip_rects = []
        self._laid_out_width = width

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt's name
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt's name
        return int(self._flow(float(max(width, 1)))[1] + 0.999)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        width = max(self.width(), 200)
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(100, int(QFontMetricsF(self._fonts()[1]).height() + 2 * (PAD_Y + MARGIN)))

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.PaletteChange):
            self._widths.clear()
            self._statics.clear()
            self._laid_out_width, self._pixmap = -1, None
            self.updateGeometry()
        super().changeEvent(event)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._layout(self.width())

    # --- painting ---------------------------------------------------------------------------------
    def _static(self, text: str, bold: bool) -> QStaticText:
        """The text shaped once (re-shaping 200 labels on every paint cost more than drawing them)."""
        static = self._statics.get((text, bold))
        if static is None:
            if len(self._statics) > 5000:
                self._statics.clear()
            static = self._statics[(text, bold)] = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(font=self._fonts()[bold])
        return static

    def _render(self) -> QPixmap:
        """The caption and chips, drawn once per change (a step redraws the target row once, not per paint)."""
        ratio = self.devicePixelRatioF()
        pixmap = QPixmap(max(1, int(self.width() * ratio)), max(1, int(self.height() * ratio)))
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        palette = self.palette()
        regular, bold = self._fonts()
        text_height = QFontMetricsF(bold).height()
        painter.setFont(bold)
        painter.setPen(palette.color(QPalette.ColorRole.WindowText))
        painter.drawStaticText(QPointF(MARGIN, MARGIN + PAD_Y), self._static(self.caption, True))
        if not self.display_tokens:
            italic = QFont(regular)
            italic.setItalic(True)
            painter.setFont(italic)
            painter.drawText(
                QPointF(MARGIN + self._text_width(self.caption, True) + SPACING, MARGIN + PAD_Y + QFontMetricsF(italic).ascent()),
                "—",
            )
        border, link, base = (
            palette.color(QPalette.ColorRole.Mid),
            palette.color(QPalette.ColorRole.Link),
            palette.color(QPalette.ColorRole.Base),
        )
        highlight, white = QColor(HIGHLIGHT), QColor("white")
        for index, rect in enumerate(self.chip_rects):
            current = index == self.current
            painter.fillRect(rect, highlight if current else base)
            painter.setPen(highlight if current else border)
            if self.is_unknown(index):
                painter.setPen(QPen(QColor(UNKNOWN_COLOUR), 2, Qt.PenStyle.DashLine))
            painter.drawRect(rect.adjusted(0, 0, -1, -1))
            painter.setFont(bold if current else regular)
            painter.setPen(white if current else link)
            static = self._static(self.display_tokens[index], current)
            painter.drawStaticText(QPointF(rect.left() + PAD_X, rect.top() + (rect.height() - text_height) / 2), static)
            if self.forced[index]:
                painter.setFont(regular)
                painter.setPen(palette.color(QPalette.ColorRole.WindowText))
                painter.drawStaticText(QPointF(rect.right() + 1, rect.top()), self._static(FORCED_MARK, False))
        painter.end()
        return pixmap

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        self._layout(self.width())
        if self._pixmap is None or self._pixmap.deviceIndependentSize().toSize() != self.size():
            self._pixmap = self._render()
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._pixmap)
        if self.keyboard_index is not None and self.hasFocus() and self.keyboard_index < len(self.chip_rects):
            painter.setPen(self.palette().color(QPalette.ColorRole.Highlight))
            painter.drawRect(self.chip_rects[self.keyboard_index].adjusted(-2, -2, 1, 1))
        painter.end()

    def is_unknown(self, index: int) -> bool:
        return index < len(self.unknown) and self.unknown[index]

    # --- mouse and keyboard ------------------------------------------------------------------------
    def chip_at(self, position: QPointF) -> int | None:
        for index, rect in enumerate(self.chip_rects):
            if rect.contains(position):
                return index
        return None

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt's name
        index = self.chip_at(event.position())
        if index is not None and event.button() == Qt.MouseButton.LeftButton:
            self._on_chip_chosen(index)
        else:
            super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - Qt's name
        over = self.chip_at(event.position()) is not None
        self.setCursor(Qt.CursorShape.PointingHandCursor if over else Qt.CursorShape.ArrowCursor)
        super().mouseMoveEvent(event)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt's name
        key, count = event.key(), len(self.tokens)
        if event.modifiers() & (
            Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.MetaModifier
        ):
            super().keyPressEvent(event)  # Alt+Left and the like are the window's shortcuts
        elif count and key in (Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Home, Qt.Key.Key_End):
            start = self.keyboard_index if self.keyboard_index is not None else (self.current or 0)
            moved = {Qt.Key.Key_Left: start - 1, Qt.Key.Key_Right: start + 1, Qt.Key.Key_Home: 0, Qt.Key.Key_End: count - 1}[key]
            self.keyboard_index = max(0, min(count - 1, moved))
            self.update()
        elif count and key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space) and self.keyboard_index is not None:
            self._on_chip_chosen(self.keyboard_index)
        else:
            super().keyPressEvent(event)

    def _on_chip_chosen(self, index: int) -> None:
        self.keyboard_index = index
        self.token_clicked.emit(index)  # the chip's index, whatever its label shows

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            index = self.chip_at(QPointF(event.pos()))
            if index is None:
                QToolTip.showText(event.globalPos(), self.tip, self)
            else:
                mark = " (forced by you)" if self.forced[index] else ""
                if self.is_unknown(index):
                    mark += " (unknown to this model: it reads <unk>)"
                QToolTip.showText(event.globalPos(), f"#{index + 1}: {self.tokens[index]!r}{mark} — {self.tip}", self)
            return True
        return super().event(event)
