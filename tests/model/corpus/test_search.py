"""Searching a corpus index, with known answers: the nearest token to a token of the index is itself (distance 0), a
sentence of the corpus typed again finds its own tokens, and a head query over constructed attention returns exactly
the sentences constructed to match; the predicate language refuses anything else in one line."""

from __future__ import annotations

import numpy as np
import pytest

from model.corpus.extract import BatchReading, SentenceTokens, _stats_rows
from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, Layer, Manifest, parse_head
from model.corpus.predicates import PredicateError, parse_predicate, where_sql
from model.corpus.search import head_query, index_token, nearest_rows, nearest_tokens, typed_token
from model.corpus.sources import read_sentences
from model.corpus.store import Store
from model.corpus.tables import chunk_tables
from model.data.token_labels import display_labels
from model.kinds import AttentionKind
from tests.model.corpus.conftest import CORPUS


@pytest.mark.parametrize("metric", ["cosine", "l2"])
@pytest.mark.parametrize("layer", [Layer("encoder", 2), Layer("decoder", 1)])
def test_the_nearest_token_to_a_token_of_the_index_is_itself(built_index, metric, layer):
    with CorpusIndex(built_index) as index:
        vectors = index.layer_vectors(layer)
        for row in (0, 5, len(vectors) // 2, len(vectors) - 1):
            _, rows = index.query("SELECT sentence_id, position FROM tokens WHERE side = ? AND row_id = ?", [layer.side, row])
            sentence_id, position = rows[0]
            query = index_token(index, layer, sentence_id=sentence_id, position=position)
            matches = nearest_tokens(index, query, k=3, metric=metric)
            assert (matches[0].row_id, matches[0].sentence_id, matches[0].position) == (row, sentence_id, position)
            assert matches[0].distance == pytest.approx(0.0, abs=1e-6)
            assert matches[0].distance <= matches[1].distance <= matches[2].distance
            assert matches[0].tokens[position] == matches[0].token


def test_a_sentence_of_the_corpus_typed_again_finds_its_own_token(built_index, tiny):
    sentence = read_sentences(CORPUS)[4].source
    layer = Layer("encoder", 2)
    with CorpusIndex(built_index) as index:
        pieces = index.sentence_tokens("encoder", 4)
        query = typed_token(index, tiny, sentence, layer, position=2)
        best = nearest_tokens(index, query, k=1)[0]
        assert (best.sentence_id, best.position, best.token) == (4, 2, pieces[2])
        assert best.distance < 1e-3  # the same vector, but for float16 storage and another batch's padding
        by_token = typed_token(index, tiny, sentence, layer, token=pieces[2].lstrip("▁"))  # its first occurrence
        assert f"“{display_labels([pieces[2]])[0]}” (position {pieces.index(pieces[2])})" in by_token.description


def test_a_token_query_from_another_model_or_for_what_is_not_there_is_refused(built_index, other_model, tiny):
    with CorpusIndex(built_index) as index:
        with pytest.raises(CorpusIndexError, match="was indexed with another model"):
            typed_token(index, other_model, "the cat", Layer("encoder", 2), position=0)
        with pytest.raises(CorpusIndexError, match="“zebra” is not among the encoder pieces of “the cat”"):
            typed_token(index, tiny, "the cat", Layer("encoder", 2), token="zebra")
        with pytest.raises(CorpusIndexError, match="no encoder token “zebraxyz”"):
            index_token(index, Layer("encoder", 2), token="zebraxyz")
        with pytest.raises(CorpusIndexError, match="holds no vectors of layer encoder:9"):
            index.layer_vectors(Layer("encoder", 9))
        with pytest.raises(CorpusIndexError, match="holds no queries and keys of head encoder:1:1"):
            index.head_vectors(parse_head("encoder:1:1"))


def test_nearest_rows_breaks_ties_in_row_order():
    matrix = np.array([[1, 0], [0, 1], [1, 0], [2, 0]], np.float16)
    rows, distances = nearest_rows(matrix, np.array([1.0, 0.0]), k=3)
    assert rows.tolist() == [0, 2, 3] and np.allclose(distances, 0, atol=1e-6)


def _constructed_index(folder, previous_sentences: set[int], n_sentences: int = 12):
    """An index of ``n_sentences`` made-up sentences whose decoder layer-1 head 2 puts all of every row on the previous
    token in ``previous_sentences`` and spreads evenly elsewhere (every other head spreads evenly)."""
    sentences, lengths, weights = [], [], {}
    n_layers, n_heads, length = 1, 2, 5
    for sentence_id in range(n_sentences):
        tokens = ["<s>"] + [f"▁w{sentence_id}_{i}" for i in range(length - 1)]
        sentences.append(
            SentenceTokens(f"s{sentence_id}", "", f"o{sentence_id}", tokens[1:] + ["</s>"], tokens, tokens[1:] + ["</s>"])
        )
        lengths.append((length, length))
    even = np.tril(np.ones((length, length))) / np.arange(1, length + 1)[:, None]  # [Q, K] causal, uniform
    previous = np.eye(length, k=-1)
    previous[0, 0] = 1.0
    decoder = np.broadcast_to(even, (n_sentences, n_layers, n_heads, length, length)).copy()
    for sentence_id in previous_sentences:
        decoder[sentence_id, 0, 1] = previous
    weights[AttentionKind.DECODER] = decoder
    weights[AttentionKind.ENCODER] = np.full((n_sentences, n_layers, n_heads, length, length), 1 / length)
    weights[AttentionKind.CROSS] = np.full((n_sentences, n_layers, n_heads, length, length), 1 / length)
    reading = BatchReading(sentences, {}, _stats_rows(weights, sentences, lengths))
    tables, record = chunk_tables(reading, 0, 0, None)
    store = Store(folder / "index.duckdb")
    store.commit_chunk(record, tables)
    store.close()
    Manifest(
        model="made up",
        model_digest="0" * 64,
        model_description="",
        corpus={"name": "made up"},
        n_sentences=n_sentences,
        layers=[["encoder", 1]],
        heads=[],
        dims=1,
        d_model=4,
        d_head=2,
        n_encoder_layers=1,
        n_decoder_layers=1,
        n_heads=2,
        chunk_size=n_sentences,
        pca_sentences=0,
        complete=True,
        counts={"sentences": n_sentences, "encoder_tokens": 0, "decoder_tokens": 0},
    ).write(folder)


def test_a_head_query_returns_exactly_the_sentences_constructed_to_match(tmp_path):
    constructed = {1, 4, 5, 10}
    _constructed_index(tmp_path, constructed)
    with CorpusIndex(tmp_path) as index:
        found = head_query(index, parse_head("decoder:1:2"), "previous >= 0.5")
        assert {row[0] for row in found.rows} == constructed and found.total == 4
        assert found.rows[0][found.columns.index("role")] == "positional: previous"
        assert head_query(index, parse_head("decoder:1:1"), "previous>=0.5").total == 0  # the even head
        low = head_query(index, parse_head("decoder:1:2"), "previous < 0.5 and entropy > 0.5", order_by="entropy")
        assert {row[0] for row in low.rows} == set(range(12)) - constructed
        assert {row[0] for row in head_query(index, parse_head("decoder:1:2"), "role ~ previous").rows} == constructed
        assert len(head_query(index, parse_head("decoder:1:2"), "previous >= 0.5", limit=2).rows) == 2
        with pytest.raises(CorpusIndexError, match="decoder:2:1: the indexed model's decoder attention has layers 1 to 1"):
            head_query(index, parse_head("decoder:2:1"), "previous >= 0.5")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "an empty head query"),
        ("prev >= 0.5", "unknown name 'prev'"),
        ("previous >= half", "'half' is not a number"),
        ("previous >= nan", "not a finite number"),
        ("previous >= 0.5 or eos > 0.2", "joined by 'and' only"),
        ("previous >= 0.5; DROP TABLE sentences", "joined by 'and' only"),
        ("previous 0.5", "is not NAME OPERATOR VALUE"),
        ("role > 3", "role takes = or ~"),
        ("entropy ~ 3", "~ is for role"),
        ("eos >=", "needs a value"),
    ],
)
def test_a_bad_predicate_gets_one_line(text, message):
    with pytest.raises(PredicateError, match=message) as caught:
        parse_predicate(text)
    assert "\n" not in str(caught.value)


def test_a_predicate_becomes_sql_with_bound_values_only():
    where, parameters = where_sql(parse_predicate("Previous>=0.5 AND eos < 0.25 and role ~ 'sink: </s>'"))
    assert where == "h.previous_share >= ? AND h.last_share < ? AND h.role ILIKE ?"
    assert parameters == [0.5, 0.25, "%sink: </s>%"]
