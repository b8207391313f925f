"""The circuits controller without a window (and without Qt): the Patching sub-tab's pair computed only while the
Circuits sub-tab is shown and equal to the core's, options changed computed again, a node opening its head (and the
circuit's step) in the Explore tab, saving through the core, and bad input or a model without circuits refused with one
line. (The view: tests/explorer/test_circuits_window.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

from model.circuits.result import Options, find_circuit_of
from model.io import checkpoint
from model.io.shipped import resolve_model
from model.kinds import AttentionKind
from tests.explorer.controllers.recording import WAIT_S, Recorder

SENTENCE, CORRUPTED = "the cat sees the dog", "the cats see the dog"
EVENTS = ("ready", "message", "running_changed", "progress", "pair_shown", "node_opened")


@pytest.fixture
def opened(controllers, default_bundle):
    controllers.explore.set_model(default_bundle)
    controllers.explore.translate(SENTENCE)
    return controllers.circuits, Recorder(controllers.circuits, *EVENTS)


def test_the_pair_is_computed_while_shown_and_equals_the_core(controllers, opened, default_bundle):
    circuits, events = opened
    assert circuits.unavailable() == ""
    assert not circuits.want(SENTENCE, CORRUPTED) and not circuits.running  # hidden: nothing computed
    assert events.of("pair_shown")[-1] == (SENTENCE, CORRUPTED, None)
    assert circuits.set_active(True)
    assert controllers.inbox.wait_until(lambda: not circuits.running, WAIT_S)
    result = circuits.result
    expected = find_circuit_of(default_bundle, SENTENCE, CORRUPTED)
    np.testing.assert_allclose(result.scores, expected.scores, atol=1e-5)
    assert result.circuit.size == expected.circuit.size and result.step == 0
    assert any(text.startswith("Circuit: ") for (text,) in events.of("progress"))
    assert not circuits.set_active(True)  # computed already: nothing again
    # another option: computed again, with it
    assert circuits.choose(method="EAP")
    assert controllers.inbox.wait_until(lambda: not circuits.running, WAIT_S)
    assert circuits.result.options.method == "EAP" and circuits.result.method_name().startswith("EAP (")


def test_a_node_opens_its_head_and_the_circuits_step(controllers, opened):
    circuits, events = opened
    circuits.node_opened.connect(lambda *_head: circuits.set_active(False))  # as the tab does: the grid shown instead
    circuits.set_active(True)
    circuits.want(SENTENCE, CORRUPTED)
    assert controllers.inbox.wait_until(lambda: not circuits.running, WAIT_S)
    assert controllers.explore.trace.n_steps == 6
    assert circuits.open_node("decoder.2.cross.1")
    assert not circuits.running and circuits.result is not None  # the step moved, the circuit kept
    view = controllers.explore.view
    assert (view.kind, view.layer, view.head) == (AttentionKind.CROSS, 2, 1)
    assert controllers.explore.trace.n_steps == 1  # the circuit's step: the first ("le" over "les")
    assert events.of("node_opened")[-1] == (AttentionKind.CROSS, 2, 1)
    assert not circuits.open_node("decoder.2.mlp")
    assert "not a head" in events.of("message")[-1][0]


def test_saving_goes_through_the_core(controllers, opened, tmp_path):
    circuits, events = opened
    assert circuits.save(tmp_path / "none.json") is None and events.of("message")[-1] == ("No circuit to save yet.",)
    circuits.set_active(True)
    circuits.want(SENTENCE, CORRUPTED)
    assert controllers.inbox.wait_until(lambda: not circuits.running, WAIT_S)
    written = circuits.save(tmp_path / "c.json")
    assert written is not None and json.loads(written.read_text(encoding="utf-8"))["graph"]["step"] == 1
    assert circuits.save(tmp_path / "c.png") is not None
    assert circuits.save(tmp_path / "c.txt") is None and "could not be saved" in events.of("message")[-1][0]
    assert not (tmp_path / "c.txt").exists()


def test_bad_input_and_a_model_without_circuits_are_one_line(controllers, opened, default_bundle):
    circuits, events = opened
    circuits.set_active(True)
    assert not circuits.want(SENTENCE, "")  # a sentence still to type: nothing, silently
    assert circuits.want(SENTENCE, "the small cat sees the dog")
    assert controllers.inbox.wait_until(lambda: not circuits.running, WAIT_S)
    assert circuits.result is None
    assert "The circuit could not be found: " in events.of("message")[-1][0] and "equal counts" in events.of("message")[-1][0]
    assert not circuits.find(SENTENCE, "  ") and "empty" in events.of("message")[-1][0]
    controllers.explore.set_model(checkpoint.load(resolve_model("tagger")))
    assert "an encoder-only model has no decoder" in circuits.unavailable()
    assert not circuits.want(SENTENCE, CORRUPTED) and not circuits.running
    assert not circuits.find(SENTENCE, CORRUPTED) and "no decoder" in events.of("message")[-1][0]
    assert circuits.options == Options()
