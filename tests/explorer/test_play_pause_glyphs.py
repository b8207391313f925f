"""The timeline bar's Play/Pause button draws what it says (issue 39): its text has no character the button's font lacks
(DejaVu Sans has no "⏸", U+23F8: it drew a box), and its symbol is the style's standard media icon."""

from __future__ import annotations

from PySide6.QtGui import QFontMetrics

from explorer.widgets.timeline_bar import TimelineBar


def _missing(button) -> list[str]:
    metrics = QFontMetrics(button.font())
    return [character for character in button.text() if not metrics.inFontUcs4(ord(character))]


def test_play_and_pause_have_no_missing_glyph_and_an_icon(qtbot):
    bar = TimelineBar()
    qtbot.addWidget(bar)
    for playing, word in ((True, "Pause"), (False, "Play")):
        bar.set_playing(playing)
        button = bar.play_button
        assert word in button.text() and _missing(button) == [], button.text()
        assert not button.icon().isNull()
