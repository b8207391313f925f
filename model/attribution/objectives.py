"""What head importance differentiates and what the pruning curve scores, for each kind of model: one objective per
``Capabilities.objective`` (model/family.py), which the model's family declares (``objective_of``).

* An encoder-decoder translates: its loss is the teacher-forced cross-entropy per reference piece; the pruning curve
  scores greedy translations against the references (exact match, BLEU).
* A decoder-only model continues text: its loss is the language-modelling cross-entropy per piece of each sentence
  (each piece predicted from those before it; a corpus's source sentences are the texts); the pruning curve scores the
  same, teacher-forced (next-piece accuracy, and perplexity: its geometric-mean probability per piece is drawn).
* A masked language model (BERT's, RoBERTa's masked-LM head) reads masked pieces back: every sixth piece of each
  sentence (from its first after the special start) is replaced by the mask token, and its loss is the cross-entropy
  of the pieces it hid; the pruning curve scores the same (masked-piece accuracy, perplexity over the masked pieces).
* The app's classifier labels text: its loss is the cross-entropy of each labelled position (a tagger's word, a
  sentence's class); the pruning curve scores its labels (exact match: every label right; macro-F1).
* A Hugging Face classification head (a sentence's class, a tag per piece) has classes of its own, of which no corpus
  here has labels: the unmasked model's own decision (its likeliest class) stands in for the label. Its loss is the
  cross-entropy of that decision, so a head's importance is what it contributes to the decision the model makes
  (Michel et al. 2019 differentiate the loss of gold labels); the pruning curve scores agreement with the unmasked
  model's decisions, and the mean probability it keeps on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np
import torch
import torch.nn.functional as F

from model.data.batching import bundle_examples
from model.data.corpora import Pair
from model.family import Bundle, Objective, capabilities_of
from model.network import LabellingNetwork, Network
from model.training.evaluation import Interrupted, score
from model.training.labelling import batch_logits, encode_labelled

Example = tuple[list[int], list[int]]  # (what the model reads, what it is scored on): ids, target ids or labels
MASK_EVERY = 6  # a masked language model's pieces masked: one in six (BERT masked 15% in training)
IGNORED = -100  # a position a masked language model is not scored at (cross-entropy's ignore_index)


@dataclass(frozen=True)
class Scoring:
    """What a pruning curve's two scores are: the first, whose drop the summary counts heads up to, on [0, 1]; the
    second shown beside it (drawn on [0, 1] as ``drawn`` says)."""

    first: str  # "exact match"
    second: str  # "BLEU"
    columns: tuple[str, str]  # their CSV columns: ("exact_match", "bleu")
    drawn_as: str  # the second as the plot draws it: "BLEU / 100"
    drawn: Callable[[float], float]  # the second -> [0, 1]
    how: str  # how the model is scored, a line for a view's note

    def second_text(self, value: float) -> str:
        """The second score as the summary writes it: "BLEU 23.1", "perplexity 41.2", "macro-F1 0.87"."""
        return f"{self.second} {value:.1f}" if abs(value) >= 10 or self.second == "BLEU" else f"{self.second} {value:.2f}"


TRANSLATION = Scoring(
    "exact match",
    "BLEU",
    ("exact_match", "bleu"),
    "BLEU / 100",
    lambda bleu: bleu / 100,
    "the translations are greedy, scored against the references",
)
LANGUAGE_MODEL = Scoring(
    "next-piece accuracy",
    "perplexity",
    ("next_piece_accuracy", "perplexity"),
    "1 / perplexity",
    lambda perplexity: 1.0 / perplexity if perplexity > 0 else 0.0,
    "each piece of each sentence is predicted from the ones before it (teacher-forced)",
)
MASKED_LANGUAGE_MODEL = Scoring(
    "masked-piece accuracy",
    "perplexity",
    ("masked_piece_accuracy", "perplexity"),
    "1 / perplexity",
    LANGUAGE_MODEL.drawn,
    f"every {MASK_EVERY}th piece of each sentence is masked and read back",
)
LABELLING = Scoring(
    "exact match",
    "macro-F1",
    ("exact_match", "macro_f1"),
    "macro-F1",
    lambda f1: f1,
    "the labels are scored against the corpus's (exact match: every label of a text right)",
)


class ObjectiveCode(Protocol):
    scoring: Scoring

    def examples(self, bundle: Bundle, pairs: list[Pair]) -> list[Example]: ...

    def loss(self, model: Network, example: Example, device: torch.device) -> torch.Tensor: ...  # a scalar, in the graph

    # (first, second) of ``model`` (``bundle``'s, or a copy with heads knocked out) on ``pairs``
    def scores(self, bundle: Bundle, model: Network, pairs: list[Pair], stop: Callable[[], bool] | None) -> tuple[float, float]: ...


class TranslationObjective:
    scoring = TRANSLATION

    def examples(self, bundle: Bundle, pairs: list[Pair]) -> list[Example]:
        return bundle_examples(bundle, pairs)  # as the model reads them (a pretrained one's special tokens)

    def loss(self, model: Network, example: Example, device: torch.device) -> torch.Tensor:
        source = torch.tensor([example[0]], device=device)  # [1, S]
        target = torch.tensor([example[1]], device=device)  # [1, T + 1]
        hidden = cast(Callable[..., torch.Tensor], model)(source, target[:, :-1])  # [1, T, d_model]
        return F.cross_entropy(model.logits(hidden)[0].float(), target[0, 1:])

    def scores(self, bundle: Bundle, model: Network, pairs: list[Pair], stop: Callable[[], bool] | None) -> tuple[float, float]:
        device = next(model.parameters()).device
        found = score(
            model, bundle.source_tokenizer, bundle.target_tokenizer, pairs, device, decode_limit=len(pairs), n_samples=0, stop=stop
        )
        return found.exact_match, found.bleu


class LanguageModelObjective:
    scoring = LANGUAGE_MODEL

    def examples(self, bundle: Bundle, pairs: list[Pair]) -> list[Example]:
        texts = [bundle.source_ids(pair.source)[0] for pair in pairs]  # each sentence as the model reads a prompt
        return [(ids, ids[1:]) for ids in texts if len(ids) > 1]

    def _log_probabilities(self, model: Network, example: Example, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(each next piece's log-probability [T - 1] given the pieces before it, whether it was the likeliest [T - 1])."""
        ids = torch.tensor([example[0]], device=device)  # [1, T]
        logits, _ = model.inspect(ids[:, :0], ids)  # [1, T, V]
        log_probabilities = torch.log_softmax(logits[0, :-1].float(), dim=-1)  # [T - 1, V]
        following = torch.tensor(example[1], device=device)  # [T - 1]
        return log_probabilities.gather(1, following[:, None])[:, 0], log_probabilities.argmax(-1) == following

    def loss(self, model: Network, example: Example, device: torch.device) -> torch.Tensor:
        return -self._log_probabilities(model, example, device)[0].mean()

    def scores(self, bundle: Bundle, model: Network, pairs: list[Pair], stop: Callable[[], bool] | None) -> tuple[float, float]:
        device = next(model.parameters()).device
        right, total, log_likelihood = 0, 0, 0.0
        with torch.inference_mode():
            for example in self.examples(bundle, pairs):
                if stop is not None and stop():
                    raise Interrupted
                found, likeliest = self._log_probabilities(model, example, device)  # [T - 1] each
                right, total, log_likelihood = right + int(likeliest.sum()), total + len(found), log_likelihood + float(found.sum())
        return right / max(total, 1), math.exp(-log_likelihood / max(total, 1))


