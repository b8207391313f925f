"""Searching a corpus index: the tokens nearest to a token at a layer, and the sentences where a head behaves a given
way.

``nearest_tokens`` compares a vector with every token of a side at a layer, by brute force over the memory-mapped
reduced vectors (cosine or L2 distance), block by block so that memory stays small. The vector is a token of the
index (``index_token``) or of a sentence the user types, read by the model the index was built with
(``typed_token``). ``head_query`` finds sentences by a head's statistics, written in a small predicate language
(model/corpus/predicates.py) that becomes SQL with bound values, never the user's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from model.corpus.extract import read_batch
from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, Layer
from model.corpus.predicates import Condition, order_column, parse_predicate, where_sql
from model.data.corpora import Pair
from model.data.token_labels import WORD_START, display_labels
from model.family import Bundle
from model.nn.masking import Head

METRICS = ("cosine", "l2")
BLOCK_ROWS = 1 << 16  # rows compared at once: 4 MB of float32 vectors at 64 dimensions


@dataclass
class TokenMatch:
    """A token of the index and its distance to the one searched for."""

    side: str
    row_id: int
    sentence_id: int
    position: int  # from 0
    token: str
    distance: float
    source: str  # the sentence
    output: str  # its greedy translation
    tokens: list[str] = field(default_factory=list)  # the side's pieces of the sentence (the match at ``position``)


@dataclass
class TokenQuery:
    """What was searched for: a vector at a layer, and where it came from in words."""

    layer: Layer
    vector: np.ndarray  # [dims] reduced as the index's vectors are
    description: str  # "“chat” (position 3) in sentence 12" or "“chat” (position 3) in “the sentence typed”"
    piece: str = ""  # the token's piece
    row_id: int | None = None  # its own row when it is a token of the index


def distances_to(matrix: np.ndarray, vector: np.ndarray, metric: str) -> np.ndarray:
    """[rows] distances of each row of ``matrix`` [rows, dims] to ``vector`` [dims]: 1 - cosine, or Euclidean."""
    if metric not in METRICS:
        raise CorpusIndexError(f"unknown distance {metric!r}; choose {' or '.join(METRICS)}")
    vector = np.asarray(vector, np.float32)
    result = np.empty(len(matrix), np.float32)
    norm = float(np.linalg.norm(vector))
    for start in range(0, len(matrix), BLOCK_ROWS):
        block = np.asarray(matrix[start : start + BLOCK_ROWS], np.float32)  # [rows, dims]
        if metric == "l2":
            result[start : start + len(block)] = np.linalg.norm(block - vector, axis=1)
        else:
            norms = np.linalg.norm(block, axis=1) * norm
            cosine = (block @ vector) / np.maximum(norms, 1e-12)
            result[start : start + len(block)] = 1.0 - cosine
    return result


def nearest_rows(matrix: np.ndarray, vector: np.ndarray, k: int, metric: str = "cosine") -> tuple[np.ndarray, np.ndarray]:
    """(rows, distances) of the ``k`` rows nearest ``vector``, nearest first (rows in index order on a tie)."""
    distances = distances_to(matrix, vector, metric)
    k = min(k, len(distances))
    if k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    candidates = np.argpartition(distances, k - 1)[:k] if k < len(distances) else np.arange(len(distances))
    order = candidates[np.lexsort((candidates, distances[candidates]))]
    return order.astype(np.int64), distances[order]


def index_token(
    index: CorpusIndex, layer: Layer, token: str | None = None, sentence_id: int | None = None, position: int | None = None
) -> TokenQuery:
    """A token of the index as a query: at ``sentence_id`` and ``position``, or the first occurrence of ``token`` (in
    ``sentence_id`` when given). A token matches its piece with or without the word-start mark ("chat", "▁chat")."""
    index.check_layer(layer)
    conditions: list[str] = ["side = ?"]
    parameters: list[Any] = [layer.side]
    if sentence_id is not None:
        conditions.append("sentence_id = ?")
        parameters.append(int(sentence_id))
    if position is not None:
        conditions.append("position = ?")
        parameters.append(int(position))
    if token is not None:
        conditions.append("(token = ? OR token = ?)")
        parameters += [token, WORD_START + token]
    if token is None and (sentence_id is None or position is None):
        raise CorpusIndexError("give a token (--token), or a sentence and a position (--sentence, --position)")
    _, rows = index.query(
        f"SELECT row_id, sentence_id, position, token FROM tokens WHERE {' AND '.join(conditions)} ORDER BY row_id LIMIT 1",
        parameters,
    )
    if not rows:
        where = f" in sentence {sentence_id}" if sentence_id is not None else ""
        what = f"“{token}”" if token is not None else f"position {position}"
        raise CorpusIndexError(f"no {layer.side} token {what}{where} in the index")
    row_id, found_sentence, found_position, piece = rows[0]
    vector = np.asarray(index.layer_vectors(layer)[row_id], np.float32)
    described = f"“{display_labels([piece])[0]}” (position {found_position}) in sentence {found_sentence}"
    return TokenQuery(layer, vector, described, piece, int(row_id))


def typed_token(
    index: CorpusIndex, bundle: Bundle, text: str, layer: Layer, token: str | None = None, position: int | None = None
) -> TokenQuery:
    """A token of a sentence the user types, read by ``bundle`` (refused unless it is the index's model) and reduced by
    the index's PCA: the piece ``token`` (its first occurrence) or the one at ``position`` (from 0)."""
    index.check_layer(layer)
    index.check_model(bundle)
    if not text.strip():
        raise CorpusIndexError("the sentence is empty: type a sentence to take the token from")
    reading = read_batch(bundle, [Pair(text, "")], [layer], ())
    sentence = reading.sentences[0]
    pieces = sentence.source_tokens if layer.side == "encoder" else sentence.decoder_tokens
    if position is None:
        if token is None:
            raise CorpusIndexError("give the token to search for (--token) or its position (--position)")
        matches = [place for place, piece in enumerate(pieces) if piece in (token, WORD_START + token)]
        if not matches:
            raise CorpusIndexError(f"“{token}” is not among the {layer.side} pieces of “{text}” ({' '.join(pieces)})")
        position = matches[0]
    if not 0 <= position < len(pieces):
        raise CorpusIndexError(f"position {position}: the sentence has {len(pieces)} {layer.side} pieces (0 to {len(pieces) - 1})")
    vector = index.projection(layer).apply(reading.arrays[layer.array][position : position + 1])[0]  # [dims]
    described = f"“{display_labels([pieces[position]])[0]}” (position {position}) in “{text}”"
    return TokenQuery(layer, vector, described, pieces[position])


def nearest_tokens(index: CorpusIndex, query: TokenQuery, k: int = 10, metric: str = "cosine") -> list[TokenMatch]:
    """The ``k`` tokens of the index nearest ``query`` at its layer, nearest first, with their sentences."""
    if k < 1:
        raise CorpusIndexError(f"k must be at least 1, not {k}")
    rows, distances = nearest_rows(index.layer_vectors(query.layer), query.vector, k, metric)
    side = query.layer.side
    tokens = index.tokens(side, rows.tolist())
    sentences = index.sentences(sorted({tokens[row][0] for row in rows.tolist()}))
    matches = []
    for row, distance in zip(rows.tolist(), distances.tolist()):
        sentence_id, position, piece, _ = tokens[row]
        source, output = sentences[sentence_id]
        pieces = index.sentence_tokens(side, sentence_id)
        matches.append(TokenMatch(side, row, sentence_id, position, piece, max(float(distance), 0.0), source, output, pieces))
    return matches


@dataclass
class HeadQueryResult:
    """Sentences where a head behaves as asked: ``columns`` and ``rows`` (one per sentence), and the SQL that found
    them with its bound ``parameters`` (shown so that a user can run it again)."""

    head: Head
    predicate: str
    columns: list[str]
    rows: list[tuple]
    sql: str
    parameters: list
    total: int  # sentences that match (``rows`` may stop at a limit)


RESULT_COLUMNS = ("sentence_id", "source", "output")


def head_query(
    index: CorpusIndex,
    head: Head,
    predicate: str,
    order_by: str | None = None,
    descending: bool | None = None,
    limit: int | None = 100,
) -> HeadQueryResult:
    """The sentences where ``head`` satisfies ``predicate`` (model/corpus/predicates.py), with every statistic, sorted by
    ``order_by`` (a predicate name; by default the first condition's, largest first for ">" and smallest for "<")."""
    index.check_head(head, arrays=False)
    conditions: list[Condition] = parse_predicate(predicate)
    where, parameters = where_sql(conditions)
    column, falling = order_column(conditions, order_by, descending)
    base = "FROM head_stats h JOIN sentences s USING (sentence_id) WHERE h.kind = ? AND h.layer = ? AND h.head = ?" + (
        f" AND {where}" if where else ""
    )
    bound = [head.kind.value, head.layer + 1, head.head + 1, *parameters]
    _, counted = index.query(f"SELECT count(*) {base}", bound)
    statistics = index.query("SELECT * FROM head_stats LIMIT 0")[0][4:]
    selected = ", ".join([f"s.{name}" for name in RESULT_COLUMNS] + [f"h.{name}" for name in statistics])
    order = f"h.{column} {'DESC' if falling else 'ASC'}, s.sentence_id"
    sql = f"SELECT {selected} {base} ORDER BY {order}" + (" LIMIT ?" if limit is not None else "")
    full = bound + ([int(limit)] if limit is not None else [])
    names, rows = index.query(sql, full)
    return HeadQueryResult(head, predicate, names, rows, sql, full, int(counted[0][0]))
