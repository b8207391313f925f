"""What each head is worth: head importance (Michel, Levy and Neubig, "Are Sixteen Heads Really Better than
One?", NeurIPS 2019) and the pruning curve it orders.

Every head's output is multiplied by a gate ξ_h = 1 (a pre-hook on W^O scales the head's slice of the
concatenated outputs, so the forward pass is unchanged). The importance of a head is the expected absolute
sensitivity of the loss to its gate, I_h = E_x |∂L(x)/∂ξ_h| = E_x |A_h(x)ᵀ ∂L(x)/∂A_h(x)| with A_h the head's
output — one backward pass per sentence, since the absolute value is taken per sentence. L is the model's objective
(model/attribution/objectives.py): a translation's teacher-forced cross-entropy per target piece, a decoder-only
model's language-modelling cross-entropy per piece, a classifier's per label. As in the paper, scores are normalised
per layer (ℓ2 norm) so that layers compare. A head whose output never reaches the model (zero W^O columns) scores
exactly 0.

The pruning curve removes heads from the least important up (model/attribution/masking.py) and scores the model
after each removal as its objective says: greedy translations' exact match and BLEU (as ``evaluate`` does), a
decoder-only model's next-piece accuracy and perplexity, a classifier's exact match and macro-F1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from model.attribution.objectives import TRANSLATION, Scoring, objective_of
from model.data.corpora import DEFAULT_SIZES, CorpusError, CorpusSpec, Pair, generate_builtin, load_corpus
from model.errors import UserError
from model.family import Bundle, capabilities_of, family_of
from model.kinds import AttentionKind
from model.network import Network, stack_layers
from model.nn.hooks import copy_without_thread_hooks
from model.nn.masking import Head, MaskError, head_projection, masked_model
from model.runtime import follow_free_cores
from model.training.evaluation import Interrupted


@dataclass
class HeadImportance:
    """Each kind's importance [layers, heads]: ``raw`` E|∂L/∂ξ_h|, ``normalised`` per layer (ℓ2)."""

    raw: dict[AttentionKind, np.ndarray]
    normalised: dict[AttentionKind, np.ndarray]
    n_sentences: int

    def ranking(self) -> list[tuple[Head, float]]:
        """Every head with its normalised importance, the least important first (ties in the model's order)."""
        heads = [
            (Head(kind, layer, head), float(table[layer, head]))
            for kind, table in self.normalised.items()
            for layer in range(table.shape[0])
            for head in range(table.shape[1])
        ]
        return sorted(heads, key=lambda item: (item[1], item[0].sort_key()))

    def rows(self) -> list[dict]:
        """One row per head, for a CSV: kind, layer and head (from 1), raw and normalised importance, rank (1 = least)."""
        rank = {head: index + 1 for index, (head, _) in enumerate(self.ranking())}
        return [
            {
                "kind": kind.value,
                "layer": layer + 1,
                "head": head + 1,
                "importance": float(self.raw[kind][layer, head]),
                "normalised": float(table[layer, head]),
                "rank_least_first": rank[Head(kind, layer, head)],
            }
            for kind, table in self.normalised.items()
            for layer in range(table.shape[0])
            for head in range(table.shape[1])
        ]