class LabellingObjective:
    scoring = LABELLING

    def examples(self, bundle: Bundle, pairs: list[Pair]) -> list[Example]:
        return encode_labelled(pairs, bundle.source_tokenizer, bundle.model.config)

    def loss(self, model: Network, example: Example, device: torch.device) -> torch.Tensor:
        source = torch.tensor([example[0]], device=device)  # [1, S]
        labels = torch.tensor([example[1]], device=device)  # [1, S] or [1, 1]
        scores, gold = batch_logits(cast(LabellingNetwork, model), source, labels)  # [N, C], [N]
        return F.cross_entropy(scores.float(), gold) if len(gold) else scores.sum() * 0.0

    def scores(self, bundle: Bundle, model: Network, pairs: list[Pair], stop: Callable[[], bool] | None) -> tuple[float, float]:
        device = next(model.parameters()).device
        found = score(model, bundle.source_tokenizer, bundle.target_tokenizer, pairs, device, n_samples=0, stop=stop)
        return found.exact_match, float(np.nan_to_num(found.macro_f1 if found.macro_f1 is not None else np.nan))


class MaskedLanguageModelObjective(LanguageModelObjective):
    scoring = MASKED_LANGUAGE_MODEL

    def examples(self, bundle: Bundle, pairs: list[Pair]) -> list[Example]:
        mask_id = cast(MaskReader, bundle.model).mask_id
        found = []
        for pair in pairs:
            ids = bundle.source_ids(pair.source)[0]  # the special start, the pieces, the special end
            masked, labels = list(ids), [IGNORED] * len(ids)
            for position in range(1, len(ids) - 1, MASK_EVERY):
                masked[position], labels[position] = mask_id, ids[position]
            if len(ids) > 2:
                found.append((masked, labels))
        return found

    def _log_probabilities(self, model: Network, example: Example, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(each masked piece's log-probability [M], whether it was the likeliest [M])."""
        ids = torch.tensor([example[0]], device=device)  # [1, S]
        logits, _ = model.inspect(ids, ids[:, :0])  # [1, S, V]: an encoder-only model reads no target
        labels = torch.tensor(example[1], device=device)  # [S]
        hidden = labels != IGNORED
        log_probabilities = torch.log_softmax(logits[0, hidden].float(), dim=-1)  # [M, V]
        following = labels[hidden]  # [M]
        return log_probabilities.gather(1, following[:, None])[:, 0], log_probabilities.argmax(-1) == following


DECISIONS = Scoring(
    "agreement",
    "decided-class probability",
    ("agreement", "decided_class_probability"),
    "decided-class probability",
    lambda probability: probability,
    "each text's class as the unmasked model decides it stands in for a label (no corpus labels this head's classes)",
)


class DecisionObjective:
    """A classification head scored on the unmasked model's own decisions (see the module's docstring)."""

    scoring = DECISIONS

    @staticmethod
    def _log_probabilities(model: Network, ids: list[int], device: torch.device) -> torch.Tensor:
        """[N, C]: each decided position's class log-probabilities (a sentence head's one row, a tagger's each piece)."""
        source = torch.tensor([ids], device=device)  # [1, S]
        logits, _ = model.inspect(source, source[:, :0])  # [1, C] or [1, S, C]: an encoder-only model reads no target
        return torch.log_softmax(logits.float().reshape(-1, logits.shape[-1]), dim=-1)  # [N, C]

    def examples(self, bundle: Bundle, pairs: list[Pair]) -> list[Example]:
        device = next(bundle.model.parameters()).device
        found = []
        with torch.inference_mode():
            for pair in pairs:
                ids = bundle.source_ids(pair.source)[0]
                decided = self._log_probabilities(bundle.model, ids, device).argmax(-1)  # [N]: the unmasked model's
                found.append((ids, [int(label) for label in decided]))
        return found

    def loss(self, model: Network, example: Example, device: torch.device) -> torch.Tensor:
        log_probabilities = self._log_probabilities(model, example[0], device)  # [N, C]
        return F.nll_loss(log_probabilities, torch.tensor(example[1], device=device))

    def scores(self, bundle: Bundle, model: Network, pairs: list[Pair], stop: Callable[[], bool] | None) -> tuple[float, float]:
        device = next(model.parameters()).device
        agreed, total, probability = 0, 0, 0.0
        with torch.inference_mode():
            for ids, decided in self.examples(bundle, pairs):
                if stop is not None and stop():
                    raise Interrupted
                log_probabilities = self._log_probabilities(model, ids, device)  # [N, C]
                chosen = torch.tensor(decided, device=device)  # [N]
                agreed += int((log_probabilities.argmax(-1) == chosen).sum())
                probability += float(log_probabilities.gather(1, chosen[:, None]).exp().sum())
                total += len(decided)
        return agreed / max(total, 1), probability / max(total, 1)


class MaskReader(Protocol):
    mask_id: int


OBJECTIVES: dict[Objective, type[ObjectiveCode]] = {
    Objective.TRANSLATION: TranslationObjective,
    Objective.LANGUAGE_MODEL: LanguageModelObjective,
    Objective.MASKED_LANGUAGE_MODEL: MaskedLanguageModelObjective,
    Objective.LABELS: LabellingObjective,
    Objective.DECISIONS: DecisionObjective,
}


def objective_of(model: Network) -> ObjectiveCode:
    """The code of the objective ``model``'s family declares for it (``Capabilities.objective``); a ValueError for a
    model that declares none (``check_importance`` says so first)."""
    objective = capabilities_of(model).objective
    if objective is None:
        raise ValueError("this model declares no objective to score it on")
    return OBJECTIVES[objective]()
