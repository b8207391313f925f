"""The joint query-key map of a head from a corpus index (AttentionViz): the queries and keys of the tokens of a sample
of sentences, projected together into two dimensions by PCA (always there), t-SNE (scikit-learn) or UMAP (the optional
umap-learn, imported only when asked for).

Queries and keys live in one space (a query attends to the keys its dot product favours), but a head may shift or
scale them apart. As AttentionViz does, the keys are first translated so that their mean is the queries' mean and both
are scaled to the same mean length (queries × c, keys ÷ c): every attention weight stays as it was, since a query's
scores all change by the same amount and the products are unchanged, and the map then shows which keys each query is
near. ``normalise=False`` maps the raw vectors.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from model.corpus.index import CorpusIndex
from model.corpus.layout import CorpusIndexError, key_side, query_side
from model.corpus.map_panel import MapPanel
from model.files import atomic_output
from model.kinds import AttentionKind
from model.nn.masking import Head

METHODS = ("pca", "tsne", "umap")
DEFAULT_SENTENCES = 200  # sentences whose tokens are mapped (t-SNE and UMAP take seconds for a few thousand points)
NEIGHBOURS = 10  # for the share of a point's nearest neighbours of its own type (query or key)


def sample_sentences(index: CorpusIndex, count: int, seed: int = 0) -> np.ndarray:
    """``count`` sentence ids of the index drawn with ``seed`` (all when it has fewer), in order."""
    if count < 1:
        raise CorpusIndexError(f"the map needs at least 1 sentence, not {count}")
    n_sentences = index.n_sentences
    if n_sentences == 0:
        raise CorpusIndexError(f"{index.folder}: no sentence is indexed yet")
    if count >= n_sentences:
        return np.arange(n_sentences)
    return np.sort(np.random.default_rng(seed).choice(n_sentences, size=count, replace=False))


def _side_rows(index: CorpusIndex, side: str, sentences: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(row ids, sentence ids, positions, tokens) of a side's tokens in ``sentences``."""
    _, rows = index.query(
        "SELECT row_id, sentence_id, position, token FROM tokens WHERE side = ? AND sentence_id IN "
        "(SELECT unnest(?::INTEGER[])) ORDER BY row_id",
        [side, sentences.tolist()],
    )
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), []
    row_ids, sentence_ids, positions, tokens = zip(*rows)
    return np.array(row_ids), np.array(sentence_ids), np.array(positions), list(tokens)


