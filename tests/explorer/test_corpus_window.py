"""The Corpus tab in the window: an index built from the tab (progress, then opened), the Explore tab's token searched
for from its right-click menu (itself first, its sentence in the table with the token highlighted), a head's
sentences from the heads table's menu, a layer's joint query-key map (hover and click), a result opened in the Explore
tab at its token, and the map exported. (The controller alone: tests/explorer/controllers/test_corpus_controller.py.)"""

from __future__ import annotations

import contextlib

import pytest

from explorer.widgets.corpus_tables import HTML_TEXT
from model.kinds import AttentionKind
from tests.conftest import assert_figure
from tests.explorer.axis_room import combo_room
from tests.explorer.gui_helpers import explore_window

WAIT_MS = 60_000  # a bound on waiting for a job, not a timing claim


@pytest.fixture
def corpus_window(qtbot, open_window, toy_fr_bundle, tmp_path):
    """A window with the tiny toy-fr model, an index of 24 sentences built from the Corpus tab, and the index's
    sentence 3 decoded in the Explore tab."""
    bundle = toy_fr_bundle[0]
    window, tab = explore_window(open_window, bundle, "the cat")
    corpus_tab = window.corpus_tab
    corpus_tab.source.setEditText("toy-fr")
    corpus_tab.limit.setValue(24)
    corpus_tab.head_choice.setText("decoder:1")
    corpus_tab.folder.setText(str(tmp_path / "index"))
    assert corpus_tab.build() and corpus_tab.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: not window.controllers.corpus.building, timeout=WAIT_MS)
    assert corpus_tab.build_button.isEnabled() and "24 sentences indexed" in corpus_tab.status.text()
    assert corpus_tab.index_label.text().startswith("index: toy-fr with ")
    index = window.controllers.corpus.index
    tab.controls.source.setText(index.sentences([3])[3][0])
    tab.controls.source.returnPressed.emit()
    return window, tab, corpus_tab


def test_a_token_of_explore_finds_itself_and_a_result_opens_in_explore(qtbot, corpus_window):
    window, tab, corpus_tab = corpus_window
    assert tab.corpus_search.find_similar("encoder", 1)
    assert window.tabs.currentWidget() is corpus_tab
    table = corpus_tab.similar.table
    qtbot.waitUntil(lambda: table.rowCount() == 10, timeout=WAIT_MS)
    assert (
        corpus_tab.similar.query_label.text().startswith("Nearest to “")
        and "at encoder:2 (cosine)" in corpus_tab.similar.query_label.text()
    )
    assert (table.item(0, 1).data(0), table.item(0, 2).data(0)) == (3, 1) and table.item(0, 0).data(0) < 1e-3
    assert '<b style="color:#ff2d55">' in table.item(0, 4).data(HTML_TEXT)  # the token highlighted in its sentence
    table.cellClicked.emit(4, 0)  # the fifth nearest: its sentence opens in Explore at its token
    sentence_id, side, position = table.row_data(4)
    assert window.tabs.currentWidget() is tab and side == "encoder"
    assert window.explore.text == window.controllers.corpus.index.sentences([sentence_id])[sentence_id][0]
    assert tab.source_tokens.current == position and tab.hint.text().startswith(f"Opened sentence {sentence_id} of index")
    assert not tab.corpus_search.find_similar("decoder", len(window.explore.trace.target_tokens) - 1)  # the last: never read
    tab.word_level.setChecked(True)  # words, not the index's pieces: refused with a line
    assert not tab.corpus_search.find_similar("encoder", 0) and window.statusBar().currentMessage().startswith("The corpus index")


