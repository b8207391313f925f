"""Circuits from edge scores, evaluated by patching everything outside them.

A circuit of size n is the n edges of largest |score|, less those off every path from an embedding to the logits
through the chosen edges (they carry nothing to the prediction: ``CircuitGraph.connected``). It is evaluated by
actually patching every edge outside it (each carries the corrupted writer's output, model/circuits/edge_pass.py):
its faithfulness is (m_circuit − m_corrupted) / (m_clean − m_corrupted), 1 = the clean run's metric kept, 0 = none
of it. The scores predict it too, to first order: the clean metric plus the scores of every edge left out; a circuit
whose evaluation and prediction differ by more than ``TOLERANCE`` (in faithfulness) is flagged, for the scores then
miss what the edges do together.

``faithfulness_curve`` evaluates sizes from one edge to every edge in one batch of runs; ``find_circuit`` the smallest
size on that curve, refined, that keeps ``target`` of the difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.circuits.scores import CircuitSetup, patched_metrics

TOLERANCE = 0.15  # a circuit's faithfulness and the scores' prediction of it further apart than this are flagged
CURVE_POINTS = 24  # sizes on a faithfulness curve


@dataclass(frozen=True)
class Circuit:
    edges: np.ndarray  # [edges] bool: in the circuit
    requested: int  # the top edges taken, before those off every path were dropped
    metric: float  # the metric with every other edge patched
    faithfulness: float
    predicted: float  # the faithfulness the scores predict (first order)

    @property
    def size(self) -> int:
        return int(self.edges.sum())

    @property
    def disagrees(self) -> bool:
        return abs(self.faithfulness - self.predicted) > TOLERANCE


def ranked(scores: np.ndarray) -> np.ndarray:
    """Edge indices from the largest |score| down (the first on a tie)."""
    return np.argsort(-np.abs(scores), kind="stable")


def _chosen(circuit: CircuitSetup, order: np.ndarray, size: int) -> np.ndarray:
    chosen = np.zeros(len(circuit.graph.edges), dtype=bool)
    chosen[order[:size]] = True
    return circuit.graph.connected(chosen)


def evaluate(circuit: CircuitSetup, scores: np.ndarray, sizes: list[int]) -> list[Circuit]:
    """The circuits of the top ``sizes`` edges, each evaluated by patching every edge outside it (one batch)."""
    order = ranked(scores)
    chosen = [_chosen(circuit, order, size) for size in sizes]
    metrics = patched_metrics(circuit, ~np.array(chosen)) if chosen else np.zeros(0)
    span = circuit.span
    return [
        Circuit(edges, size, float(metric), float((metric - circuit.corrupted_metric) / span),
                float((circuit.clean_metric + scores[~edges].sum() - circuit.corrupted_metric) / span))
        for edges, size, metric in zip(chosen, sizes, metrics)
    ]  # fmt: skip


def curve_sizes(edges: int, points: int = CURVE_POINTS) -> list[int]:
    """Sizes from 1 to ``edges``, spaced evenly on a log scale (each once)."""
    return sorted({int(round(size)) for size in np.geomspace(1, edges, points)} | {edges})


def faithfulness_curve(circuit: CircuitSetup, scores: np.ndarray, points: int = CURVE_POINTS) -> list[Circuit]:
    """The circuits of ``curve_sizes`` top edges, evaluated: faithfulness against size."""
    return evaluate(circuit, scores, curve_sizes(len(circuit.graph.edges), points))


def find_circuit(
    circuit: CircuitSetup, scores: np.ndarray, target: float = 0.9, curve: list[Circuit] | None = None
) -> tuple[Circuit, list[Circuit]]:
    """(the smallest circuit found that keeps ``target`` of the difference, the curve it was found on): the first
    size on the curve that reaches it, refined between the size before it and it; every edge when none does."""
    curve = curve if curve is not None else faithfulness_curve(circuit, scores)
    reaching = [index for index, point in enumerate(curve) if point.faithfulness >= target]
    if not reaching:
        return curve[-1], curve
    first = reaching[0]
    low = curve[first - 1].requested if first > 0 else 0
    high = curve[first].requested
    between = sorted({int(size) for size in np.linspace(low, high, 18)[1:-1]} - {low, high})
    refined = [point for point in evaluate(circuit, scores, between) if point.faithfulness >= target] if between else []
    found = refined[0] if refined else curve[first]
    return found, sorted(curve + refined, key=lambda point: point.requested)
