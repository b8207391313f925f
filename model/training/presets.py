"""Training presets: what a run uses for every setting the user leaves alone, per corpus.

A built-in corpus has a fixed preset, chosen so that a run with no options finishes in minutes on two
CPU cores and learns the task (``train --corpus copy --out c.model`` reaches exact match 0.99 in its 2
minutes). A user's file gets a preset sized from what it holds: its pairs, sentence lengths and distinct
words decide the vocabulary, the model's width, the time budget and how often to validate; early stopping
and keeping the best validated weights then guard against over-training on a small corpus.

The command line and the Train tab both start from ``preset_for`` and then apply what the user changed,
so the two train the same model from the same defaults.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

from model.data.corpora import BUILTIN_CORPORA, DEFAULT_SIZES, Pair, Splits
from model.nn.registry import build_network, family_named
from model.runtime import set_cpu_threads

NO_EPOCH_LIMIT = 100_000  # epochs of a run that a time budget or a step count ends
COMMON_TRAINING = dict(epochs=NO_EPOCH_LIMIT, lr_decay="linear", label_smoothing=0.1, clip_norm=1.0)


@dataclass
class Preset:
    """Settings by group: ``model`` holds TransformerConfig fields (not the vocabulary sizes), ``tokenizer``
    TokenizerOptions fields, ``training`` TrainingOptions fields; ``corpus_size`` only for a built-in corpus."""

    name: str
    model: dict
    tokenizer: dict
    training: dict
    corpus_size: int | None = None
    why: str = ""  # one line for the Train tab and the command line
    sized_from: dict = field(default_factory=dict)  # the corpus figures a file's preset was sized from
    family: str = "transformer"  # the model family it trains (model/nn/registry.py); ``model`` holds its config's fields

    @property
    def minutes(self) -> float | None:
        return self.training.get("max_minutes")

    def describe(self) -> str:
        return f"{family_named(self.family).describe_options(self.model)}; {self.minutes:g} min budget"


_SYMBOLS_MODEL = dict(n_encoder_layers=2, n_decoder_layers=2, d_model=128, n_heads=8, d_ff=256, dropout=0.1)
_SYMBOLS_TRAINING = dict(COMMON_TRAINING, batch_size=64, warmup_steps=300, lr_factor=0.7, average_steps=200, valid_every=500)

BUILTIN_PRESETS = {
    "copy": Preset(
        "copy",
        _SYMBOLS_MODEL,
        dict(vocab_size=2000),
        dict(_SYMBOLS_TRAINING, max_minutes=2.0),
        DEFAULT_SIZES["copy"],
        "learns to copy in about 2 minutes",
    ),
    "reverse": Preset(
        "reverse",
        _SYMBOLS_MODEL,
        dict(vocab_size=2000),
        dict(_SYMBOLS_TRAINING, max_minutes=2.0),
        DEFAULT_SIZES["reverse"],
        "learns to reverse in about 2 minutes",
    ),
    "sort": Preset(
        "sort",
        _SYMBOLS_MODEL,
        dict(vocab_size=2000),
        dict(_SYMBOLS_TRAINING, max_minutes=3.0),
        DEFAULT_SIZES["sort"],
        "3 minutes: sorting is learnt more slowly than copying",
    ),
    "toy-fr": Preset(
        "toy-fr",
        dict(n_encoder_layers=3, n_decoder_layers=3, d_model=128, n_heads=4, d_ff=512, dropout=0.1),
        dict(vocab_size=2000),
        dict(
            COMMON_TRAINING, batch_size=64, warmup_steps=400, lr_factor=1.0, average_steps=400, valid_every=1000, max_minutes=10.0
        ),
        DEFAULT_SIZES["toy-fr"],
        "the shipped default model's recipe: 10 minutes",
    ),
}


# Seed 002's RNN with attention, and seed 004's encoder-only classifier: their families' default models.
RNN_MODEL = family_named("rnn").default_model
CLASSIFIER_MODEL = family_named("classifier").default_model
# Half the encoder-decoder's learning rate, and an average of the weights: at the full rate a tagger's validation
# accuracy swings between 0.97 and 0.995 and early stopping keeps a lucky step; so it climbs to 0.9998.
_CLASSIFIER_TRAINING = dict(
    COMMON_TRAINING, batch_size=64, warmup_steps=400, lr_factor=0.5, average_steps=200, valid_every=250, patience=8, max_minutes=3.0
)
for _name, _why in (
    ("toy-fr-tags", "a part-of-speech tagger in about 3 minutes"),
    ("toy-fr-negation", "a sentence classifier (negated or not) in about 3 minutes"),
    ("toy-fr-number", "a sentence classifier (singular or plural subject) in about 3 minutes"),
    ("toy-fr-relative", "a sentence classifier (a relative clause or not) in about 3 minutes"),
):
    BUILTIN_PRESETS[_name] = Preset(
        _name, CLASSIFIER_MODEL, dict(vocab_size=1000), dict(_CLASSIFIER_TRAINING), DEFAULT_SIZES[_name], _why, family="classifier"
    )


def family_preset(preset: Preset, family: str) -> Preset:
    """The corpus's preset for another family that learns the same task (an RNN on a Transformer's corpus): it keeps
    the corpus's tokenizer, data and time budget and takes that family's default model (its max_len too); a family
    with no default model keeps the preset's values of the fields its own options set, and its config's defaults for
    the rest. A family that cannot learn the corpus's task is refused later, by the pipeline."""
    if family == preset.family:
        return preset
    wanted, made_for = family_named(family), family_named(preset.family)
    if not set(wanted.tasks) & set(made_for.tasks):
        return replace(preset, family=family)  # refused by the pipeline's check_family_fits
    own = wanted.option_fields()  # a family without a default model keeps the preset's values of its own options
    model = dict(wanted.default_model or {name: value for name, value in preset.model.items() if name in own})
    if "max_len" in preset.model and "max_len" in own:
        model["max_len"] = preset.model["max_len"]
    why = f"{preset.why}; with the {wanted.title} in place of the {made_for.title}"
    return Preset(
        preset.name, model, dict(preset.tokenizer), dict(preset.training), preset.corpus_size, why, preset.sized_from, family
    )


