"""``transformer-explorer circuit`` end to end: every output by the suffix of --out (the figure looked at by the
formats' readers, the graph read back by networkx, the CSV's numbers against the core's), what it prints with every
result, and bad inputs answered in one line that writes nothing."""

from __future__ import annotations

import csv
import json

import networkx as nx
import numpy as np
import pytest

from model.circuits.result import Options, find_circuit_of
from model.io.models import open_model
from tests.conftest import assert_figure

CLEAN, CORRUPT = "the cat sees the dog", "the cats see the dog"


def test_prints_how_and_writes_the_figure(run, tmp_path):
    code, out, err = run("circuit", "--model", "default", "--pair", "number", "--dpi", "100", "--out", "c.png")
    assert code == 0 and err == ""
    lines = out.splitlines()
    for start in ("metric: logit difference, logit('le') − logit('les') at step 1", "direction: noising", "scores: EAP-IG over the "
                  "activations, 5 integration points", "norms: post-norm: the LayerNorms on the residual stream held",
                  "checked by patching every edge exactly: Spearman ρ", "circuit: "):  # fmt: skip
        assert any(line.startswith(start) for line in lines), start
    assert lines[-1] == "wrote c.png"
    assert_figure(tmp_path / "c.png", dpi=100)


@pytest.mark.parametrize("suffix", [".svg", ".pdf"])
def test_vector_figures_carry_the_words(run, tmp_path, suffix):
    assert run("circuit", "--model", "default", "--clean", CLEAN, "--corrupt", CORRUPT, "--no-exact", "--out", f"c{suffix}")[0] == 0
    assert_figure(tmp_path / f"c{suffix}", texts=("Circuit of", "edges in the circuit", "X2"))


def test_the_graph_files_hold_every_edge_and_the_run(run, tmp_path):
    expected = find_circuit_of(open_model("default"), CLEAN, CORRUPT, options=Options(exact=False))
    for name in ("c.json", "c.graphml", "c.csv"):
        assert run("circuit", "--model", "default", "--clean", CLEAN, "--corrupt", CORRUPT, "--no-exact", "--out", name)[0] == 0
    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    graph = nx.node_link_graph(data, edges="edges")
    assert graph.number_of_edges() == len(expected.graph.edges) and graph.graph["faithfulness"] == pytest.approx(
        expected.circuit.faithfulness
    )
    assert "held at the clean run's scales" in graph.graph["norms"]
    graphml = nx.read_graphml(tmp_path / "c.graphml")
    kept = sum(1 for _s, _r, d in graphml.edges(data=True) if d["in_circuit"])
    assert kept == expected.circuit.size
    with open(tmp_path / "c.csv", encoding="utf-8", newline="") as handle:
        lines = handle.read().splitlines()
    assert lines[0].startswith("# metric: logit difference")
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    assert len(rows) == len(expected.graph.edges)
    np.testing.assert_allclose([float(row["score"]) for row in rows], expected.scores, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (("--clean", "the cat sees the dog", "--corrupt", "the small cat sees the dog"), "patching needs equal counts"),
        (("--clean", "the cat sees the dog", "--corrupt", "the cat sees the dog"), "translated alike at every step"),
        (("--pair", "number", "--target", "1.5"), "--target is a share of the difference"),
        (("--pair", "number", "--ig-steps", "0"), "--ig-steps is at least 1"),
        (("--pair", "number", "--step", "0"), "--step counts from 1"),
    ],
)
def test_bad_inputs_are_one_line_and_write_nothing(run, tmp_path, arguments, says):
    code, out, err = run("circuit", "--model", "default", *arguments, "--out", "c.png")
    assert code != 0 and says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert out == "" and not (tmp_path / "c.png").exists()  # the error alone: no pair said before it


@pytest.mark.parametrize(
    ("model", "says"), [("tagger", "an encoder-only model has no decoder"), ("rnn-bahdanau", "no residual stream of layers")]
)
def test_a_family_without_the_parts_is_one_line(run, tmp_path, model, says):
    code, out, err = run("circuit", "--model", model, "--pair", "number", "--out", "c.json")
    assert code != 0 and says in err and len(err.strip().splitlines()) == 1 and out == ""
    assert not (tmp_path / "c.json").exists()


def test_a_pair_the_model_cannot_read_says_so(run, tmp_path):
    """The copy model reads English as unknown pieces, so the number pair translates alike: the line says why."""
    code, out, err = run("circuit", "--model", "copy", "--pair", "number", "--out", "c.png")
    assert code != 0 and out == "" and len(err.strip().splitlines()) == 1
    assert "translated alike at every step" in err and "unknown to this model" in err
