"""Edge scores of a clean/corrupted pair at one target step: edge attribution patching (EAP, Syed et al. 2023), its
integrated-gradients variant over the inputs (EAP-IG, Hanna et al. 2024), and exact edge patching to check them.

The pair is activation patching's (model/interventions/patching_setup.py): the clean and the corrupted source read
along the clean translation, the step compared and the token compared with. The metric at that step is the logit
difference logit(clean token) − logit(compared token), or the probability of the clean token. An edge's score is the
change of the metric when that one edge carries the corrupted writer's output (noising the clean run; 0 = the edge
carries nothing of the difference, negative = it carries what makes the clean prediction):

* EAP: (corrupted − clean output of the writer, carried to the receiver) · ∂metric/∂(the receiver's input), at the clean
  run; one forward and one backward pass for every edge;
* EAP-IG: the same product with the gradient averaged over ``steps`` runs whose source embeddings lie on the straight
  line from the corrupted source's to the clean one's (k / steps, k = 1..steps);
* exact: the metric of a run with that edge patched (model/circuits/edge_pass.py), minus the clean metric.

The norms, as ``CircuitSetup.norm_treatment`` says in every result: a pre-norm model's receivers recompute their own
LayerNorm on their patched input (as EAP does); a post-norm model's LayerNorms sit on the residual stream, so every
run holds them at the clean run's scale (its corrupted reference run too): the stream is then linear in the nodes'
outputs, an edge's patch is exactly defined, and patching every edge gives the corrupted run of the same network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import torch

from model.circuits.edge_pass import EdgeHooks, scale_points, writer_points
from model.circuits.graph import CircuitGraph, build_graph
from model.family import InterventionTool
from model.interventions.circuit_parts import CircuitPass
from model.interventions.hooked import InterventionError, Patch, check_tool, run_hooked
from model.interventions.patching_setup import PatchingSetup

METRICS = ("logit difference", "probability")
METHODS = ("EAP-IG", "EAP")
INTEGRATIONS = ("activations", "inputs")  # what EAP-IG's runs move along their line
MAX_ROWS = 96  # patched runs per batch


@dataclass
class CircuitSetup:
    """What every scoring and patching run of one pair reads."""

    patching: PatchingSetup  # the pair, step and compared token
    graph: CircuitGraph
    metric: str  # one of METRICS
    clean_outputs: dict[str, torch.Tensor]  # writer point -> output [1, (H,) L, d_model]
    corrupted_outputs: dict[str, torch.Tensor]
    scales: dict[str, torch.Tensor]  # a post-norm model's norm scales in the clean run [1, L, 1]; {} for pre-norm
    clean_metric: float
    corrupted_metric: float  # with the norms as held (post-norm: the clean run's scales)
    unheld_corrupted_metric: float  # the corrupted run's own, its norms its own

    @property
    def norm_treatment(self) -> str:
        if self.graph.parts.pre_norm:
            return "pre-norm: each receiver's LayerNorm recomputed on its own patched input (as EAP)"
        return (
            "post-norm: the LayerNorms on the residual stream held at the clean run's scales (1/σ per position) in every "
            f"run, the corrupted one too (its metric {self.corrupted_metric:.3f} held, {self.unheld_corrupted_metric:.3f} "
            "with its own)"
        )

    @property
    def span(self) -> float:
        return self.clean_metric - self.corrupted_metric

    def metric_of(self, logits: torch.Tensor) -> torch.Tensor:
        """logits [B, V] at the step -> the metric [B]."""
        setup = self.patching
        if self.metric == "probability":
            return torch.softmax(logits.float(), -1)[:, setup.clean_id]
        return logits[:, setup.clean_id] - logits[:, setup.compared_id]


def prepare_circuit(setup: PatchingSetup, metric: str = "logit difference", split_positions: bool = False) -> CircuitSetup:
    """The graph of the pair's model and its reference runs; an InterventionError (one line) for a model whose hooked
    pass has no circuits, an unknown metric, or a pair whose metric does not differ."""
    if metric not in METRICS:
        raise InterventionError(f"the metric is one of {', '.join(METRICS)}, not {metric!r}")
    model = setup.model
    parts = cast(CircuitPass, check_tool(model, InterventionTool.CIRCUITS)).circuit_parts()
    graph = build_graph(parts, setup.clean_source.shape[1] if split_positions else None)
    writers, scales = writer_points(parts), ([] if parts.pre_norm else scale_points(parts))
    with torch.no_grad():  # not inference tensors: the gradient passes read them
        clean = run_hooked(model, setup.clean_source, setup.target_inputs, capture=writers + scales)
        held_scales = {name: clean.activations[name] for name in scales}
        held = [Patch(name, value) for name, value in held_scales.items()]
        corrupted = run_hooked(model, setup.corrupted_source, setup.corrupted_inputs, capture=writers, patches=held)
        unheld = run_hooked(model, setup.corrupted_source, setup.corrupted_inputs)
        circuit = CircuitSetup(
            setup, graph, metric, {name: clean.activations[name] for name in writers},
            {name: corrupted.activations[name] for name in writers}, held_scales, 0.0, 0.0, 0.0,
        )  # fmt: skip
        circuit.clean_metric = float(circuit.metric_of(clean.logits(model, setup.step))[0])
        circuit.corrupted_metric = float(circuit.metric_of(corrupted.logits(model, setup.step))[0])
        circuit.unheld_corrupted_metric = float(circuit.metric_of(unheld.logits(model, setup.step))[0])
    if abs(circuit.span) < 1e-6:
        raise InterventionError(
            f"the clean and corrupted runs have the same {metric} at step {setup.step + 1}: no edge can carry a difference"
        )
    return circuit


def _edge_hooks(circuit: CircuitSetup, **options) -> EdgeHooks:
    return EdgeHooks(circuit.graph, circuit.corrupted_outputs, circuit.scales, **options)


def _run(circuit: CircuitSetup, hooks: EdgeHooks, rows: int) -> torch.Tensor:
    """The clean source through the model with ``hooks``, ``rows`` times: the metric of each row [rows]."""
    setup = circuit.patching
    adapter = check_tool(setup.model, InterventionTool.CIRCUITS)
    hooks.check(adapter.hook_names())
    source, inputs = setup.clean_source.expand(rows, -1), setup.target_inputs.expand(rows, -1)
    run = adapter.run_hooked(source, inputs, hooks, None)
    return circuit.metric_of(run.logits(setup.model, setup.step))


@torch.no_grad()
def patched_metrics(circuit: CircuitSetup, absent: np.ndarray) -> np.ndarray:
    """The metric of runs whose row b patches the edges ``absent[b]`` ([runs, edges] bool) -> [runs]."""
    metrics = []
    device = circuit.patching.clean_source.device
    for start in range(0, len(absent), MAX_ROWS):
        chunk = torch.as_tensor(absent[start : start + MAX_ROWS], device=device)  # [rows, edges]
        metrics.append(_run(circuit, _edge_hooks(circuit, absent=chunk), len(chunk)).float().cpu())
    return torch.cat(metrics).numpy() if metrics else np.zeros(0, np.float32)


def exact_scores(circuit: CircuitSetup, edges: np.ndarray | None = None) -> np.ndarray:
    """Each edge's exact score (the metric with that edge alone patched, minus the clean metric) [edges]; ``edges``:
    only those (indices), the others NaN."""
    count = len(circuit.graph.edges)
    chosen = np.arange(count) if edges is None else np.asarray(edges)
    absent = np.zeros((len(chosen), count), dtype=bool)
    absent[np.arange(len(chosen)), chosen] = True
    scores = np.full(count, np.nan, dtype=np.float64)
    scores[chosen] = patched_metrics(circuit, absent) - circuit.clean_metric
    return scores


def _scores_from(circuit: CircuitSetup, hooks: EdgeHooks, total: torch.Tensor, rows_of) -> np.ndarray:
    """Each edge's score from a gradient pass: the differences its receiver read · the metric's gradient there, summed
    over the rows ``rows_of(group key)`` chooses (a slice) and divided by their count."""
    keys = list(hooks.receiver_inputs)
    grads = torch.autograd.grad(total, [hooks.receiver_inputs[key] for key in keys], allow_unused=True)
    scores = np.zeros(len(circuit.graph.edges), dtype=np.float64)
    for key, grad in zip(keys, grads):
        if grad is None:
            continue
        rows = rows_of(key)
        carried, index = hooks.carried_at[key], circuit.graph.groups[key].edge_index  # [B|1, n, L, d_model]
        carried = carried[rows] if carried.shape[0] > 1 else carried
        split = "bnld,bhld->hnl" if index.ndim == 3 else "bnld,bhld->hn"  # one edge per source position, or per writer
        gradient = grad[rows]  # [rows, heads, L, d_model]
        per_edge = torch.einsum(split, carried.double().expand(gradient.shape[0], -1, -1, -1), gradient.double())
        scores[index.ravel()] = (per_edge / gradient.shape[0]).cpu().numpy().ravel()  # [heads, n(, L)]
    return scores


def input_gradient_scores(circuit: CircuitSetup, steps: int) -> np.ndarray:
    """EAP (``steps`` = 1: the gradient at the clean run) or EAP-IG over the inputs: ``steps`` runs whose source
    embeddings lie on the line from the corrupted source's to the clean one's (k / steps, k = 1..steps)."""
    clean_in, corrupted_in = (outputs["encoder.0.resid_pre"] for outputs in (circuit.clean_outputs, circuit.corrupted_outputs))
    ratios = torch.arange(1, steps + 1, dtype=clean_in.dtype, device=clean_in.device)[:, None, None] / steps  # [steps, 1, 1]
    stream = corrupted_in + ratios * (clean_in - corrupted_in)  # [steps, S, d_model]
    hooks = _edge_hooks(circuit, clean=circuit.clean_outputs, source_stream=stream, gradients=True)
    with torch.inference_mode(False), torch.enable_grad():
        total = _run(circuit, hooks, steps).sum()
        return _scores_from(circuit, hooks, total, lambda _key: slice(None))


def activation_gradient_scores(circuit: CircuitSetup, steps: int) -> np.ndarray:
    """EAP-IG over the activations: for each group of receivers apart, ``steps`` runs in which only that group's
    inputs move on the line from their clean value to their value with every edge into them patched ((k − ½) / steps,
    k = 1..steps), the rest of the pass following; the gradient at the group's inputs averaged over its runs. A group's
    path is its own, so a receiver whose inputs change its attention pattern on the way is scored by the change."""
    groups = list(circuit.graph.groups)
    edges = len(circuit.graph.edges)
    ratios = (np.arange(steps) + 0.5) / steps  # [steps]
    absent = np.zeros((len(groups) * steps, edges), dtype=np.float32)  # [rows, edges]
    for place, key in enumerate(groups):
        absent[place * steps : (place + 1) * steps, circuit.graph.groups[key].edge_index.ravel()] = ratios[:, None]
    device = circuit.patching.clean_source.device
    hooks = _edge_hooks(circuit, absent=torch.as_tensor(absent, device=device), gradients=True)
    with torch.inference_mode(False), torch.enable_grad():
        total = _run(circuit, hooks, len(absent)).sum()
        return _scores_from(circuit, hooks, total, lambda key: slice(groups.index(key) * steps, (groups.index(key) + 1) * steps))


def gradient_scores(circuit: CircuitSetup, steps: int = 1, over: str = "inputs") -> np.ndarray:
    """EAP (``steps`` = 1, over the inputs) or EAP-IG with ``steps`` integration points ``over`` "inputs" or
    "activations" -> each edge's estimated score [edges]."""
    if steps < 1:
        raise InterventionError(f"the integration takes at least one point, not {steps}")
    if over not in INTEGRATIONS:
        raise InterventionError(f"EAP-IG integrates over one of {', '.join(INTEGRATIONS)}, not {over!r}")
    return input_gradient_scores(circuit, steps) if over == "inputs" or steps == 1 else activation_gradient_scores(circuit, steps)


def edge_scores(circuit: CircuitSetup, method: str = "EAP-IG", steps: int = 5, over: str = "activations") -> np.ndarray:
    """Every edge's score by ``method`` (one of METHODS; EAP-IG with ``steps`` integration points ``over`` the
    activations or the inputs)."""
    if method not in METHODS:
        raise InterventionError(f"the method is one of {', '.join(METHODS)}, not {method!r}")
    return gradient_scores(circuit, steps if method == "EAP-IG" else 1, over)