def normalised(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys moved to the queries' mean, both scaled to one mean length: every attention weight unchanged."""
    keys = keys - keys.mean(0) + queries.mean(0)
    scale = np.sqrt(np.linalg.norm(keys, axis=1).mean() / max(float(np.linalg.norm(queries, axis=1).mean()), 1e-12))
    return queries * scale, keys / max(scale, 1e-12)


def project(vectors: np.ndarray, method: str = "pca", seed: int = 0) -> tuple[np.ndarray, tuple[str, str]]:
    """([n, 2] coordinates, the axes' names) of ``vectors`` [n, d] by PCA, t-SNE or UMAP."""
    if method not in METHODS:
        raise CorpusIndexError(f"unknown projection {method!r}; choose {', '.join(METHODS)}")
    if len(vectors) < 3:
        raise CorpusIndexError(f"too few points to map ({len(vectors)}); index more sentences or map more of them")
    if method == "pca":
        from sklearn.decomposition import PCA  # deferred: scikit-learn takes a second to import; only maps need it

        pca = PCA(n_components=2, svd_solver="full").fit(vectors)
        share = pca.explained_variance_ratio_
        return pca.transform(vectors), (f"PC 1 ({share[0]:.0%})", f"PC 2 ({share[1]:.0%})")
    if method == "tsne":
        from sklearn.manifold import TSNE  # deferred: t-SNE's module loads only when a t-SNE map is asked for

        perplexity = float(min(30.0, max(2.0, (len(vectors) - 1) / 3)))
        embedded = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(vectors)
        return embedded, ("t-SNE 1", "t-SNE 2")
    try:
        import umap  # deferred: an optional library (pip install "transformer-explorer[umap]")
    except ImportError:
        raise CorpusIndexError(
            'UMAP needs umap-learn: pip install "transformer-explorer[umap]" (or pip install umap-learn); '
            "PCA and t-SNE need nothing more"
        ) from None
    neighbours = int(min(15, len(vectors) - 1))
    with warnings.catch_warnings():  # its notes on seeding and on falling back to a random start are not the user's
        warnings.simplefilter("ignore", UserWarning)
        embedded = umap.UMAP(n_components=2, n_neighbors=neighbours, random_state=seed, n_jobs=1).fit_transform(vectors)
    return np.asarray(embedded), ("UMAP 1", "UMAP 2")


def own_type_share(panel: MapPanel, neighbours: int = NEIGHBOURS) -> float:
    """The mean share of each point's nearest neighbours on the map that are of its own type (query or key): 1 when
    queries and keys lie apart, about the share of the larger group when they are mixed."""
    from sklearn.neighbors import NearestNeighbors  # deferred: scikit-learn takes a second to import

    count = min(neighbours, len(panel.xy) - 1)
    _, nearest = NearestNeighbors(n_neighbors=count + 1).fit(panel.xy).kneighbors(panel.xy)
    return float((panel.is_query[nearest[:, 1:]] == panel.is_query[:, None]).mean())


def position_share(panel: MapPanel) -> float:
    """R² of the tokens' positions fitted linearly from the map's coordinates (with their squares and product): how
    much of where a point lies its position says."""
    x, y = panel.xy[:, 0], panel.xy[:, 1]
    design = np.stack([np.ones_like(x), x, y, x * x, y * y, x * y], axis=1)
    positions = panel.positions.astype(np.float64)
    fitted = design @ np.linalg.lstsq(design, positions, rcond=None)[0]
    variance = float(((positions - positions.mean()) ** 2).sum())
    return 1.0 - float(((positions - fitted) ** 2).sum()) / variance if variance > 0 else 0.0


def head_map(
    index: CorpusIndex,
    head: Head,
    method: str = "pca",
    sentences: int | np.ndarray = DEFAULT_SENTENCES,
    seed: int = 0,
    normalise: bool = True,
) -> MapPanel:
    """One head's joint map over ``sentences`` (a count drawn with ``seed``, or the ids)."""
    chosen = sample_sentences(index, sentences, seed) if isinstance(sentences, int) else np.asarray(sentences)
    queries, keys = index.head_vectors(head)
    q_rows, q_sentences, q_positions, q_tokens = _side_rows(index, query_side(head.kind), chosen)
    k_rows, k_sentences, k_positions, k_tokens = _side_rows(index, key_side(head.kind), chosen)
    q_vectors = np.asarray(queries[q_rows], np.float32)
    k_vectors = np.asarray(keys[k_rows], np.float32)
    if normalise and len(q_vectors) and len(k_vectors):
        q_vectors, k_vectors = normalised(q_vectors, k_vectors)
    xy, axis_names = project(np.concatenate([q_vectors, k_vectors]), method, seed)
    panel = MapPanel(
        title=f"{head.kind.value} L{head.layer + 1} H{head.head + 1}",
        xy=np.asarray(xy, np.float64),
        is_query=np.concatenate([np.ones(len(q_rows), bool), np.zeros(len(k_rows), bool)]),
        positions=np.concatenate([q_positions, k_positions]).astype(np.int64),
        tokens=q_tokens + k_tokens,
        sentence_ids=np.concatenate([q_sentences, k_sentences]).astype(np.int64),
        row_ids=np.concatenate([q_rows, k_rows]).astype(np.int64),
        axis_names=axis_names,
        sides=(query_side(head.kind), key_side(head.kind)),
        sentence_texts={sentence: source for sentence, (source, _) in index.sentences(chosen.tolist()).items()},
    )
    panel.notes = [f"position R² {position_share(panel):.2f}", f"own-type neighbours {own_type_share(panel):.2f}"]
    return panel


def layer_maps(
    index: CorpusIndex,
    kind: AttentionKind,
    layer: int,
    method: str = "pca",
    sentences: int = DEFAULT_SENTENCES,
    seed: int = 0,
    normalise: bool = True,
) -> list[MapPanel]:
    """Small multiples: the map of every head of ``layer`` (from 0) of ``kind`` that the index holds, over the same
    sentences."""
    heads = [head for head in index.manifest.head_list if head.kind is kind and head.layer == layer]
    if not heads:
        raise CorpusIndexError(f"{index.folder}: holds the queries and keys of no {kind.value} head of layer {layer + 1}")
    chosen = sample_sentences(index, sentences, seed)
    return [head_map(index, head, method, chosen, seed, normalise) for head in heads]


def write_map_csv(panels: Sequence[MapPanel], path: str | Path, method: str) -> Path:
    """One row per point: head, method, x, y, query or key, token, sentence id, position, row id."""
    lines = ["head,method,x,y,vector,token,sentence_id,position,row_id"]
    for panel in panels:
        for index in range(len(panel.xy)):
            token = panel.tokens[index].replace('"', '""')
            vector = "query" if panel.is_query[index] else "key"
            lines.append(
                f'{panel.title},{method},{panel.xy[index, 0]:.6g},{panel.xy[index, 1]:.6g},{vector},"{token}",'
                f"{panel.sentence_ids[index]},{panel.positions[index]},{panel.row_ids[index]}"
            )
    with atomic_output(path) as temporary:
        temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Path(path)
