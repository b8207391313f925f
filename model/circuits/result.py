"""A circuit found for one clean/corrupted pair, with everything that says how (``find_circuit_of``, ``CircuitResult``).

The steps: the pair's reference runs (model/circuits/scores.py), every edge's score by EAP or EAP-IG, optionally every
edge patched exactly to check the scores (Spearman's ρ of the two, over every edge: signed, and of |score|, which is
what ranks the edges), the faithfulness curve and the smallest circuit on it that keeps the target share of the
difference (model/circuits/search.py). ``describe`` gives the lines the command line prints and the window shows:
the metric, its direction, the norm treatment, the integration points, the circuit and whether its evaluation agrees
with its scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from model.circuits.graph import CircuitGraph, Node
from model.circuits.scores import CircuitSetup, edge_scores, exact_scores, prepare_circuit
from model.circuits.search import TOLERANCE, Circuit, find_circuit
from model.family import Bundle, InterventionTool
from model.interventions.hooked import InterventionError, check_tool
from model.interventions.patching_setup import PairLabels, PatchingSetup, prepare_bundle_patching

EXACT_LIMIT = 6000  # every edge patched exactly by default up to this many edges
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    method: str = "EAP-IG"  # model.circuits.scores.METHODS
    steps: int = 5  # EAP-IG's integration points
    over: str = "activations"  # EAP-IG over "activations" or "inputs"
    metric: str = "logit difference"  # model.circuits.scores.METRICS
    target: float = 0.9  # the share of the difference the circuit keeps
    split_positions: bool = True  # key/value edges one per source position
    exact: bool | None = None  # patch every edge exactly to check the scores (None: when at most EXACT_LIMIT edges)


@dataclass
class CircuitResult:
    setup: CircuitSetup
    options: Options
    scores: np.ndarray  # [edges] each edge's score (its estimated change of the metric when patched)
    exact: np.ndarray | None  # [edges] each edge's exact change, when checked
    circuit: Circuit
    curve: list[Circuit]

    @property
    def graph(self) -> CircuitGraph:
        return self.setup.graph

    @property
    def labels(self) -> PairLabels:
        return self.setup.patching.labels

    @property
    def step(self) -> int:
        return self.setup.patching.step

    def agreement(self) -> tuple[float, float] | None:
        """Spearman's ρ of the scores and the exact changes over every edge: (signed, of |score|); None unchecked."""
        if self.exact is None:
            return None
        signed = float(spearmanr(self.scores, self.exact).statistic)
        magnitude = float(spearmanr(np.abs(self.scores), np.abs(self.exact)).statistic)
        return signed, magnitude

    def method_name(self) -> str:
        options = self.options
        if options.method == "EAP":
            return "EAP (the gradient at the clean run)"
        return f"EAP-IG over the {options.over}, {options.steps} integration points"

    def nodes_in_circuit(self) -> list[Node]:
        """The nodes the circuit's edges join, in the pass's order."""
        names = {
            name
            for index in np.flatnonzero(self.circuit.edges)
            for name in (self.graph.edges[index].sender, self.graph.edges[index].receiver)
        }
        return [node for name, node in self.graph.nodes.items() if name in names]

    def head_weights(self) -> dict[str, float]:
        """Each head node of the circuit -> the summed |score| of its circuit edges (in and out), largest first."""
        weights: dict[str, float] = {}
        for index in np.flatnonzero(self.circuit.edges):
            edge = self.graph.edges[index]
            for name in (edge.sender, edge.receiver):
                if self.graph.nodes[name].head is not None:
                    weights[name] = weights.get(name, 0.0) + abs(float(self.scores[index]))
        return dict(sorted(weights.items(), key=lambda item: -item[1]))

    def source_reads(self) -> list[tuple[str, int]]:
        """Where the circuit's key/value edges read the source (split by position): (piece, edges), most first."""
        counts: dict[int, int] = {}
        for index in np.flatnonzero(self.circuit.edges):
            position = self.graph.edges[index].position
            if position is not None:
                counts[position] = counts.get(position, 0) + 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return [(_piece(self.labels.clean, position).strip("'\""), count) for position, count in ranked]

    def edge_label(self, index: int) -> str:
        """An edge as people read it: "E1 H3 → D2 X1 (keys/values, source 'cat')"."""
        edge = self.graph.edges[index]
        sender, receiver = self.graph.nodes[edge.sender].label, self.graph.nodes[edge.receiver].label
        if edge.input == "q":
            return f"{sender} → {receiver} (queries)"
        if edge.input != "kv":
            return f"{sender} → {receiver}"
        where = "" if edge.position is None else f", source {_piece(self.labels.clean, edge.position)}"
        return f"{sender} → {receiver} (keys/values{where})"

    def describe(self, top: int = 5) -> list[str]:
        """The lines printed with every result."""
        setup, options, circuit = self.setup, self.options, self.circuit
        labels = self.labels
        clean, compared = labels.compared()
        edges = len(self.graph.edges)
        metric = f"logit({clean!r}) − logit({compared!r})" if options.metric == "logit difference" else f"p({clean!r})"
        lines = [
            f"metric: {options.metric}, {metric} at step {self.step + 1}: clean {setup.clean_metric:.3f}, corrupted "
            f"{setup.corrupted_metric:.3f}",
            "direction: noising — an edge patched carries the corrupted writer's output into the clean run; a score is "
            "the metric's change",
            f"scores: {self.method_name()}",
            f"norms: {setup.norm_treatment}",
            f"graph: {len(self.graph.nodes)} nodes, {edges} edges"
            + (" (keys/values one edge per source position)" if self.graph.source_positions else ""),
        ]
        agreement = self.agreement()
        if agreement is not None:
            lines.append(
                f"checked by patching every edge exactly: Spearman ρ {agreement[0]:.3f} (signed), {agreement[1]:.3f} (|score|)"
            )
        lines.append(
            f"circuit: {circuit.size} edges ({circuit.size / edges:.1%}) keep {circuit.faithfulness:.1%} of the "
            f"difference (target {options.target:.0%}; the scores predicted {circuit.predicted:.1%})"
        )
        if circuit.faithfulness < options.target:
            lines.append(f"no circuit smaller than the whole graph keeps {options.target:.0%}: every edge is kept")
        if circuit.disagrees:
            lines.append(
                f"the evaluation and the scores disagree by more than {TOLERANCE:.0%} of the difference: the edges act "
                "together in ways the scores' first order misses (read the curve, not the scores)"
            )
        heads = [self.graph.nodes[name].label for name in self.head_weights()][:top]
        lines.append("heads in the circuit (by its edges' |score|): " + (", ".join(heads) or "none"))
        order = np.argsort(-np.abs(np.where(circuit.edges, self.scores, 0.0)), kind="stable")[: min(top, circuit.size)]
        lines += [f"  {self.edge_label(int(index))}: {self.scores[index]:+.3f}" for index in order]
        return lines


