"""The Circuits sub-tab in the window: the Patching sub-tab's pair computed when the sub-tab is shown, drawn as the core
found it (every node, the circuit's lines, the curve, what the run says first), a node clicked opening its head in the
model grid, saved as a figure and a graph, and a model without circuits greyed with the reason. (The controller
alone: tests/explorer/controllers/test_circuits_controller.py.)"""

from __future__ import annotations

import contextlib
import io
import json

import pyqtgraph as pg

from model.circuits.result import find_circuit_of
from model.cli.commands import main
from model.io import checkpoint
from model.io.shipped import resolve_model
from model.kinds import AttentionKind
from model.provenance.embed import read_record
from tests.conftest import assert_figure
from tests.explorer.gui_helpers import explore_window

SENTENCE, CORRUPTED = "the cat sees the dog", "the cats see the dog"
WAIT_MS = 60_000  # a bound on waiting for a job, not a timing claim


def test_the_pair_is_drawn_clicked_and_saved(qtbot, open_window, default_bundle, tmp_path):
    window, tab = explore_window(open_window, default_bundle, SENTENCE)
    view = tab.interventions.view
    tab.views.setCurrentWidget(view)
    view.patching.corrupted.setText(CORRUPTED)
    view.patching.corrupted.editingFinished.emit()
    circuits = window.controllers.circuits
    assert circuits.result is None and not circuits.running  # the Patching sub-tab shown: no circuit yet
    view.show_tool("circuits")
    qtbot.waitUntil(lambda: circuits.result is not None and not circuits.running and view.circuits.drawn, timeout=WAIT_MS)
    shown = view.circuits
    expected = find_circuit_of(default_bundle, SENTENCE, CORRUPTED)
    assert shown.result is circuits.result and shown.result.circuit.size == expected.circuit.size
    scatter = next(item for item in shown.diagram.getPlotItem().items if isinstance(item, pg.ScatterPlotItem))
    assert len(scatter.points()) == len(expected.graph.nodes)
    lines = [item for item in shown.diagram.getPlotItem().items if isinstance(item, pg.PlotCurveItem)]
    assert 0 < len(lines) <= expected.circuit.size
    assert shown.summary.text().startswith(f"circuit: {expected.circuit.size} edges")
    assert shown.curve.getPlotItem().titleLabel.text == f"{expected.circuit.size} edges keep {expected.circuit.faithfulness:.0%}"
    assert "“the cat sees the dog” → “the cats see the dog”" in shown.pair.text()
    point = next(p for p in scatter.points() if p.data() == "decoder.2.cross.1")
    scatter.sigClicked.emit(scatter, [point], None)  # a click on layer 3's cross head 2
    assert tab.views.currentWidget() is tab.grid
    state = window.controllers.explore.view
    assert (state.kind, state.layer, state.head) == (AttentionKind.CROSS, 2, 1)
    tab.views.setCurrentWidget(view)
    view.show_tool("circuits")
    qtbot.waitUntil(lambda: circuits.result is not None and not circuits.running and view.circuits.drawn, timeout=WAIT_MS)
    view.save_requested.emit("circuits", str(tmp_path / "circuit.svg"))
    assert_figure(tmp_path / "circuit.svg", texts=("Circuit of", "X2"))
    view.save_requested.emit("circuits", str(tmp_path / "circuit.json"))
    assert json.loads((tmp_path / "circuit.json").read_text(encoding="utf-8"))["graph"]["circuit_edges"] == expected.circuit.size
    record = read_record(tmp_path / "circuit.json")  # the circuit command of the pair, as the command line records it
    assert record.command[:7] == ["circuit", "--model", default_bundle.path, "--clean", SENTENCE, "--corrupt", CORRUPTED]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*record.command, "--out", str(tmp_path / "cli.json")]) == 0
    assert read_record(tmp_path / "cli.json").to_json() == record.to_json()


def test_a_model_without_circuits_greys_the_sub_tab(qtbot, open_window):
    _window, tab = explore_window(open_window, checkpoint.load(resolve_model("tagger")), SENTENCE)
    tools = tab.interventions.view.tools
    index = tools.indexOf(tab.interventions.view.circuits)
    assert not tools.isTabEnabled(index) and "no decoder" in tools.tabToolTip(index)
