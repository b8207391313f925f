"""The query-key maps say what their colours mean (issue 39: coloured by position, they had no colour bar): a colour
bar of the positions (0 to the largest, in the points' colour map), a legend of the tokens or of query and key
otherwise, as the exported figure's legend does."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from explorer.widgets.qk_map_view import QKMapView
from model.figures.attention import FigureOptions
from model.figures.qk_map import MapPanel


def _panel(title: str) -> MapPanel:
    rng = np.random.default_rng(0)
    n = 12
    return MapPanel(
        title=title,
        xy=rng.normal(size=(n, 2)),
        is_query=np.arange(n) % 2 == 0,
        positions=np.arange(n) % 6,
        tokens=["▁the", "▁cat", "<s>", "▁chat", "▁sees", "</s>"] * 2,
        sentence_ids=np.zeros(n, int),
        row_ids=np.arange(n),
    )


def _bars(view: QKMapView) -> list[pg.ColorBarItem]:
    return [item for item in view.scene().items() if isinstance(item, pg.ColorBarItem)]


def _legend_texts(view: QKMapView) -> list[str]:
    return [
        label.item.toPlainText()
        for item in view.scene().items()
        if isinstance(item, pg.LegendItem)
        for _sample, label in item.items
    ]


def test_positions_get_a_colour_bar_and_tokens_or_sides_a_legend(qtbot):
    view = QKMapView()
    qtbot.addWidget(view)
    view.set_panels([_panel("decoder L1 H1"), _panel("decoder L1 H2")], "position")
    (bar,) = _bars(view)
    assert bar.levels() == pytest.approx((0.0, 5.0)) and any(
        "position" in bar.getAxis(side).labelText for side in ("left", "right")
    )
    colours = FigureOptions().colours()
    first, last = bar.colorMap().map([0.0, 1.0], mode="byte")
    assert np.allclose(first[:3], np.round(255 * np.array(colours(0.0)[:3])), atol=2)
    assert np.allclose(last[:3], np.round(255 * np.array(colours(1.0)[:3])), atol=2)
    view.set_panels([_panel("decoder L1 H1")], "token")
    assert _bars(view) == [] and {"the", "cat", "</s>"} <= set(_legend_texts(view))
    assert "<s>" in _legend_texts(view)  # a piece that reads as a tag is shown as text
    view.set_panels([_panel("decoder L1 H1")], "qk")
    assert _bars(view) == [] and set(_legend_texts(view)) == {"query", "key"}
