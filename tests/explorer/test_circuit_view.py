"""The Circuits sub-tab's view alone: a result drawn in turns of the event loop (the diagram's lines, its nodes, the
curve, the summary; ``drawn`` once all are), a result replaced before its turns came drawn never, a result cleared
mid-drawing left clear, a view gone before its turns never drawn into."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
import shiboken6

from explorer.widgets.circuit_view import CircuitView
from model.circuits.result import find_circuit_of

CLEAN, CORRUPTED = "the cat sees the dog", "the cats see the dog"


@pytest.fixture(scope="module")
def results(default_bundle):
    """Two circuits of the same pair: at the first step they differ, and at the verb's."""
    return find_circuit_of(default_bundle, CLEAN, CORRUPTED), find_circuit_of(default_bundle, CLEAN, CORRUPTED, step=2)


def items(plot: pg.PlotWidget, kind: type) -> list:
    return [item for item in plot.getPlotItem().items if isinstance(item, kind)]


def test_a_result_is_drawn_in_turns(qtbot, results):
    view = CircuitView()
    qtbot.addWidget(view)
    first, _second = results
    view.set_result(first)
    assert not view.drawn and items(view.diagram, pg.PlotCurveItem) == []  # nothing yet: the window answers first
    qtbot.waitUntil(lambda: view.drawn, timeout=10_000)
    assert len(items(view.diagram, pg.ScatterPlotItem)[0].points()) == len(first.graph.nodes)
    assert items(view.diagram, pg.PlotCurveItem) and view.summary.text().startswith(f"circuit: {first.circuit.size} edges")
    assert view.curve.getPlotItem().titleLabel.text == f"{first.circuit.size} edges keep {first.circuit.faithfulness:.0%}"


def test_a_result_replaced_before_its_turns_is_never_drawn(qtbot, results):
    view = CircuitView()
    qtbot.addWidget(view)
    first, second = results
    view.set_result(first)
    view.set_result(second)
    qtbot.waitUntil(lambda: view.drawn, timeout=10_000)
    qtbot.wait(20)  # the first result's turns, had any been left, would have come by now
    assert len(items(view.diagram, pg.ScatterPlotItem)) == 1  # one set of nodes: the second result's
    assert view.curve.getPlotItem().titleLabel.text == f"{second.circuit.size} edges keep {second.circuit.faithfulness:.0%}"
    assert view.summary.text().startswith(f"circuit: {second.circuit.size} edges")
    view.set_result(first)
    qtbot.waitUntil(lambda: len(items(view.diagram, pg.PlotCurveItem)) > 0, timeout=10_000)
    view.set_result(None)  # cleared between two turns
    qtbot.wait(20)
    assert view.drawn and view.diagram.getPlotItem().items == [] and view.summary.text() == ""


def test_a_view_gone_before_its_turns_is_not_drawn_into(qtbot, results):
    view = CircuitView()
    view.set_result(results[0])
    shiboken6.delete(view)  # the window closed between the result and its turns
    qtbot.wait(20)  # a turn drawing into the deleted view would raise here (pytest-qt fails on it)
