"""The Explore tab driven by traces of other model families: an encoder-only trace (encoder self-attention
only, no steps) and a decoder-only trace (decoder self-attention only, no source). The tab offers only the
kinds there are, every view (grid, focus, lines, head table, tokens, candidates) shows them, exports write
them, and nothing raises."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QSettings

from model.kinds import AttentionKind, SelectionError
from tests.model.test_kinds_and_families import decoder_only_trace, encoder_only_trace


@pytest.fixture
def explore_tab(qtbot, tmp_path):
    from explorer.app import make_application
    from explorer.controllers.window import WindowControllers
    from explorer.qt_runner import gui_runner
    from explorer.tabs.explore.tab import ExploreTab

    make_application()
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)
    controllers = WindowControllers.build(gui_runner())
    tab = ExploreTab(controllers, settings)
    qtbot.addWidget(tab)
    tab.resize(1200, 800)
    tab.show()
    yield controllers.explore, tab
    tab.close()
    assert controllers.close(60)


@pytest.mark.parametrize("make, kind", [(encoder_only_trace, AttentionKind.ENCODER), (decoder_only_trace, AttentionKind.DECODER)])
def test_views_show_what_a_trace_has_and_hide_what_it_lacks(explore_tab, qtbot, tmp_path, make, kind):
    session, tab = explore_tab
    trace = make()
    session.trace = trace
    session.trace_changed.emit(trace)
    assert [tab.kind.itemData(i) for i in range(tab.kind.count())] == [kind]  # no other kind is offered
    assert tab.current_kind() is kind and tab.shown_state.kind is kind
    n_layers, n_heads = trace.matrix(kind).shape[:2]
    assert tab.layer_box.maximum() == n_layers and tab.head_box.count() == n_heads + 3
    queries, keys = trace.axis_labels(kind)
    assert tab.focus.values.shape == (len(queries), len(keys))
    np.testing.assert_allclose(tab.focus.values, trace.matrix(kind)[0].mean(0), rtol=1e-6)
    assert tab.source_tokens.tokens == trace.source_tokens and tab.target_tokens.tokens == trace.target_tokens
    for view in (tab.grid, tab.lines, tab.head_table):  # each draws it (Side by side needs a second model)
        tab.views.setCurrentWidget(view)
        qtbot.wait(20)
    assert tab.head_table.rowCount() == n_layers * n_heads
    tab.head_box.setCurrentIndex(1)  # head 2
    tab.layer_box.setValue(n_layers)
    np.testing.assert_allclose(tab.focus.values, trace.matrix(kind)[n_layers - 1, 1], rtol=1e-6)
    tab.word_level.setChecked(True)
    assert tab.shown.level == "word" and tab.shown.kinds == (kind,)
    for view in ("focus", "grid", "lines"):
        path = tab.export_view(view, tmp_path / f"{view}.png")
        assert path.stat().st_size > 500
    with pytest.raises(SelectionError, match="no candidates at this step"):  # these traces hold none
        tab.export_view("candidates", tmp_path / "candidates.png")
    written = tab.export_all_to(tmp_path / "all")
    assert written and not any(
        path.name.startswith(("cross", "encoder" if kind is AttentionKind.DECODER else "decoder")) for path in written
    )
