"""Pieces outside the model's vocabulary: the source chips border them and say why, the status bar names how many
(in one line with any other note, so that none hides another)."""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QToolTip

from explorer.widgets.tokens_view import TokensView
from tests.explorer.gui_helpers import explore_window


def test_unknown_pieces_are_bordered_in_the_chips_and_counted_in_the_status_bar(open_window, toy_fr_bundle):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the cat € sees the dog €")
    chips = tab.source_tokens
    flagged = [token for index, token in enumerate(chips.tokens) if chips.is_unknown(index)]
    assert flagged == ["<unk>", "<unk>"]
    assert chips.unknown == tab.explore.trace.source_unknown.tolist()
    message = window.statusBar().currentMessage()
    assert message.startswith("2 of the sentence's ") and "are unknown to this model (<unk>)" in message
    tab.word_level.setChecked(True)
    assert [t for i, t in enumerate(chips.tokens) if chips.is_unknown(i)] == ["<unk>", "<unk>"]  # words too


def test_a_chip_tooltip_says_the_piece_is_unknown(qtbot, monkeypatch):
    view = TokensView("Source pieces:", "the pieces the encoder reads")
    qtbot.addWidget(view)
    view.resize(400, 40)
    view.set_tokens(["▁a", "<unk>", "</s>"], unknown=[False, True, False])
    shown = []
    monkeypatch.setattr(QToolTip, "showText", lambda _position, text, *_args: shown.append(text))
    for index in range(3):
        centre = view.chip_rects[index].center()
        view.event(QHelpEvent(QHelpEvent.Type.ToolTip, QPointF(centre).toPoint(), view.mapToGlobal(centre.toPoint())))
    assert shown[1] == "#2: '<unk>' (unknown to this model: it reads <unk>) — the pieces the encoder reads"
    assert "unknown" not in shown[0] and "unknown" not in shown[2]
    view.set_tokens(["▁a", "<unk>"], unknown=[True])  # flags that do not match the tokens are not used
    assert view.unknown == [] and not view.is_unknown(0)
