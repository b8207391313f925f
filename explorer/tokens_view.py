"""A row of tokens as clickable chips: the source pieces, or the target so far with the current
step highlighted and forced tokens marked. Clicking a target token selects that step."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel


class TokensView(QLabel):
    token_clicked = Signal(int)  # index of the token

    def __init__(self, caption: str, tip: str):
        super().__init__()
        self.caption = caption
        self.tokens: list[str] = []
        self.current: int | None = None
        self.forced: list[bool] = []
        self.setWordWrap(True)
        self.setTextFormat(Qt.RichText)
        self.setTextInteractionFlags(Qt.TextBrowserInteraction)
        self.setToolTip(tip)
        self.linkActivated.connect(lambda link: self.token_clicked.emit(int(link)))
        self.set_tokens([])

    def set_tokens(self, tokens: list[str], current: int | None = None, forced: list[bool] | None = None) -> None:
        self.tokens, self.current = list(tokens), current
        self.forced = list(forced) if forced is not None else [False] * len(self.tokens)
        chips = []
        for index, token in enumerate(self.tokens):
            style = "padding:2px; text-decoration:none;"
            if index == current:
                style += "background:#ff2d55; color:white; font-weight:bold;"
            mark = "<sup>✎</sup>" if self.forced[index] else ""
            chips.append(f'<a href="{index}" style="{style}">&nbsp;{html.escape(token)}&nbsp;</a>{mark}')
        body = " ".join(chips) if chips else "<i>—</i>"
        self.setText(f"<b>{html.escape(self.caption)}</b> {body}")
