"""The side-by-side view at 1024x640 with a two-line note (issue 39, found by the long run of the window's states on
2026-11-29): after the RNN replaced a transformer there, the view was given its layout's minimum, which counted each
word-wrapped label (the note, the headings) as one line, and its heatmaps got 56 px for plots of 60: cut, with no
scroll bar. The view's minimum now counts their lines at their widths, and a heatmap's is its plots' own. Replayed
through the state machine's own actions (tests/explorer/window_actions.py)."""

from __future__ import annotations

from tests.explorer.window_actions import WindowStates
from tests.explorer.window_invariants import problems


def test_the_side_by_side_heatmaps_keep_their_plots_whole_beside_a_two_line_note():
    machine = WindowStates()
    try:
        machine.first_model("default")
        machine.choose_view("Side by side")
        machine.resize((1024, 640))
        box = machine.tab.measure_box
        enabled = [i for i in range(box.count()) if box.model().item(i).isEnabled()]
        machine.choose_measure(next(position for position, i in enumerate(enabled) if box.itemText(i) == "ALTI+"))
        machine.open_model("rnn-bahdanau")
        found = problems(machine.window, machine.size)
        view = machine.tab.compare_view
        assert view.note.height() > 1.5 * view.note.fontMetrics().height(), "the note did not wrap: not the case found"
        for heatmap in view.heatmaps:
            assert heatmap.height() >= heatmap.minimumSizeHint().height()
    finally:
        machine.teardown()
    assert not found, "\n".join(found)
