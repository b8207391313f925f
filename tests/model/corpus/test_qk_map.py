"""The joint query-key map of a corpus index: the points are the queries and keys of the sampled sentences' tokens,
the keys' move and scaling leave every attention weight as it was, and the maps export as figures and CSV."""

from __future__ import annotations

import csv
import importlib.util

import numpy as np
import pytest

from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, parse_head
from model.corpus.qk import head_map, layer_maps, normalised, project, write_map_csv
from model.figures.qk_map import save_qk_maps
from model.kinds import AttentionKind
from tests.conftest import assert_figure


def _softmax_rows(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    scores = queries @ keys.T / np.sqrt(queries.shape[1])
    scores -= scores.max(1, keepdims=True)
    return np.exp(scores) / np.exp(scores).sum(1, keepdims=True)


def test_moving_and_scaling_the_keys_leaves_every_attention_weight_as_it_was():
    rng = np.random.default_rng(0)
    queries, keys = rng.normal(2.0, 1.0, (7, 8)), rng.normal(-3.0, 4.0, (9, 8))
    moved_queries, moved_keys = normalised(queries, keys)
    np.testing.assert_allclose(_softmax_rows(moved_queries, moved_keys), _softmax_rows(queries, keys), atol=1e-12)
    np.testing.assert_allclose(
        moved_keys.mean(0) / np.linalg.norm(moved_keys.mean(0)), moved_queries.mean(0) / np.linalg.norm(moved_queries.mean(0))
    )


def test_a_head_map_holds_the_queries_and_keys_of_the_sampled_sentences(built_index):
    head = parse_head("cross:2:3")  # queries from the decoder's tokens, keys from the source's
    with CorpusIndex(built_index) as index:
        panel = head_map(index, head, sentences=np.array([0, 3, 8]))
        _, counts = index.query("SELECT sum(n_target), sum(n_source) FROM sentences WHERE sentence_id IN (0, 3, 8)")
        assert (panel.is_query.sum(), (~panel.is_query).sum()) == counts[0]
        assert panel.xy.shape == (sum(counts[0]), 2) and set(panel.sentence_ids.tolist()) == {0, 3, 8}
        assert panel.tokens[0] == "<s>" and panel.positions[0] == 0 and panel.title == "cross L2 H3"
        assert panel.axis_names[0].startswith("PC 1 (") and len(panel.notes) == 2
        assert head_map(index, head, sentences=5).xy.shape[0] == head_map(index, head, sentences=5, seed=0).xy.shape[0]
        with pytest.raises(CorpusIndexError, match="holds no queries and keys of head encoder:1:1"):
            head_map(index, parse_head("encoder:1:1"))


def test_a_layers_small_multiples_export_as_figures_and_csv(built_index, tmp_path):
    with CorpusIndex(built_index) as index:
        panels = layer_maps(index, AttentionKind.CROSS, 1, "pca", sentences=6)
        assert [panel.title for panel in panels] == [f"cross L2 H{head}" for head in range(1, 5)]
        with pytest.raises(CorpusIndexError, match="queries and keys of no encoder head of layer 1"):
            layer_maps(index, AttentionKind.ENCODER, 0)
    for suffix, colour in (("png", "position"), ("svg", "token"), ("pdf", "qk")):
        path = save_qk_maps(panels, tmp_path / f"map.{suffix}", colour, caption="the cross heads of layer 2")
        assert_figure(path, texts=("cross L2 H1", "query", "key") if suffix != "png" else ())
    write_map_csv(panels, tmp_path / "map.csv", "pca")
    with open(tmp_path / "map.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == sum(len(panel.xy) for panel in panels)
    assert rows[0]["head"] == "cross L2 H1" and rows[0]["vector"] == "query" and rows[0]["token"] == "<s>"


def test_t_sne_maps_and_umap_says_how_to_get_it():
    vectors = np.random.default_rng(1).normal(size=(40, 6))
    coordinates, names = project(vectors, "tsne")
    assert coordinates.shape == (40, 2) and names == ("t-SNE 1", "t-SNE 2")
    with pytest.raises(CorpusIndexError, match="unknown projection 'mds'"):
        project(vectors, "mds")
    if importlib.util.find_spec("umap") is None:
        with pytest.raises(CorpusIndexError, match="UMAP needs umap-learn"):
            project(vectors, "umap")
