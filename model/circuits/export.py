"""A circuit's numbers and graph in files: every edge as a CSV row, or the graph as JSON (networkx's node-link data)
or GraphML, each edge carrying its score, its exact change when checked and whether the circuit keeps it, the graph
carrying the pair, the metric, the method and the norm treatment. Written atomically (model/files.py)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import networkx as nx

from model.circuits.result import CircuitResult
from model.files import atomic_output

DATA_SUFFIXES = (".csv", ".json", ".graphml")


def annotated_graph(result: CircuitResult) -> nx.MultiDiGraph:
    """The networkx graph with each edge's score, exact change (NaN unchecked) and membership, and the run's facts."""
    graph = result.graph.graph.copy()
    for _sender, _receiver, _key, data in graph.edges(keys=True, data=True):
        index = data["index"]
        data["score"] = float(result.scores[index])
        data["exact"] = float(result.exact[index]) if result.exact is not None else math.nan
        data["in_circuit"] = bool(result.circuit.edges[index])
        data["label"] = result.edge_label(index)
    agreement = result.agreement()
    graph.graph.update(
        clean=" ".join(result.labels.clean), corrupted=" ".join(result.labels.corrupted), step=result.step + 1,
        metric=result.options.metric, method=result.method_name(), norms=result.setup.norm_treatment,
        clean_metric=result.setup.clean_metric, corrupted_metric=result.setup.corrupted_metric,
        circuit_edges=result.circuit.size, faithfulness=result.circuit.faithfulness, predicted=result.circuit.predicted,
        target=result.options.target, spearman_signed=agreement[0] if agreement else math.nan,
        spearman_magnitude=agreement[1] if agreement else math.nan,
    )  # fmt: skip
    return graph


def write_circuit_data(result: CircuitResult, path: str | Path) -> Path:
    """``path`` by its suffix: .csv (an edge per row), .json (node-link data) or .graphml."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in DATA_SUFFIXES:
        raise ValueError(f"a circuit's data is written as {', '.join(DATA_SUFFIXES)}, not {suffix or 'no extension'}")
    with atomic_output(path) as temporary:
        if suffix == ".csv":
            _write_csv(result, temporary)
        elif suffix == ".json":
            data = nx.node_link_data(annotated_graph(result), edges="edges")
            temporary.write_text(json.dumps(data, indent=1, default=_plain), encoding="utf-8")
        else:
            nx.write_graphml(annotated_graph(result), temporary)
    return path


def _plain(value: object) -> object:
    return float(value) if isinstance(value, (int, float)) else str(value)


def _write_csv(result: CircuitResult, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        for line in result.describe(top=0)[:5]:  # the metric, direction, method, norms, graph: comment lines
            handle.write(f"# {line}\n")
        writer = csv.writer(handle)
        writer.writerow(["sender", "receiver", "input", "source_position", "label", "score", "exact", "in_circuit"])
        for index, edge in enumerate(result.graph.edges):
            exact = "" if result.exact is None else f"{result.exact[index]:.6g}"
            position = "" if edge.position is None else edge.position + 1
            row = [edge.sender, edge.receiver, edge.input, position, result.edge_label(index), f"{result.scores[index]:.6g}"]
            writer.writerow(row + [exact, int(result.circuit.edges[index])])
