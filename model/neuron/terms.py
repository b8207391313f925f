"""One head's query row seen inside (the neuron view), and the terms its scores split into by position.

**The terms.** How a model's scores split depends on how it knows positions (``TermSplit``):

* an absolute table added to the embeddings (the app's Transformers, Marian, BART, mBART, M2M100/NLLB, Pegasus):
  with the queries and keys split (model/neuron/vectors.py: q = q_token + q_position, k likewise, "token" meaning the
  content part: the token embeddings, every sublayer's output, the LayerNorms' β and the projections' biases), the
  scaled score of a query and a key is the sum of four bilinear terms, each divided by √d_k:

      token·token + token·position + position·token + position·position     (query part · key part)

* a learned relative position bias (T5): the score is query·key (T5 does not divide by √d_k) plus the bias the model
  learned for the key's offset from the query (bucketed), one per head: two terms, the second positional.

**A head's share of each term over a sentence.** Softmax ignores a constant added to a query's row, so only how a term
varies across the keys of a row matters. Each term is centred per query row (its mean over the keys the query may see
subtracted); its share is the sum over every (query, key) pair of its |centred value|, divided by that sum over the
terms. Rows with a single visible key (the decoder's first query) carry no choice and count nothing.

**Positional, content or mixed.** Within a row the query is fixed, so what makes one key win over another is the key's
part: its position in the terms that vary with it (``TermSplit.key_position_terms``), its token in the others. A head
is *positional* when those terms hold at least POSITIONAL_SHARE of the centred magnitude, a *content* head when they hold
at most 1 − POSITIONAL_SHARE, and *mixed* in between.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from model.data.token_labels import display_labels
from model.kinds import AttentionKind
from model.neuron.splits import ABSOLUTE_TERMS, TermSplit
from model.neuron.vectors import KindVectors, NeuronError, SentenceVectors

POSITIONAL_SHARE = 0.6  # at least this share in the key's position terms: positional; at most 1 − it: content


def visible_keys(scores: np.ndarray) -> np.ndarray:
    """Where a query may attend (its score is finite): [..., Q, K] booleans."""
    return np.isfinite(scores)


def term_shares(terms: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Each term's share of the row-centred magnitude (see the module's docstring): terms [n, ..., Q, K], visible
    [..., Q, K] -> [..., n]; NaN where no row has two keys to choose between."""
    count = visible.sum(-1, keepdims=True)  # [..., Q, 1]
    means = np.where(visible, terms, 0.0).sum(-1, keepdims=True) / np.maximum(count, 1)  # [n, ..., Q, 1]
    centred = np.where(visible, np.abs(terms - means), 0.0)  # [n, ..., Q, K]
    sums = np.moveaxis(centred.sum((-2, -1)), 0, -1)  # [..., 4]
    total = sums.sum(-1, keepdims=True)  # [..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, sums / total, np.nan)


def key_position_share(shares: np.ndarray, split: TermSplit) -> float:
    """The share of a head's terms [n] that vary with the key's position (NaN when it has none)."""
    return float(shares[list(split.key_position_terms)].sum())


def classify(shares: np.ndarray, split: TermSplit) -> str:
    """'positional', 'content' or 'mixed' from a head's term shares [n]; '' when it has none (NaN)."""
    positional = key_position_share(shares, split)
    if not math.isfinite(positional):
        return ""
    if positional >= POSITIONAL_SHARE:
        return "positional"
    return "content" if positional <= 1 - POSITIONAL_SHARE else "mixed"


def share_text(shares: np.ndarray, split: TermSplit) -> str:
    """'token·token 12%, token·position 30%, …'."""
    return ", ".join(f"{name} {float(share):.0%}" for name, share in zip(split.names, shares))


def describe_terms(shares: np.ndarray, split: TermSplit) -> str:
    """'positional (by its terms: 78%)': the class and the share of the terms with the key's position."""
    verdict = classify(shares, split)
    if not verdict:
        return "—"
    return f"{verdict} (by its terms: {key_position_share(shares, split):.0%})"


def class_rule(split: TermSplit = ABSOLUTE_TERMS) -> str:
    """How a head is classed from its terms, naming the terms that vary with the key's position."""
    named = " + ".join(split.names[index] for index in split.key_position_terms)
    return (
        f"By its terms: the share of the row-centred score magnitude in the terms that vary with the key's position "
        f"({named}). Positional ≥ {POSITIONAL_SHARE:.0%}, content ≤ {1 - POSITIONAL_SHARE:.0%}, mixed in between."
    )


CLASS_RULE = class_rule()


@dataclass
class HeadTerms:
    """Every head of one kind: its term shares [layers, heads, n] and its class."""

    kind: AttentionKind
    shares: np.ndarray  # [layers, heads, n] in ``split.names``' order
    split: TermSplit = ABSOLUTE_TERMS

    def verdict(self, layer: int, head: int) -> str:
        return classify(self.shares[layer, head], self.split)

    def describe(self, layer: int, head: int) -> str:
        return describe_terms(self.shares[layer, head], self.split)

    def label(self, layer: int, head: int) -> str:
        """'positional 78%': the class and the share of the terms with the key's position ('—' without a class)."""
        verdict = self.verdict(layer, head)
        return f"{verdict} {self.positional_share(layer, head):.0%}" if verdict else "—"

    def detail(self, layer: int, head: int) -> str:
        """Every term's share: 'token·token 12%, token·position 30%, …'."""
        return share_text(self.shares[layer, head], self.split)

    def positional_share(self, layer: int, head: int) -> float:
        return key_position_share(self.shares[layer, head], self.split)


