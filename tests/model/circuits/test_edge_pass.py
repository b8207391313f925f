"""The circuits' graph and edge pass against independent computations (model/circuits/): the graph's shape, the norm's
scale point, no edge and every edge patched, one edge patched by hand through the ordinary hook points, and EAP exact
where the metric is linear in the patched input."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.circuits.graph import build_graph
from model.circuits.scores import edge_scores, exact_scores, patched_metrics, prepare_circuit
from model.interventions.hooked import Patch, adapter_of, run_hooked
from model.interventions.patching_setup import prepare_patching
from model.nn.hooks import HookPoint
from model.nn.transformer import layer_norm
from tests.conftest import tiny_bundle


@pytest.fixture(scope="module", params=["post", "pre"])
def tiny_pair(request, copy_bundle):
    """A tiny copy model of each norm placement (the post-norm one the session's, the pre-norm one trained here), and
    the pair setup of two sources that differ in one symbol."""
    bundle = copy_bundle[0] if request.param == "post" else tiny_bundle("copy", size=600, steps=120, norm_placement="pre")[0]
    model = bundle.model
    clean = bundle.source_ids("a b c d e f")[0]
    pieces = bundle.source_tokenizer.pieces(clean)
    corrupted = list(clean)
    corrupted[2] = next(i for i in range(4, 40) if i not in clean)  # another symbol at the third place
    setup = prepare_patching(model, clean, corrupted, step=2, compared_id=corrupted[2], source_pieces=lambda ids: pieces)
    return bundle, setup


def test_graph_edges_run_forward_and_cross_only_from_the_encoder(copy_bundle):
    model = copy_bundle[0].model
    parts = adapter_of(model).circuit_parts()  # type: ignore[attr-defined]
    graph = build_graph(parts)
    heads, layers = parts.n_heads, parts.n_encoder_layers
    encoder_writers = 1 + layers * (heads + 1)
    assert len(graph.writers["encoder"]) == encoder_writers
    assert nx.is_directed_acyclic_graph(graph.graph)
    kv = [edge for edge in graph.edges if edge.input == "kv"]
    assert len(kv) == parts.n_decoder_layers * heads * encoder_writers
    assert all(edge.sender.startswith("encoder") for edge in kv)
    assert all(not edge.sender.startswith("encoder") for edge in graph.edges if edge.input == "q")
    split = build_graph(parts, source_positions=5)
    assert len(split.edges) == len(graph.edges) + 4 * len(kv)  # each key/value edge once per source position
    assert {edge.position for edge in split.edges if edge.input == "kv"} == set(range(5))


def test_the_norm_scale_point_computes_the_same_layer_norm():
    norm = torch.nn.LayerNorm(16)
    torch.nn.init.normal_(norm.weight)
    torch.nn.init.normal_(norm.bias)
    x = torch.randn(3, 5, 16)
    point = HookPoint()
    seen = []
    point.register_forward_hook(lambda _m, _i, out: seen.append(out))
    assert torch.allclose(layer_norm(norm, x, point), F.layer_norm(x, (16,), norm.weight, norm.bias, norm.eps), atol=1e-6)
    assert torch.allclose(seen[0], 1 / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + norm.eps), atol=1e-5)


def test_no_edge_patched_is_the_clean_run_and_every_edge_the_corrupted_one(tiny_pair):
    _bundle, setup = tiny_pair
    circuit = prepare_circuit(setup, split_positions=True)
    edges = len(circuit.graph.edges)
    none, every = patched_metrics(circuit, np.array([np.zeros(edges, bool), np.ones(edges, bool)]))
    assert none == pytest.approx(circuit.clean_metric, abs=1e-4)
    assert every == pytest.approx(circuit.corrupted_metric, abs=1e-3)
    assert circuit.clean_metric == pytest.approx(setup.clean_metric, abs=1e-4)  # the scale point changes nothing
    if circuit.graph.parts.pre_norm:  # nothing is held: the corrupted run is the model's own
        assert circuit.corrupted_metric == pytest.approx(setup.corrupted_metric, abs=1e-4)


def _edge_index(graph, sender, receiver, input_name):
    return next(i for i, e in enumerate(graph.edges) if (e.sender, e.receiver, e.input) == (sender, receiver, input_name))


def test_one_edge_into_one_head_is_that_head_alone_reading_the_corrupted_writer(tiny_pair):
    """The edge (source embedding → encoder layer 2, head 3), patched by hand: that head's q, k, v formed from its
    norm's read of the clean stream plus the carried difference, every other head untouched (ordinary patches)."""
    bundle, setup = tiny_pair
    model = bundle.model
    circuit = prepare_circuit(setup)
    graph = circuit.graph
    index = _edge_index(graph, "encoder.embed", "encoder.1.self.2", "qkv")
    absent = np.zeros(len(graph.edges), bool)
    absent[index] = True
    patched = float(patched_metrics(circuit, absent[None])[0])

    names = ["encoder.0.resid_pre", "encoder.1.resid_pre", "encoder.1.self.q", "encoder.1.self.k", "encoder.1.self.v"]
    scales = [f"encoder.0.{point}" for point in ("self.scale", "mlp_scale")]
    pre = model.config.norm_placement == "pre"
    every_scale = [] if pre else [name for name in model.hook_points() if name.endswith(("self.scale", "cross.scale", "mlp_scale"))]
    with torch.no_grad():
        clean = run_hooked(model, setup.clean_source, setup.target_inputs, capture=names + every_scale)
        corrupted = run_hooked(model, setup.corrupted_source, setup.corrupted_inputs, capture=names[:1],
                               patches=[] if pre else [Patch(s, clean.activations[s]) for s in scales])  # fmt: skip
        difference = corrupted.activations["encoder.0.resid_pre"] - clean.activations["encoder.0.resid_pre"]  # [1, S, d]
        layer0 = model.encoder_layers[0]
        if not pre:  # carried through layer 1's two norms, held at the clean scales
            for norm, scale in zip(layer0.norms, scales):
                centred = difference - difference.mean(-1, keepdim=True)
                difference = centred * clean.activations[scale] * norm.weight
        stream = clean.activations["encoder.1.resid_pre"]
        layer1 = model.encoder_layers[1]
        read = (lambda x: layer_norm(layer1.norms[0], x)) if pre else (lambda x: x)
        attention = layer1.self_attention
        weight = attention.qkv_projection.weight.view(3, attention.n_heads, attention.d_k, -1)[:, 2]  # [3, d_k, d]
        new = [(read(stream + difference) @ w.T)[0] for w in weight]  # 3 x [S, d_k]
        patches = []
        for name, value in zip(names[2:], new):
            full = clean.activations[name].clone()
            full[0, 2] = value
            patches.append(Patch(name, full))
        held = [Patch(name, clean.activations[name]) for name in every_scale]  # a post-norm pass's norms held
        by_hand = run_hooked(model, setup.clean_source, setup.target_inputs, patches=patches + held)
        expected = float(circuit.metric_of(by_hand.logits(model, setup.step))[0])
    assert patched == pytest.approx(expected, abs=1e-4)


def test_eap_is_exact_for_edges_into_the_logits_of_a_post_norm_model(copy_bundle):
    """A post-norm model's logits read the stream through no norm of their own, and its norms are held: the metric is
    linear in the logits' input, so each edge into the logits has EAP's score exactly."""
    bundle = copy_bundle[0]
    clean = bundle.source_ids("a b c d e f")[0]
    corrupted = list(clean)
    corrupted[1] = next(i for i in range(4, 40) if i not in clean)
    setup = prepare_patching(bundle.model, clean, corrupted, step=1, compared_id=corrupted[1])
    circuit = prepare_circuit(setup)
    into_logits = np.array([i for i, e in enumerate(circuit.graph.edges) if e.receiver == "logits"])
    exact = exact_scores(circuit, into_logits)[into_logits]
    eap = edge_scores(circuit, "EAP")[into_logits]
    assert np.abs(exact).max() > 1e-3  # they carry something
    np.testing.assert_allclose(eap, exact, atol=2e-4, rtol=1e-3)
