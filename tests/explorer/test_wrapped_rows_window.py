"""A Target row wrapped onto many lines at 1024x640 (issue 39, found by the long run of the window's states): an early
snapshot translates a sentence of unknown words into a six-line row, and a phase change clicked adds the hint's line.
The tab's layout gave its splitters less than their minimum (a layout's minimum does not count rows that wrap), and
the candidates view was allowed below its plot's own minimum: the plot was cut (1x3 px) with no scroll bar. The tab's
minimum now counts the rows at its width, so the main window scrolls instead; and the candidates view is never lower
than its plot. Replayed through the state machine's own actions (tests/explorer/window_actions.py)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea

from tests.explorer.window_actions import WindowStates
from tests.explorer.window_invariants import graphics_clipped, problems

SENTENCE = "«quoted» small xylophone . sings in 42 sees old eats xylophone horse , xylophone"
VIEWS = ("Lines", "Model grid", "Heads", "Side by side", "Over training")


def test_a_wrapped_target_row_at_1024_by_640_cuts_nothing():
    machine, found = WindowStates(), []

    def check() -> None:
        main = machine.tab.main_splitter  # a layout that gives it less than its minimum cuts what it holds
        squeezed = [f"the splitters are {main.height()} px high, need {main.minimumSizeHint().height()}"]
        for problem in problems(machine.window, machine.size) + squeezed * (main.height() < main.minimumSizeHint().height()):
            found.append(f"{problem}\n    after: {' → '.join(machine.actions)}")

    try:
        machine.first_model("default")
        machine.snapshot(1)  # an early snapshot: the unknown words give a long, wrapped translation
        machine.type_sentence(SENTENCE)
        machine.phase_change(2)  # two snapshots' difference: the hint's line shows
        machine.resize((1024, 640))
        check()
        tab = machine.tab
        assert tab.target_tokens.height() > 3 * tab.source_tokens.minimumSizeHint().height(), "the row did not wrap"
        assert not graphics_clipped(tab.candidates)
        plot = tab.candidates.getPlotItem().effectiveSizeHint(Qt.SizeHint.MinimumSize)
        assert tab.candidates.minimumSizeHint().height() >= plot.height(), "the candidates view may be lower than its plot"
        for view in VIEWS:  # every view at this size, after the same sequence (Over training is shown)
            machine.choose_view(view)
            check()
        machine.choose_view("Lines")  # the splitters' minimum and the rows exceed 640 px: the window scrolls
        area = machine.window.centralWidget()
        assert isinstance(area, QScrollArea) and area.verticalScrollBar().maximum() > 0, "what does not fit scrolls"
    finally:
        machine.teardown()
    assert not found, "\n".join(found)
