"""The circuit diagram's lines (model/circuits/layout.py): on the default model's circuits none passes over a node it
does not join (a line along the row of a layer's heads had run through the others, so a head looked joined to the
feed-forward block when it was not: the newcomer's finding); on the 8-head copy and reverse models, whose rows leave
no room for every line to clear every node, no line is nearer a node than its straight line was, and a third or fewer
pass over one; a line with nothing in its way stays straight; an arc keeps its ends."""

from __future__ import annotations

import numpy as np
import pytest

from model.circuits.layout import CLEARANCE, OVER_A_NODE, _clearance, circuit_lines, line_path, line_paths, node_positions
from model.circuits.result import find_circuit_of
from model.io import checkpoint
from model.io.shipped import resolve_model


def test_a_line_with_nothing_in_its_way_stays_straight_and_one_in_the_way_bends():
    others = np.array([[5.0, 5.0]])
    assert line_path((0.0, 0.0), (4.0, 0.0), others).shape == (2, 2)
    bent = line_path((0.0, 0.0), (4.0, 0.04), np.array([[2.0, 0.0]]))  # a node on the way
    assert len(bent) > 2 and np.allclose(bent[0], (0.0, 0.0)) and np.allclose(bent[-1], (4.0, 0.04))
    assert _clearance(bent, np.array([[2.0, 0.0]])) >= CLEARANCE


@pytest.mark.parametrize(("name", "clean", "corrupted", "step"), [
    ("default", "the cat sees the dog", "the cats see the dog", 2),
    ("default", "the cat sees the dog", "the cats see the dog", None),
    ("copy", "a m b f p j", "a m b f p q", None),
    ("reverse", "a m b f p j", "a m b f p q", None),
])  # fmt: skip
def test_lines_keep_off_the_nodes_they_do_not_join(name, clean, corrupted, step):
    result = find_circuit_of(checkpoint.load(resolve_model(name)), clean, corrupted, step)
    positions = node_positions(result.graph)
    lines = circuit_lines(result.graph, result.scores, result.circuit.edges)
    names = list(positions)
    points = np.array([positions[node] for node in names])
    drawn, straight = [], []
    for line, path in zip(lines, line_paths(lines, positions), strict=True):
        others = points[[node not in (line.sender, line.receiver) for node in names]]
        ends = np.array([positions[line.sender], positions[line.receiver]])
        drawn.append(_clearance(path, others))
        straight.append(_clearance(ends, others))
        assert np.allclose(path[0], ends[0]) and np.allclose(path[-1], ends[1])
    drawn, straight = np.array(drawn), np.array(straight)
    assert np.all(drawn >= straight - 1e-9)
    if name == "default":
        assert np.all(drawn >= OVER_A_NODE)
    else:
        assert (straight < OVER_A_NODE).sum() >= 3 * (drawn < OVER_A_NODE).sum() > 0
