"""What heads do, in NumPy, on any trace: statistics, roles, aggregation, rollout.

All functions take attention as [..., queries, keys] arrays whose rows sum to 1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from model.kinds import AttentionKind

PUNCTUATION = set(".,;:!?¡¿'\"()[]-–—…«»")
ROLE_THRESHOLD = 0.5  # a positional or sink role needs at least this share of the attention
BROAD_ENTROPY = 0.75  # normalised entropy at or above which a head is called broad (near uniform)
# A cross-attention head is alignment-like when its normalised entropy is below this (and its peaks spread,
# below), "diffuse" from here up to BROAD_ENTROPY. Measured first on the default model of 2026-11 (20 min of
# training): layer 3's heads had a median of 0.15 (95th percentile 0.28), layer 1's 0.50 (5th percentile
# 0.32), so 0.30 lay between the two. Later default models have layer-1 cross heads nearly as sharp as layer
# 3's that still align badly (the shipped one: AER 0.77-0.86 against 0.10-0.47 for layer 3, 0.10-0.15 without
# head 2), so entropy alone called most of layer 1's head-sentences alignment-like. What separates them is
# whether the peaks move through the source (SPREAD_THRESHOLD): with both tests, over 202 toy-fr sentences
# decoded greedily by the shipped default, 93% of layer 3's head-sentences are alignment-like and 20% of
# layer 1's; the rest of layer 1 is focused (35%), a sink on </s> (31%) or diffuse (14%).
ALIGNMENT_ENTROPY = 0.30
# Sharp is not enough: a cross head must also peak on different source pieces as the output grows
# (distinct peaks / min(queries, keys) at least this) to be alignment-like; below it, it is "focused".
SPREAD_THRESHOLD = 0.5


def is_punctuation(token: str) -> bool:
    text = token.replace("▁", "").strip()
    return bool(text) and all(ch in PUNCTUATION for ch in text)


@dataclass
class HeadStatistics:
    entropy: float  # mean over queries of -sum p log p, in nats
    normalised_entropy: float  # entropy / log(number of keys a query could see), 0-1
    distance: float  # mean |query - key| weighted by attention (for cross: distance from the diagonal)
    self_share: float  # attention on the query's own position
    previous_share: float
    next_share: float
    first_share: float  # on the first key (<s> in the decoder)
    last_share: float  # on the last key (</s> in the encoder)
    punctuation_share: float
    max_weight: float  # mean over queries of the largest weight (peakedness)
    peak_spread: float = 1.0  # distinct keys the rows peak on / min(queries, keys): 1 = every row its own key
    role: str = ""
    role_score: float = 0.0  # the statistic that decided the role (see describe_role)

    def to_dict(self) -> dict:
        return asdict(self)


STATISTIC_NAMES = (
    "entropy",
    "normalised_entropy",
    "distance",
    "self_share",
    "previous_share",
    "next_share",
    "first_share",
    "last_share",
    "punctuation_share",
    "max_weight",
    "peak_spread",
)


def heads_statistics(
    weights: np.ndarray, key_tokens: list[str] | None = None, kind: AttentionKind = AttentionKind.ENCODER
) -> list[HeadStatistics]:
    """Statistics and role of every head of [..., queries, keys] (e.g. [layers, heads, Q, K]), in the
    order of the leading axes flattened: one pass over all heads, which a step in the window needs."""
    kind = AttentionKind.parse(kind)
    columns = statistics_columns(weights, key_tokens, kind)
    n_matrices = int(np.prod(np.shape(weights)[:-2], dtype=np.int64))
    if np.shape(weights)[-2] == 0 or np.shape(weights)[-1] == 0:
        return [HeadStatistics(**{name: 0.0 for name in STATISTIC_NAMES}, role="empty") for _ in range(n_matrices)]
    roles, scores = head_roles(columns, kind, key_tokens)
    return [
        HeadStatistics(
            **{name: float(values[index]) for name, values in columns.items()}, role=roles[index], role_score=float(scores[index])
        )
        for index in range(n_matrices)
    ]


def statistics_columns(
    weights: np.ndarray, key_tokens: list[str] | None = None, kind: AttentionKind = AttentionKind.ENCODER
) -> dict[str, np.ndarray]:
    """Each of STATISTIC_NAMES as an array over the heads of [..., queries, keys] (leading axes flattened), without
    the roles (``head_roles``): what a corpus index computes for many sentences of one shape at once."""
    kind = AttentionKind.parse(kind)
    weights = np.asarray(weights, dtype=np.float32)  # float32 halves the work; the sums are taken in float64
    n_queries, n_keys = weights.shape[-2:]
    matrices = weights.reshape(-1, n_queries, n_keys)  # [heads, Q, K]
    if n_queries == 0 or n_keys == 0:
        return {name: np.zeros(len(matrices)) for name in STATISTIC_NAMES}
    queries = np.arange(n_queries)[:, None]
    keys = np.arange(n_keys)[None, :]
    logs = np.log(matrices, out=np.zeros_like(matrices), where=matrices > 0)  # [heads, Q, K], 0 log 0 = 0
    entropy_rows = -np.einsum("hqk,hqk->hq", matrices, logs, dtype=np.float64)  # [heads, Q]
    visible = np.minimum(queries[:, 0] + 1, n_keys) if kind.causal else np.full(n_queries, n_keys)
    normaliser = np.log(np.maximum(visible, 2))  # [Q]
    normalised = np.where(visible > 1, entropy_rows / normaliser, 0.0).mean(-1)  # [heads]
    if not kind.is_self_attention:
        offsets = np.abs(keys - queries * (n_keys - 1) / max(n_queries - 1, 1))  # [Q, K] from the diagonal
    else:
        offsets = np.abs(keys - queries)
    distance = np.einsum("hqk,qk->h", matrices, offsets.astype(np.float32), dtype=np.float64) / n_queries  # [heads]
    punctuation = np.array([is_punctuation(t) for t in key_tokens]) if key_tokens else np.zeros(n_keys, bool)
    punctuation_share = (
        matrices[:, :, punctuation].sum(-1, dtype=np.float64).mean(-1) if punctuation.any() else np.zeros(len(matrices))
    )

    def diagonal(offset: int) -> np.ndarray:  # [heads]: mean over the queries that have such a key
        values = np.diagonal(matrices, offset=offset, axis1=1, axis2=2)
        return values.mean(-1, dtype=np.float64) if values.shape[-1] else np.zeros(len(matrices))

    zeros = np.zeros(len(matrices))
    return dict(
        entropy=entropy_rows.mean(-1),
        normalised_entropy=normalised,
        distance=distance,
        self_share=diagonal(0) if kind.is_self_attention else zeros,
        previous_share=diagonal(-1) if kind.is_self_attention else zeros,
        next_share=diagonal(1) if kind is AttentionKind.ENCODER else zeros,
        first_share=matrices[:, :, 0].mean(-1, dtype=np.float64),
        last_share=matrices[:, :, -1].mean(-1, dtype=np.float64),
        punctuation_share=punctuation_share,
        max_weight=matrices.max(-1).mean(-1, dtype=np.float64),
        peak_spread=peak_spread(matrices),
    )


def peak_spread(matrices: np.ndarray) -> np.ndarray:
    """[heads]: how many distinct keys the rows of each [Q, K] matrix peak on, over min(Q, K). An alignment
    moves through the source as the output grows (near 1); a head that keeps peaking on the same few
    pieces (the verb, the subject) stays low, however sharp it is."""
    n_queries, n_keys = matrices.shape[-2:]
    peaks = np.sort(matrices.argmax(-1), axis=-1)  # [heads, Q]
    distinct = 1 + (np.diff(peaks, axis=-1) != 0).sum(-1) if n_queries else np.zeros(len(peaks))  # [heads]
    return distinct.astype(np.float64) / max(min(n_queries, n_keys), 1)


def head_roles(
    columns: dict[str, np.ndarray], kind: AttentionKind, key_tokens: list[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """A label for what each head mostly does, with the statistic that decided it (``columns`` as
    ``statistics_columns`` gives them): the share of attention on that key for a sink or positional role, the
    normalised entropy otherwise (see describe_role); the first candidate wins a tie."""
    first_name = "sink: <s>" if key_tokens and key_tokens[0] == "<s>" else "first token"
    last_name = "sink: </s>" if key_tokens and key_tokens[-1] == "</s>" else "last token"
    names = ["sink: punctuation", first_name, last_name]
    shares = [columns["punctuation_share"], columns["first_share"], columns["last_share"]]
    if kind.is_self_attention:
        names += ["positional: self", "positional: previous", "positional: next"]
        shares += [columns["self_share"], columns["previous_share"], columns["next_share"]]
    stacked = np.stack(shares)  # [candidates, heads]
    best = stacked.argmax(0)  # [heads]
    share = stacked.max(0)  # [heads]
    entropy, spread = columns["normalised_entropy"], columns["peak_spread"]
    roles, scores = [], np.zeros(len(best))
    for index in range(len(best)):
        if share[index] >= ROLE_THRESHOLD:
            role, score = names[best[index]], share[index]
        elif entropy[index] >= BROAD_ENTROPY:
            role, score = "broad", entropy[index]
        elif kind is AttentionKind.CROSS and entropy[index] >= ALIGNMENT_ENTROPY:
            role, score = "diffuse", entropy[index]
        elif kind is AttentionKind.CROSS:
            aligned = spread[index] >= SPREAD_THRESHOLD
            role, score = ("alignment-like", entropy[index]) if aligned else ("focused", spread[index])
        else:
            role, score = "mixed", entropy[index]
        roles.append(role)
        scores[index] = score
    return roles, scores


def describe_role(role: str) -> str:
    """The rule that gives a head this role, naming the statistic its role score holds."""
    if role.startswith(("sink", "positional", "first token", "last token")):
        return f"role score = share of the attention on that key (≥ {ROLE_THRESHOLD:.2f})"
    if role == "broad":
        return f"role score = normalised entropy (≥ {BROAD_ENTROPY:.2f}: attention spread almost evenly)"
    if role == "diffuse":
        return (
            f"role score = normalised entropy ({ALIGNMENT_ENTROPY:.2f} to {BROAD_ENTROPY:.2f}: spread over "
            f"several source pieces, too wide to align words)"
        )
    if role == "alignment-like":
        return f"role score = normalised entropy (< {ALIGNMENT_ENTROPY:.2f}: each row peaks on few source pieces)"
    if role == "focused":
        return (
            f"role score = spread of the rows' peaks (< {SPREAD_THRESHOLD:.2f}: sharp, but on the same few "
            "source pieces at every step)"
        )
    if role == "mixed":
        return f"role score = normalised entropy (< {BROAD_ENTROPY:.2f}, no key gets {ROLE_THRESHOLD:.2f} of it)"
    return "role score: none"


ROLE_SCORE_HELP = (
    f"The statistic that decided the role. Sinks and positional roles: the share of attention on "
    f"that key, at least {ROLE_THRESHOLD:.2f}. Otherwise the normalised entropy (0 = one key, "
    f"1 = uniform): broad ≥ {BROAD_ENTROPY:.2f}; cross-attention alignment-like < "
    f"{ALIGNMENT_ENTROPY:.2f}, diffuse in between; self-attention mixed below {BROAD_ENTROPY:.2f}. "
    f"Focused (cross): the spread of the rows' peaks over the source, below {SPREAD_THRESHOLD:.2f}."
)


def all_head_statistics(trace) -> dict[AttentionKind, list[list[HeadStatistics]]]:
    """Statistics of every head of every kind a Trace holds: {kind: [layer][head]}."""
    result = {}
    for kind in trace.kinds:
        weights = trace.matrix(kind)  # [layers, heads, Q, K]
        _, key_tokens = trace.axis_labels(kind)
        flat = heads_statistics(weights, key_tokens, kind)
        n_heads = weights.shape[1]
        result[kind] = [flat[layer * n_heads : (layer + 1) * n_heads] for layer in range(weights.shape[0])]
    return result


# --- aggregation -------------------------------------------------------------------------------------
def mean_over_heads(weights: np.ndarray) -> np.ndarray:
    """[layers, heads, Q, K] -> [layers, Q, K]."""
    return weights.mean(axis=1)


def max_over_heads(weights: np.ndarray) -> np.ndarray:
    return weights.max(axis=1)


def rollout(weights: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020) through self-attention layers [layers, heads, N, N]:
    per layer A = residual * I + (1 - residual) * mean over heads, rows renormalised, multiplied from
    the first layer up. Returns [layers, N, N]: the rollout up to each layer."""
    n = weights.shape[-1]
    identity = np.eye(n)
    total = identity
    result = []
    for layer in weights.mean(axis=1):
        mixed = residual * identity + (1 - residual) * layer
        mixed = mixed / mixed.sum(-1, keepdims=True)
        total = mixed @ total
        result.append(total)
    return np.array(result, dtype=np.float32) if result else np.zeros((0, n, n), np.float32)