def builtin_preset(name: str) -> Preset:
    if name not in BUILTIN_PRESETS:
        raise KeyError(f"no preset for {name!r}; built-in corpora: {', '.join(BUILTIN_CORPORA)}")
    return BUILTIN_PRESETS[name]


def corpus_figures(pairs: list[Pair]) -> dict:
    """What a file's preset is sized from (its training pairs): pairs, mean and longest words per side,
    distinct words."""
    source_lengths = [len(pair.source.split()) for pair in pairs]
    target_lengths = [len(pair.target.split()) for pair in pairs]
    words = {word for pair in pairs for word in pair.source.split()} | {word for pair in pairs for word in pair.target.split()}
    n = max(len(pairs), 1)
    return {
        "pairs": len(pairs),
        "mean_words": round((sum(source_lengths) + sum(target_lengths)) / (2 * n), 1),
        "longest_words": max(source_lengths + target_lengths, default=0),
        "distinct_words": len(words),
    }


def file_preset(splits: Splits, task: str = "translation") -> Preset:
    """A preset for a user's corpus, sized from its figures.

    - vocabulary: SentencePiece pieces grow with the distinct words (about a third of them, 500 to 4,000 for the
      width-128 model, to 8,000 for the width-256 one): enough that frequent words are one piece, few enough that
      every piece is seen often. On 27,000 real English-French pairs (benchmarks/real_corpus.py; 33,000 distinct
      words) and the 12-minute budget, 4,000 pieces against 8,000 took 28% more steps (the output layer is half of
      a width-128 model's work) and reached test BLEU 25.0 against 21.3 (three runs side by side on 2 busy cores);
      halving the batch instead gave 23.4;
    - model: 3+3 layers of width 128 below 50,000 pairs, 256 (8 heads, d_ff 1024) above;
    - time budget: 10 minutes, plus a minute per 10,000 pairs, at most 60; validation every ~5% of it,
      early stop after 5 validations without a better BLEU, the best validated weights kept;
    - max_len covers the longest sentence's pieces (about 1.5 pieces a word) up to 256.
    """
    figures = corpus_figures(splits.train)
    if task != "translation":
        return _labelled_file_preset(splits, figures)
    large = figures["pairs"] >= 50_000
    vocab = int(min(8000 if large else 4000, max(500, round(figures["distinct_words"] / 3, -2))))
    d_model = 256 if large else 128
    model = dict(
        n_encoder_layers=3,
        n_decoder_layers=3,
        d_model=d_model,
        n_heads=8 if large else 4,
        d_ff=4 * d_model,
        dropout=0.1,
        max_len=int(min(256, max(64, math.ceil(figures["longest_words"] * 1.5) + 2))),
    )
    minutes = float(min(60, 10 + figures["pairs"] // 10_000))
    training = dict(
        COMMON_TRAINING,
        batch_size=128,
        batch_tokens=3000,
        warmup_steps=800 if large else 400,
        lr_factor=1.0,
        average_steps=400,
        valid_every=500,
        patience=5,
        max_minutes=minutes,
    )
    why = (
        f"sized from the corpus: {figures['pairs']:,} pairs, {figures['mean_words']:g} words a sentence, "
        f"{figures['distinct_words']:,} distinct words"
    )
    return Preset("file", model, dict(vocab_size=vocab), training, None, why, figures)


def _labelled_file_preset(splits: Splits, figures: dict) -> Preset:
    """A classifier's preset for a user's tagging or labelled-sentence file: the built-in classifiers' model, a
    vocabulary from the distinct words, 3 minutes plus a minute per 10,000 sentences (at most 30)."""
    vocab = int(min(8000, max(300, round(len({w for p in splits.train for w in p.source.split()}) / 3, -2))))
    longest = max((len(p.source.split()) for p in splits.train), default=0)
    model = dict(CLASSIFIER_MODEL, max_len=int(min(256, max(64, math.ceil(longest * 1.5) + 2))))
    training = dict(_CLASSIFIER_TRAINING, max_minutes=float(min(30, 3 + figures["pairs"] // 10_000)))
    why = f"sized from the corpus: {figures['pairs']:,} labelled sentences"
    return Preset("file", model, dict(vocab_size=vocab), training, None, why, figures, "classifier")


def preset_for(corpus_name: str, splits: Splits | None = None, family: str | None = None, task: str = "translation") -> Preset:
    """The built-in corpus's preset, or one sized from ``splits`` (a user's file of this task, already read); for
    ``family`` when one is asked for (default: the corpus's own, the Transformer for translation)."""
    if corpus_name in BUILTIN_PRESETS:
        preset = builtin_preset(corpus_name)
    elif splits is None:
        raise ValueError("a file's preset is sized from the corpus: read it first")
    else:
        preset = file_preset(splits, task)
    return family_preset(preset, family) if family else preset


def planned_steps(training, train_pairs: int) -> int | None:
    """Steps an epoch- or step-limited run takes (None: only a time budget, or nothing, ends it)."""
    by_steps = training.max_steps or None
    by_epochs = None
    if training.epochs < NO_EPOCH_LIMIT:
        per_batch = training.batch_size if not training.batch_tokens else max(1, training.batch_tokens // 24)
        by_epochs = training.epochs * math.ceil(max(train_pairs, 1) / per_batch)
    known = [steps for steps in (by_steps, by_epochs) if steps]
    return min(known) if known else None


def expected_duration(training, train_pairs: int, seconds_per_step: float | None) -> str:
    """One line saying how long a run will take, before it starts."""
    # deferred: the Train form reads presets before PyTorch is imported (trainer.py imports it)
    from model.training.trainer import format_duration

    early = "; early stopping may end it sooner" if training.patience else ""
    steps = planned_steps(training, train_pairs)
    if training.max_minutes:
        seconds = training.max_minutes * 60
        if steps and seconds_per_step and steps * seconds_per_step < seconds:
            return (
                f"Expected duration: about {format_duration(steps * seconds_per_step)} ({steps:,} steps at "
                f"{1000 * seconds_per_step:.0f} ms a step on this machine){early}"
            )
        rate = (
            f"; about {seconds / seconds_per_step:,.0f} steps at {1000 * seconds_per_step:.0f} ms a step"
            if seconds_per_step
            else ""
        )
        return f"Expected duration: {format_duration(seconds)} (the time budget{rate}){early}"
    if steps is None:
        return "No time budget, epoch or step limit: training runs until you stop it"
    if not seconds_per_step:
        return f"Expected duration: {steps:,} steps (measuring this machine's speed…)"
    return (
        f"Expected duration: about {format_duration(steps * seconds_per_step)} ({steps:,} steps at "
        f"{1000 * seconds_per_step:.0f} ms a step on this machine){early}"
    )


def measure_step_seconds(
    model_options: dict, vocab_size: int, batch_pairs: int, pieces: int, steps: int = 3, family: str = "transformer"
) -> float:
    """Seconds one training step of this model takes here, now: a few steps on a made-up batch of
    ``batch_pairs`` pairs of ``pieces`` pieces each, on every core (a fraction of a second)."""
    # deferred: measuring a step needs PyTorch; reading presets must not (the Train form at start)
    import torch

    from model.training.step import make_optimizer, training_step  # deferred: torch, as above

    set_cpu_threads()
    options = {k: v for k, v in model_options.items() if k != "max_len"}
    spec = family_named(family)
    model = build_network(spec.build_config(options, vocab_size, vocab_size))
    optimizer = make_optimizer(model)
    generator = torch.Generator().manual_seed(0)
    source = torch.randint(4, vocab_size, (batch_pairs, pieces), generator=generator)  # [B, S]
    if spec.capabilities.labels:
        target = torch.randint(1, 3, (batch_pairs, pieces), generator=generator)  # [B, S] labels of two classes
    else:
        target = torch.randint(4, vocab_size, (batch_pairs, pieces + 1), generator=generator)  # [B, T + 1]
    times = []
    for _ in range(steps + 1):  # the first is a warm-up
        started = time.perf_counter()
        training_step(model, optimizer, source, target, 0.1, 1.0)
        times.append(time.perf_counter() - started)
    return min(times[1:])
