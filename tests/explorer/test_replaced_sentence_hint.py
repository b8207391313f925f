"""A reading the new model cannot show, and a sentence it cannot read (issue 39, found by the long run of the window's
states on 2026-11-29, sequence 319): after ALTI on the tagger, opening the reverse model showed cross-attention's
weights with ALTI still in the Reading box, and the hint said only why the sentence was replaced: the why had replaced
the note "ALTI has no cross-attention …: showing the attention weights" (or, depending on which came last, the other
way round). The hint now keeps the why first and each drawing's note after it, until another sentence or model is
asked for. Replayed through the state machine's own actions (tests/explorer/window_actions.py)."""

from __future__ import annotations

from tests.explorer.window_actions import WindowStates
from tests.explorer.window_invariants import problems


def _choose(machine: WindowStates, box, text: str) -> int:
    """The index of ``text`` among ``box``'s enabled items (what the state machine's rules count in)."""
    enabled = [i for i in range(box.count()) if box.model().item(i) is None or box.model().item(i).isEnabled()]
    return next(position for position, i in enumerate(enabled) if box.itemText(i) == text)


def test_the_hint_says_why_the_sentence_was_replaced_and_that_the_reading_is_the_weights():
    machine = WindowStates()
    try:
        machine.first_model("tagger")
        machine.choose_measure(_choose(machine, machine.tab.measure_box, "ALTI"))
        machine.open_model("reverse")
        found = problems(machine.window, machine.size)
        hint = machine.tab.hint.text()
        assert machine.tab.measure_box.currentText() == "ALTI" and machine.tab.kind.currentText().startswith("cross")
        assert hint.startswith("100% of the pieces of") and "showing the attention weights" in hint, hint
        machine.choose_head(0)  # another drawing: the why stays
        assert machine.tab.hint.text().startswith("100% of the pieces of")
        machine.type_sentence("a b c")  # another sentence asked for: read as typed, no why
        assert not machine.tab.hint.text().startswith("100% of the pieces of")
    finally:
        machine.teardown()
    assert not found, "\n".join(found)
