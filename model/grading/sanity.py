"""Sanity checks (Adebayo et al., "Sanity Checks for Saliency Maps", NeurIPS 2018): a map that barely changes when
the model's weights are randomised, or when the model learnt nothing about the task, cannot be explaining the model.

* **Cascading parameter randomisation**: the model's parts from the output down (the order in which a forward pass
  first uses them, reversed: the top decoder layer first, ... the embeddings last), randomised one more at a time.
  Each randomised tensor is redrawn from a normal distribution with its trained mean and standard deviation (seeded).
* **Data randomisation**: a model of the same configuration and tokenizers trained by the app's own trainer on the
  corpus's training pairs with their targets shuffled among them (``shuffled_targets_model``).

The similarity of two maps of a pair is Spearman's ρ over every entry of its map (the source map, or the prefix map of
a measure without one; identical maps are 1, even constant ones), averaged over the pairs. A method fails when the
similarity after the whole cascade, or to the shuffled-target model, is above ``SANITY_THRESHOLD``.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from model.data.corpora import Pair, Splits, load_corpus
from model.grading.cases import GradedPair, GradingError
from model.grading.scoring import scorer_for
from model.grading.statistics import spearman
from model.network import Network
from model.nn.hooks import copy_without_thread_hooks
from model.nn.registry import build_network
from model.training.trainer import Progress, Trainer, TrainingControl, TrainingOptions

SANITY_THRESHOLD = 0.5  # a map at least this similar to the trained model's after randomisation fails


@dataclass
class Stage:
    """One part of the model randomised by the cascade: its name and its parameters."""

    name: str
    parameters: list[nn.Parameter]


def _label(path: list[str]) -> str:
    """A part's name from its module path: the library's wrapper ("model") left out, ``layers``/``_layers`` said as a
    layer ("encoder layer 3", "decoder block 2"), underscores as spaces."""
    words = [name for name in path if name not in ("model", "transformer")]
    return " ".join(words).replace("_layers", " layer").replace(" layers ", " layer ").replace("_", " ")


def _parts(module: nn.Module, path: list[str] | None = None) -> list[tuple[str, nn.Module]]:
    """The model's parts: its children, a list of layers as one part per layer ('decoder layer 3'); a child that holds
    a list of layers (a library model's stacks) is opened into its own parts."""
    parts = []
    for name, child in module.named_children():
        here = [*(path or []), name]
        if isinstance(child, nn.ModuleList):
            parts += [(_label([*here, str(index + 1)]), item) for index, item in enumerate(child)]
        elif any(isinstance(inner, nn.ModuleList) for inner in child.modules()):
            parts += _parts(child, here)
        elif any(True for _ in child.parameters()):
            parts.append((_label(here), child))
    return parts


def cascade_stages(model: Network, case: GradedPair) -> list[Stage]:
    """The model's parts from the output down: the order in which a forward pass of ``case`` first uses them, reversed
    (parts it never calls come first; the model's own parameters, a learned position table, join the last stage); see
    ``_stages`` for tied tensors and norms."""
    parts = _parts(model.module_tree())
    first_call: dict[int, int] = {}

    def recorder(index: int):
        def record(_module, _args) -> None:  # a pre-hook that returns nothing leaves the call as it is
            first_call.setdefault(index, len(first_call))

        return record

    hooks = [  # on every module of a part: a dictionary of embeddings is never called itself
        inner.register_forward_pre_hook(recorder(index)) for index, (_, module) in enumerate(parts) for inner in module.modules()
    ]
    try:
        scorer_for(model, case)  # its first pass: the case read as the card reads it
    finally:
        for hook in hooks:
            hook.remove()
    order = sorted(range(len(parts)), key=lambda index: -first_call.get(index, len(parts)))
    stages = _stages([(*parts[index], index in first_call) for index in order])
    own = [p for p in model.module_tree().parameters(recurse=False)]
    if stages:
        stages[-1].parameters += own
    return stages


def _stages(parts: list[tuple[str, nn.Module, bool]]) -> list[Stage]:
    """The cascade's stages from its parts in cascade order. A tensor is redrawn once, in the first stage that holds
    it: a tied one (a library model's shared embeddings and output layer) in the first part the pass calls with it,
    named with every part that shares it; a part the pass never calls keeps only tensors no called part holds. A part
    of norms alone (one-dimensional parameters) joins the stage after it; what is left joins the last."""
    holders: dict[int, list[str]] = {}
    for name, module, _ in parts:
        for parameter in module.parameters():
            holders.setdefault(id(parameter), []).append(name)
    called = {id(p) for _, module, was_called in parts if was_called for p in module.parameters()}
    stages: list[Stage] = []
    pending: list[nn.Parameter] = []
    seen: set[int] = set()
    for name, module, was_called in parts:
        new = [p for p in module.parameters() if id(p) not in seen and (was_called or id(p) not in called)]
        seen.update(id(p) for p in new)
        pending += new
        if any(p.dim() > 1 for p in pending):
            tied = sorted({other for p in new for other in holders[id(p)] if other != name})
            stages.append(Stage(name + (f" (tied: {', '.join(tied)})" if tied else ""), pending))
            pending = []
    if stages:
        stages[-1].parameters += pending
    return stages


def randomise(parameters: list[nn.Parameter], generator: torch.Generator) -> None:
    """Redraw each tensor from N(its mean, its standard deviation) in place (a tensor of one value is kept)."""
    with torch.no_grad():
        for parameter in parameters:
            if parameter.numel() < 2:
                continue
            mean, std = parameter.mean(), parameter.std()
            noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
            parameter.copy_((noise * std + mean).to(parameter.device))


def cascade(model: Network, stages: list[Stage], seed: int = 0):
    """Yield (stage name, a copy of ``model`` with that stage and every one before it randomised)."""
    generator = torch.Generator().manual_seed(seed)
    randomised = copy_without_thread_hooks(model).eval()
    lookup = dict(zip((id(p) for p in model.parameters()), randomised.parameters()))
    for stage in stages:
        randomise([lookup[id(p)] for p in stage.parameters], generator)
        yield stage.name, randomised


def map_similarity(trained: np.ndarray, randomised: np.ndarray) -> float:
    """Spearman's ρ of two maps of one pair over the entries both define (NaN when it is undefined)."""
    both = np.isfinite(trained) & np.isfinite(randomised)
    if not both.any() or not np.array_equal(np.isnan(trained), np.isnan(randomised)):
        return float("nan")
    return spearman(trained[both], randomised[both])


@dataclass
class SanityResult:
    """One method's similarities: after each cascade stage (the mean over pairs), to the shuffled-target model."""

    cascade: list[float] = field(default_factory=list)
    data: float | None = None
    failures: list[str] = field(default_factory=list)  # why a similarity could not be read
    threshold: float = SANITY_THRESHOLD

    @property
    def similarity(self) -> float:
        """The worst similarity: after the whole cascade, or to the shuffled-target model when it was read."""
        values = [value for value in (self.cascade[-1] if self.cascade else None, self.data) if value is not None]
        return max(values) if values else float("nan")

    @property
    def passed(self) -> bool:
        return not self.failures and bool(np.isfinite(self.similarity)) and self.similarity <= self.threshold


def shuffled_splits(corpus, seed: int = 0, limit: int | None = None) -> Splits:
    """The corpus's training pairs with their targets shuffled among them (no pair keeps its own, but by chance). A
    tagging corpus's tags (one per word) are shuffled over the whole corpus instead, each sentence keeping its count."""
    train = load_corpus(corpus).train[:limit]
    generator = random.Random(seed)
    if corpus.task == "tagging":
        tags = [tag for pair in train for tag in pair.target.split()]
        generator.shuffle(tags)
        counts = [len(pair.target.split()) for pair in train]
        targets = [" ".join(tags[start : start + count]) for start, count in zip(_starts(counts), counts)]
    else:
        targets = [pair.target for pair in train]
        generator.shuffle(targets)
    shuffled = [Pair(pair.source, target) for pair, target in zip(train, targets)]
    return Splits(shuffled, shuffled[:50], [])


def _starts(counts: list[int]) -> list[int]:
    """Where each of consecutive runs of ``counts`` items starts."""
    return [0, *itertools.accumulate(counts)][:-1]


def shuffled_targets_model(
    bundle, steps: int, seed: int = 0, check: Callable[[], None] | None = None, on_step: Callable[[int, int], None] | None = None
):
    """A bundle of ``bundle``'s configuration and tokenizers, trained from scratch for ``steps`` steps on its corpus's
    training pairs with shuffled targets, by the app's own trainer (on the CPU)."""
    if not bundle.family.capabilities.trainable:
        raise GradingError(
            "a model trained on shuffled targets is trained here with this model's configuration; a pretrained "
            "folder's is not trained here: leave the data randomisation out"
        )
    if bundle.corpus is None:
        raise GradingError("a model trained on shuffled targets needs the corpus this model was trained on")
    torch.manual_seed(seed)
    network = build_network(bundle.config)
    control, stopped = TrainingControl(), []

    def progress(report: Progress) -> None:
        if on_step is not None:
            on_step(report.step, steps)
        try:
            (check or (lambda: None))()
        except Exception as error:  # noqa: BLE001 - the caller's cancellation: stop training, raise it after
            stopped.append(error)
            control.cancel()

    options = TrainingOptions(epochs=1000, max_steps=steps, batch_size=64, seed=seed, valid_decode_limit=10, keep_best=False)
    splits = shuffled_splits(bundle.corpus, seed)
    Trainer(
        network, bundle.source_tokenizer, bundle.target_tokenizer, splits, options, torch.device("cpu"), progress, control=control
    ).run()
    if stopped:
        raise stopped[0]
    return dataclasses.replace(bundle, model=network.eval(), history={}, recording=None, path=None)