def _gated_copy(model: Network) -> tuple[Any, dict[tuple[AttentionKind, int], torch.Tensor]]:
    """A copy of ``model`` whose heads' outputs are scaled by gates of value 1 that gradients reach:
    one gate tensor [heads] per (kind, layer)."""
    gated = copy_without_thread_hooks(model).eval()
    for parameter in gated.parameters():
        parameter.requires_grad_(False)
    config = gated.config
    gates: dict[tuple[AttentionKind, int], torch.Tensor] = {}
    for kind in capabilities_of(gated).kinds:
        n_layers = stack_layers(config, kind.stack)
        for layer in range(n_layers):
            projection, weight, d_k = head_projection(gated, kind, layer)
            gate = gates[(kind, layer)] = torch.ones(weight.shape[1] // d_k, requires_grad=True)  # [H]

            def scale(_module, inputs, gate=gate, d_k=d_k):
                (context,) = inputs  # [..., H * d_k]
                return (context * gate.repeat_interleave(d_k),)

            projection.register_forward_pre_hook(scale)
    return gated, gates


class TooManySentences(UserError):
    """More sentences asked for than the corpus gives; ``available`` is how many it does."""

    def __init__(self, message: str, available: int) -> None:
        super().__init__(message)
        self.available = available


def fresh_pair_limit(name: str) -> int:
    """The most fresh pairs of the built-in corpus ``name`` heads are measured on: its default size (what a model
    trains on), which keeps a run's time and memory bounded."""
    return DEFAULT_SIZES[name]


def measured_pairs(corpus: CorpusSpec, n: int, seed: int, exact: bool = False) -> list[Pair]:
    """The sentences heads are measured on: ``n`` fresh pairs of a built-in corpus (generated with ``seed``), else
    the first ``n`` of a corpus file's test split. UserError when the file cannot be read or its split is empty;
    TooManySentences when ``n`` is more than a built-in corpus gives (``fresh_pair_limit``), or, with ``exact``, more
    than the file's test split holds (without it, the split's pairs are measured)."""
    if corpus.is_builtin:
        limit = fresh_pair_limit(corpus.name)
        if n > limit:
            raise TooManySentences(f"{corpus.name} gives at most {limit:,} fresh pairs to measure (its default size)", limit)
        return generate_builtin(corpus.name, n, seed)
    try:
        test = load_corpus(corpus).test
    except (CorpusError, OSError) as error:
        raise UserError(f"its corpus {corpus.describe()} could not be read ({error})") from None
    if not test:
        raise UserError(f"the test split of {corpus.describe()} is empty; the corpus is too small")
    if exact and n > len(test):
        raise TooManySentences(f"the test split of {corpus.describe()} has {len(test):,} pairs", len(test))
    return test[:n]


def check_importance(model: Network) -> None:
    """A MaskError (one line) unless ``model``'s heads can be gated and scored (its ``Capabilities.head_importance``)."""
    if not capabilities_of(model).head_importance:
        title = family_of(model).title
        if capabilities_of(model).head_masking:  # its heads can be gated, but nothing says what to score it on
            raise MaskError(
                f"head importance scores a model on its objective (a translation, a language model, masked pieces, a "
                f"classifier's labels or decisions); this model has none ({title}: a bare encoder, with no head whose "
                f"output could be scored)"
            )
        raise MaskError(
            f"head importance is measured where heads can be gated and the model's objective is known (a translation, "
            f"a language model, a classifier's labels), not on this model ({title})"
        )


def head_importance(
    bundle: Bundle, pairs: list[Pair], progress: Callable[[int, int], None] | None = None, stop: Callable[[], bool] | None = None
) -> HeadImportance:
    """Importance of every head of ``bundle``'s model over ``pairs`` (pairs of its corpus: their sources are a
    decoder-only model's texts), by its objective. ``progress(done, total)`` after each sentence; ``stop()`` True raises
    Interrupted between sentences."""
    check_importance(bundle.model)
    objective = objective_of(bundle.model)
    model, gates = _gated_copy(bundle.model)  # its family's capabilities say its heads' importance is measured
    device = next(model.parameters()).device
    sums = {key: np.zeros(len(gate)) for key, gate in gates.items()}  # (kind, layer) -> [H]
    examples = objective.examples(bundle, pairs)
    for done, example in enumerate(examples, start=1):
        follow_free_cores()
        if stop is not None and stop():
            raise Interrupted
        loss = objective.loss(model, example, device)
        for gate in gates.values():
            gate.grad = None
        loss.backward()
        for key, gate in gates.items():
            assert gate.grad is not None
            sums[key] += gate.grad.abs().numpy()  # [H]: |∂L/∂ξ_h| of this sentence
        if progress is not None:
            progress(done, len(examples))
    n = max(len(examples), 1)
    raw: dict[AttentionKind, np.ndarray] = {}  # kind -> [layers, heads]
    for (kind, _layer), table in sums.items():  # in the model's order of layers
        raw[kind] = np.vstack([raw[kind], table / n]) if kind in raw else (table / n)[None]
    normalised = {kind: table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-20) for kind, table in raw.items()}
    return HeadImportance(raw, normalised, len(examples))


@dataclass
class PruningPoint:
    n_removed: int
    removed: tuple[Head, ...]  # every head removed so far, the least important first
    first: float  # the model's first score on [0, 1] (``scoring.first``: exact match, next-piece accuracy)
    second: float  # its second (``scoring.second``: BLEU, perplexity, macro-F1)
    scoring: Scoring = TRANSLATION

    def row(self) -> dict:
        """The point as a CSV row: heads removed, both scores under their columns, the last head removed."""
        first, second = self.scoring.columns
        return {
            "heads_removed": self.n_removed,
            first: round(self.first, 6),
            second: round(self.second, 4),
            "last_removed": self.removed[-1].describe() if self.removed else "",
        }


def pruning_curve(
    bundle: Bundle,
    importance: HeadImportance,
    pairs: list[Pair],
    counts: list[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[PruningPoint]:
    """The model's scores on ``pairs`` (its objective's: greedy translations' exact match and BLEU, …) with the ``n``
    least important heads knocked out, for each n in ``counts`` (default: 0, 1, … every head)."""
    order = [head for head, _ in importance.ranking()]
    counts = counts if counts is not None else list(range(len(order) + 1))
    objective = objective_of(bundle.model)
    points = []
    for index, n in enumerate(counts):
        if stop is not None and stop():
            raise Interrupted
        removed = tuple(order[:n])
        first, second = objective.scores(bundle, masked_model(bundle.model, removed), pairs, stop)
        points.append(PruningPoint(n, removed, first, second, objective.scoring))
        if progress is not None:
            progress(index + 1, len(counts))
    return points


def heads_before_drop(points: list[PruningPoint], drop: float = 0.05) -> int:
    """How many heads can go before the first score (exact match) falls by ``drop`` or more below the full model's."""
    baseline = points[0].first
    allowed = 0
    for point in points:
        if point.first <= baseline - drop:
            break
        allowed = point.n_removed
    return allowed
