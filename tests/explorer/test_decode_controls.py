"""The Explore tab's Source field (explorer/tabs/explore/decode_controls.py, offscreen): it takes text longer than
QLineEdit's default limit and its tooltip says when it is full."""

from __future__ import annotations


def test_the_source_field_takes_long_text_and_says_when_it_is_full(qtbot):
    from explorer.tabs.explore.decode_controls import MAX_SOURCE_CHARS, DecodeControls

    controls = DecodeControls()
    qtbot.addWidget(controls)
    controls.source.setText("a " * 20_000)  # 40,000 characters: more than QLineEdit's default 32,767
    assert len(controls.source.text()) == 40_000
    assert "at most" not in controls.source.toolTip()
    controls.source.setText("b" * (MAX_SOURCE_CHARS + 10))
    assert len(controls.source.text()) == MAX_SOURCE_CHARS
    assert f"at most {MAX_SOURCE_CHARS:,} characters" in controls.source.toolTip()
