"""Every plot's axis title fits its axis (issue 39; found by the long run of the window's states on 2026-11-29, seed
155405497150339401102040498127717012496): at 1128x713 the report card view's "mean p(reference)" (116 px) stood on a
79 px axis, cut at both ends with no sign. Every axis of the app now cuts its title with "…" to its length and centres
it again (explorer/widgets/axis_titles.py). Replayed through the state machine's own actions."""

from __future__ import annotations

from tests.explorer.window_actions import WindowStates
from tests.explorer.window_invariants import problems


def test_the_report_card_s_axis_titles_fit_after_a_resize():
    machine = WindowStates()
    try:
        machine.first_model("copy")
        machine.choose_view("Over training")
        machine.open_model("default")
        machine.type_sentence("my 漢字")
        machine.resize((1872, 1085))
        machine.resize((1128, 713))
        found = problems(machine.window, machine.size)
    finally:
        machine.teardown()
    assert not found, "\n".join(found)
