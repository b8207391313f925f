"""The curves over training stay inside their view (issue 39, found by the long run of the window's states on
2026-11-29): after a resize to 1667x927, pyqtgraph's central item kept an earlier geometry, 1x7 px larger than the view
(plots 1172x321 in a 1171x314 view: cut, no scroll bar), though the view's minimum was right. The curves' view now fits
its plots to itself whenever it asks for their minimum (after each drawing and each resize). Replayed through the state
machine's own actions (tests/explorer/window_actions.py)."""

from __future__ import annotations

from tests.explorer.window_actions import WindowStates
from tests.explorer.window_invariants import problems


def test_the_curves_are_laid_out_in_the_view_they_have_after_a_resize():
    machine = WindowStates()
    try:
        machine.first_model("copy")
        machine.toggle_words()
        machine.choose_view("Over training")
        machine.step("back", 115)
        machine.type_sentence("The black cat, who costs 5 euros, sees the small dog.")
        machine.resize((1667, 927))
        found = problems(machine.window, machine.size)
    finally:
        machine.teardown()
    assert not found, "\n".join(found)
