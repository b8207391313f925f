"""Where the node-link diagram of a circuit puts each node, and which lines it draws (the figure, model/figures/
circuit.py, and the window's view draw the same).

Layers are rows, from the embeddings at the bottom to the logits at the top; the encoder stands on the left and the
decoder on the right, so cross-attention's key/value edges run across. In a row, a layer's heads side by side: the
encoder's self-attention heads, then its feed-forward block half a row up; the decoder's self-attention heads, its
cross-attention heads a third of a row up, its feed-forward block two thirds up. Edges split by source position are
drawn as one line per pair of nodes, their scores summed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.circuits.graph import CircuitGraph, Node

GAP = 2.0  # between the encoder's columns and the decoder's


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