def head_terms(vectors: KindVectors) -> HeadTerms:
    """The term shares of every head of a kind (a NeuronError when its scores are not split)."""
    if vectors.terms is None or vectors.term_split is None:
        raise NeuronError("this model's scores are not split into positional terms: it adds no positional table")
    return HeadTerms(vectors.kind, term_shares(vectors.terms, visible_keys(vectors.scores)), vectors.term_split)


@dataclass
class NeuronRow:
    """One head's query row inside: its query vector, every key vector, their products, scores, weights and terms."""

    kind: AttentionKind
    layer: int  # from 0
    head: int  # from 0
    query: int  # the query's position, from 0
    query_tokens: list[str]  # every query's label (the row's is query_tokens[query])
    key_tokens: list[str]  # [K]
    query_vector: np.ndarray  # [d_k]
    key_vectors: np.ndarray  # [K, d_k]
    products: np.ndarray  # [d_k, K] query_vector[d] * key_vectors[key, d]: a column sums to the unscaled score
    scores: np.ndarray  # [K] the scaled scores, -inf where the key is masked
    weights: np.ndarray  # [K] softmax of the scores: the trace's attention row
    terms: np.ndarray | None  # [n, K] the terms (``term_split.names``), NaN where masked; None when not split
    shares: np.ndarray | None  # [n] the head's shares over the sentence; None when not split
    head_weights: np.ndarray  # [Q, K] every query row's weights: the head's attention, this row one of them
    positions: str = ""  # the positional encoding split off
    term_split: TermSplit = ABSOLUTE_TERMS  # what the terms are (when split)

    @property
    def d_k(self) -> int:
        return int(self.query_vector.shape[0])

    @property
    def query_token(self) -> str:
        return self.query_tokens[self.query]

    @property
    def verdict(self) -> str:
        return classify(self.shares, self.term_split) if self.shares is not None else ""

    def title(self) -> str:
        """'cross-attention (encoder-decoder), layer 2, head 3, query 4 “chat”'."""
        shown = display_labels(self.query_tokens)[self.query]
        return f"{self.kind.label}, layer {self.layer + 1}, head {self.head + 1}, query {self.query + 1} “{shown}”"


def check_choice(vectors: SentenceVectors, kind: AttentionKind | str, layer: int, head: int, query: int) -> KindVectors:
    """The kind's vectors when layer, head and query (from 0) exist; else a NeuronError naming what there is."""
    kind_vectors = vectors.of(kind)
    n_layers, n_heads, n_queries, _ = kind_vectors.shape
    kind = kind_vectors.kind
    if not 0 <= layer < n_layers:
        raise NeuronError(f"layer {layer + 1}: this model's {kind.label} has layers 1 to {n_layers}")
    if not 0 <= head < n_heads:
        raise NeuronError(f"head {head + 1}: this model's layers have heads 1 to {n_heads}")
    if n_queries == 0:
        raise NeuronError(f"the {kind.label} has no queries yet: decode a step first")
    if not 0 <= query < n_queries:
        raise NeuronError(f"query {query + 1}: the {kind.label} has queries 1 to {n_queries}")
    return kind_vectors


def neuron_row(
    vectors: SentenceVectors,
    kind: AttentionKind | str,
    layer: int,
    head: int,
    query: int,
    labels: tuple[list[str], list[str]] | None = None,
) -> NeuronRow:
    """Head ``head`` of ``kind``'s ``layer`` at query position ``query`` (all from 0); ``labels`` = (query tokens, key
    tokens) as a trace's ``axis_labels`` gives them (positions when not given)."""
    kind_vectors = check_choice(vectors, kind, layer, head, query)
    _, _, n_queries, n_keys = kind_vectors.shape
    query_tokens, key_tokens = labels if labels is not None else ([str(i + 1) for i in range(n_queries)], [])
    key_tokens = key_tokens or [str(i + 1) for i in range(n_keys)]
    q = kind_vectors.queries[layer, head, query]  # [d_k]
    k = kind_vectors.keys[layer, head]  # [K, d_k]
    scores = kind_vectors.scores[layer, head, query]  # [K]
    terms = shares = None
    if kind_vectors.terms is not None:
        every = kind_vectors.terms[:, layer, head]  # [n, Q, K]: the head's whole sentence, for its shares
        visible = visible_keys(kind_vectors.scores[layer, head])  # [Q, K]
        shares = term_shares(every, visible)  # [n]
        terms = np.where(visible[query][None], every[:, query], np.nan)  # [n, K]
    return NeuronRow(
        kind_vectors.kind,
        layer,
        head,
        query,
        list(query_tokens[:n_queries]),
        list(key_tokens[:n_keys]),
        q.copy(),
        k.copy(),
        q[:, None] * k.T,  # [d_k, K]
        scores.copy(),
        kind_vectors.weights[layer, head, query].copy(),
        terms,
        shares,
        kind_vectors.weights[layer, head].copy(),
        vectors.positions,
        kind_vectors.term_split or ABSOLUTE_TERMS,
    )
