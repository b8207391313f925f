"""Where the node-link diagram of a circuit puts each node, and which lines it draws (the figure, model/figures/
circuit.py, and the window's view draw the same).

Layers are rows, from the embeddings at the bottom to the logits at the top; the encoder stands on the left and the
decoder on the right, so cross-attention's key/value edges run across. In a row, a layer's heads side by side: the
encoder's self-attention heads, then its feed-forward block half a row up; the decoder's self-attention heads, its
cross-attention heads a third of a row up, its feed-forward block two thirds up. Edges split by source position are
drawn as one line per pair of nodes, their scores summed. A line that would pass over a node it does not join (the
heads of a row lie on it: X1 → the feed-forward block ran through X2 to X4, so X4 looked joined to it) is bent into
an arc around it (``line_path``): the smallest bend, to either side, that clears every other node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.circuits.graph import CircuitGraph, Node

GAP = 2.0  # between the encoder's columns and the decoder's
CLEARANCE = 0.15  # (columns or rows) a line passing nearer than this to a node it does not join is bent around it
OVER_A_NODE = 0.1  # nearer than this, a line is drawn over the node's marker
BENDS = (0.15, -0.15, 0.25, -0.25, 0.35, -0.35, 0.5, -0.5, 0.7, -0.7, 0.9, -0.9)  # arcs tried: height, either side
PATH_POINTS = 25  # points along an arc


@dataclass(frozen=True)
class Line:
    sender: str
    receiver: str
    input: str  # "qkv", "q", "kv", "in"
    score: float  # the summed score of its edges
    edges: int  # how many edges it stands for


def node_positions(graph: CircuitGraph) -> dict[str, tuple[float, float]]:
    """Each node's (x, y): x in columns (heads one apart), y in layers (the embeddings at 0)."""
    heads = graph.parts.n_heads
    decoder_left = heads + 1 + GAP
    positions: dict[str, tuple[float, float]] = {}
    for node in graph.nodes.values():
        positions[node.name] = _position(node, heads, decoder_left, graph.parts.n_decoder_layers)
    return positions


def _position(node: Node, heads: int, decoder_left: float, decoder_layers: int) -> tuple[float, float]:
    left = 0.0 if node.side == "encoder" else decoder_left
    middle = left + (heads - 1) / 2
    if node.kind == "embed":
        return middle, 0.0
    if node.kind == "logits":
        return middle, decoder_layers + 1.0
    row = (node.layer or 0) + 1.0
    if node.kind == "mlp":
        return left + heads, row + (0.5 if node.side == "encoder" else 0.66)
    return left + (node.head or 0), row + (0.33 if node.kind == "cross" else 0.0)


def circuit_lines(graph: CircuitGraph, scores: np.ndarray, chosen: np.ndarray) -> list[Line]:
    """The lines of the chosen edges (one per sender, receiver and input), from the smallest |score| up (drawn last,
    the largest lies on top)."""
    summed: dict[tuple[str, str, str], list[float]] = {}
    for index in np.flatnonzero(chosen):
        edge = graph.edges[index]
        entry = summed.setdefault((edge.sender, edge.receiver, edge.input), [0.0, 0.0])
        entry[0] += float(scores[index])
        entry[1] += 1
    lines = [Line(sender, receiver, put, score, int(count)) for (sender, receiver, put), (score, count) in summed.items()]
    return sorted(lines, key=lambda line: abs(line.score))


def line_widths(lines: list[Line], thinnest: float = 0.6, widest: float = 6.0) -> list[float]:
    """Each line's width, by |score| relative to the largest (a square root, so that small edges stay visible)."""
    largest = max((abs(line.score) for line in lines), default=0.0) or 1.0
    return [thinnest + (widest - thinnest) * float(np.sqrt(abs(line.score) / largest)) for line in lines]


def line_path(start: tuple[float, float], end: tuple[float, float], others: np.ndarray) -> np.ndarray:
    """The points [P, 2] a line from ``start`` to ``end`` is drawn through: straight when it keeps ``CLEARANCE`` from
    every node of ``others`` [N, 2] (the nodes it does not join); else the first arc of ``BENDS`` that does, or of
    the line and the arcs the one that keeps farthest from them (rows of heads a third of a row apart, as a model of
    many heads has, leave no room for some lines to clear every node)."""
    straight = np.array([start, end], dtype=float)  # [2, 2]
    if _clearance(straight, others) >= CLEARANCE:
        return straight
    arcs = [_arc(straight, bend) for bend in BENDS]
    for arc in arcs:
        if _clearance(arc, others) >= CLEARANCE:
            return arc
    return max([straight, *arcs], key=lambda path: _clearance(path, others))


def _arc(ends: np.ndarray, bend: float) -> np.ndarray:
    """A quadratic Bézier from ``ends[0]`` to ``ends[1]`` whose middle lies ``bend`` to the left of the chord."""
    chord = ends[1] - ends[0]  # [2]
    normal = np.array([-chord[1], chord[0]]) / max(float(np.hypot(*chord)), 1e-12)  # a unit vector to the left
    control = ends.mean(0) + 2 * bend * normal  # a quadratic's middle is halfway to its control point
    t = np.linspace(0.0, 1.0, PATH_POINTS)[:, None]  # [P, 1]
    return (1 - t) ** 2 * ends[0] + 2 * t * (1 - t) * control + t**2 * ends[1]  # [P, 2]


def _clearance(path: np.ndarray, others: np.ndarray) -> float:
    """The least distance from the polyline ``path`` [P, 2] to a point of ``others`` [N, 2]."""
    if not len(others):
        return float("inf")
    starts, ends = path[:-1], path[1:]  # [S, 2]
    along = ends - starts  # [S, 2]
    length = np.maximum((along**2).sum(-1), 1e-12)  # [S]
    share = ((others[:, None] - starts[None]) * along[None]).sum(-1) / length[None]  # [N, S]
    nearest = starts[None] + np.clip(share, 0.0, 1.0)[..., None] * along[None]  # [N, S, 2]
    return float(np.sqrt(((others[:, None] - nearest) ** 2).sum(-1)).min())


def line_paths(lines: list[Line], positions: dict[str, tuple[float, float]]) -> list[np.ndarray]:
    """Each line's points (``line_path``), around every node but its own two."""
    names = list(positions)
    points = np.array([positions[name] for name in names], dtype=float)  # [N, 2]
    index = {name: number for number, name in enumerate(names)}
    paths = []
    for line in lines:
        keep = np.ones(len(names), bool)
        keep[[index[line.sender], index[line.receiver]]] = False
        paths.append(line_path(positions[line.sender], positions[line.receiver], points[keep]))
    return paths
