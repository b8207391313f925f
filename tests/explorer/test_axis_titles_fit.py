"""Axis titles fit their axes or say they are cut (issue 39; seen under Xvfb on 2026-11-29): at 1280x720 the logit
attribution's heads grid is 29 px high, and its axis title "layer, attention (every 3rd)" (163 px) and colour bar title
"contribution to the logit" (142 px, an 86 px bar) were cut at both ends with no sign. A title longer than its axis is
now cut with "…" and centred again (pyqtgraph centres a title only on a resize: a shortened one sat half off its axis)
(explorer/widgets/token_axis.py ``fit_axis_label``), and the window's invariants check that every axis title of every
plot shown fits its axis and is drawn on it (tests/explorer/window_invariants.py ``axis_titles_clipped``). Replayed
through the state machine's own actions."""

from __future__ import annotations

import pytest

from tests.explorer.window_actions import WindowStates
from tests.explorer.window_invariants import problems

pytestmark = pytest.mark.long  # tests/conftest.py: run first (the curves over training take seconds)


def test_the_attribution_grid_s_titles_fit_at_1280_by_720():
    machine = WindowStates()
    try:
        machine.first_model("default")
        machine.type_sentence("the black cat sees the small dog")
        machine.choose_view("Interventions")
        machine.choose_tool(2)  # logit attribution
        machine.resize((1280, 720))
        found = problems(machine.window, machine.size)
        heads = machine.tab.interventions.view.attribution.heads
        titles = heads.plot.getAxis("left").labelText, heads.color_bar.getAxis("left").labelText
    finally:
        machine.teardown()
    assert not found, "\n".join(found)
    # whole, or cut and saying so (the Interventions view is as tall as its tallest sub-tab, the Circuits one: the tab
    # scrolls at 1280×720 and the grid has room for them)
    assert all(title.endswith("…") or title in ("layer, attention", "contribution to the logit") for title in titles), titles


def test_a_title_changed_after_a_resize_is_centred_on_its_axis():
    """The long run (seed 162156249023184187266022690301842441184): after a phase change at 1024x640 the focus' colour
    bar took the title "difference of attention weight", which fits its axis but was drawn from 27 px before its start
    (pyqtgraph centres a title only on a resize). A title set on a laid-out axis is centred at once."""
    machine = WindowStates()
    try:
        machine.first_model("default")  # the copy model's curves lay the focus out otherwise: no failure there
        machine.resize((1024, 640))
        machine.toggle_words()
        machine.phase_change(0)  # computes the curves over training, then clicks the first phase change
        found = problems(machine.window, machine.size)
        title = machine.tab.focus.color_bar.getAxis("left").labelText
    finally:
        machine.teardown()
    assert not found, "\n".join(found)
    assert title == "difference of attention weight" or title.endswith("…")  # whole, or cut and saying so