def test_a_heads_sentences_and_a_layers_query_key_map(qtbot, corpus_window, tmp_path):
    window, tab, corpus_tab = corpus_window
    tab.kind.setCurrentIndex(tab.kind.findData("decoder"))
    tab.views.setCurrentWidget(tab.head_table)
    qtbot.waitUntil(lambda: tab.head_table.rowCount() > 0, timeout=WAIT_MS)
    tab.corpus_search.search_head(0, 1)
    heads = corpus_tab.heads
    qtbot.waitUntil(lambda: heads.total_label.text() != "", timeout=WAIT_MS)
    assert heads.head.kind is AttentionKind.DECODER and (heads.layer_box.value(), heads.head_box.value()) == (1, 2)
    assert "sentences where decoder layer 1 head 2 has" in heads.total_label.text() and heads.sql_label.text().startswith(
        "SQL: SELECT"
    )
    heads.where.setText("first >= 0")
    heads.run_button.click()
    qtbot.waitUntil(lambda: heads.table.rowCount() == 24, timeout=WAIT_MS)
    heads.where.setText("prev >= 0.5")
    heads.run_button.click()
    qtbot.waitUntil(lambda: "unknown name 'prev'" in corpus_tab.status.text(), timeout=WAIT_MS)
    maps = corpus_tab.maps
    corpus_tab.panels.setCurrentWidget(maps)
    maps.kind_box.setCurrentIndex(maps.kind_box.findData("decoder"))
    maps.sentences_box.setValue(8)
    maps.draw_button.click()
    qtbot.waitUntil(lambda: len(maps.view.panels) == 4, timeout=WAIT_MS)
    assert len(maps.view.scatters) == 8 and "decoder L1 H1: position R²" in maps.note.toolTip()
    tip = maps.view.tip(0.0, 0.0, (0, 0))
    assert tip.startswith("<qt>&lt;s&gt; (query, position 0)<br>sentence ")
    maps.colour_box.setCurrentText("qk")
    assert len(maps.view.scatters) == 8  # drawn again in the new colours
    written = corpus_tab.export_map(str(tmp_path / "map.svg"))
    assert_figure(written, texts=("decoder L1 H1",))
    assert corpus_tab.export_map(str(tmp_path / "map.csv")).read_text(encoding="utf-8").startswith("head,method")
    panel = maps.view.panels[1]
    sentence_id, position = int(panel.sentence_ids[3]), int(panel.positions[3])
    maps.view.choose(1, 3)  # a click on a point (a decoder query) opens its sentence in Explore at its step
    assert window.tabs.currentWidget() is tab and window.explore.text == panel.sentence_texts[sentence_id]
    assert window.explore.current_step == position + 1


def test_the_boxes_filled_by_the_index_are_as_wide_as_their_items(qtbot, open_window, toy_fr_bundle, tmp_path):
    """Issue 39: the layer box read "encoder" for "encoder after layer 2": shown empty (the tab seen before an index
    was built or opened), it kept the width of no item."""
    window = open_window(toy_fr_bundle[0])
    window.resize(1400, 900)
    corpus_tab = window.corpus_tab
    window.tabs.setCurrentWidget(corpus_tab)
    for panel in (corpus_tab.maps, corpus_tab.similar):  # each box shown while it is empty
        corpus_tab.panels.setCurrentWidget(panel)
        qtbot.waitUntil(panel.isVisible, timeout=WAIT_MS)
    corpus_tab.source.setEditText("toy-fr")
    corpus_tab.limit.setValue(12)
    corpus_tab.folder.setText(str(tmp_path / "index"))
    assert corpus_tab.build()
    qtbot.waitUntil(lambda: not window.controllers.corpus.building, timeout=WAIT_MS)
    for panel, box in ((corpus_tab.similar, corpus_tab.similar.layer_box), (corpus_tab.maps, corpus_tab.maps.head_box)):
        corpus_tab.panels.setCurrentWidget(panel)
        qtbot.waitUntil(box.isVisible, timeout=WAIT_MS)
        assert box.count() > 1
        with contextlib.suppress(qtbot.TimeoutError):  # the layout settles after the panel is shown; then it must fit
            qtbot.waitUntil(lambda box=box: combo_room(box)[0] <= combo_room(box)[1], timeout=WAIT_MS)
        needed, room = combo_room(box)
        assert needed <= room, (box.currentText(), needed, room)