def _piece(pieces: list[str], position: int) -> str:
    return repr(pieces[position].replace("▁", "")) if 0 <= position < len(pieces) else f"#{position + 1}"


def circuit_of(setup: PatchingSetup, options: Options = Options(), progress: Progress | None = None) -> CircuitResult:
    """Scores, check, curve and circuit of a prepared pair (see the module's docstring)."""
    if not 0 < options.target <= 1:
        raise InterventionError(f"the target is a share of the difference, above 0 and at most 1, not {options.target}")
    say = progress or (lambda _text: None)
    say("reference runs")
    circuit = prepare_circuit(setup, options.metric, options.split_positions)
    say(f"scoring {len(circuit.graph.edges)} edges")
    scores = edge_scores(circuit, options.method, options.steps, options.over)
    check = options.exact if options.exact is not None else len(circuit.graph.edges) <= EXACT_LIMIT
    exact = None
    if check:
        say(f"patching each of {len(circuit.graph.edges)} edges exactly")
        exact = exact_scores(circuit)
    say("the faithfulness curve")
    found, curve = find_circuit(circuit, scores, options.target)
    return CircuitResult(circuit, options, scores, exact, found, curve)


def find_circuit_of(
    bundle: Bundle, clean_text: str, corrupted_text: str, step: int | None = None, options: Options = Options(),
    progress: Progress | None = None,
) -> CircuitResult:  # fmt: skip
    """The circuit of two sentences read by ``bundle`` (``step`` from 0; default: the first at which they differ)."""
    check_tool(bundle.model, InterventionTool.CIRCUITS)  # a model without the parts, before its pair is read
    return circuit_of(prepare_bundle_patching(bundle, clean_text, corrupted_text, step), options, progress)
