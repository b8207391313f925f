"""The length experiment: train one model per positional scheme on sentences of at most ``train_max`` pieces (words
for toy-fr), then decode held-out sentences of every length up to ``test_max`` greedily and score them.

Every scheme's model has the same shape, seed, training pairs, steps and batches (model/nn/positions.py is all that
differs), and room for the longest test sentence (``max_len``): a learned table's rows past the training lengths stay
as they were initialised, which is the experiment. Scores per length: the exact match of the whole output and the
token accuracy (the share of the reference's tokens decoded at their own position). Each scheme's model is saved (its
file beside the table), and each length keeps its first sentence decoded wrongly, so that the window can open the
model and the sentence where the scheme fails (the first read when it got them all right).
"""

from __future__ import annotations

import csv
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import torch

from model.data.corpora import CorpusSpec, Pair, Splits, load_corpus
from model.data.corpora.symbolic import TASKS, generate
from model.decoding.greedy import greedy_decode
from model.errors import UserError
from model.files import atomic_output
from model.io import checkpoint
from model.io.bundle import ModelBundle
from model.network import DecodingNetwork
from model.nn.config import POSITIONAL_ENCODINGS, TRANSFORMER_POSITIONS
from model.training.pipeline import TokenizerOptions, prepare
from model.training.trainer import Trainer, TrainingControl, TrainingOptions

CORPORA = (*TASKS, "toy-fr")  # the symbol tasks (copy, reverse, sort) and the built-in translation corpus
MODEL = dict(n_encoder_layers=2, n_decoder_layers=2, d_model=64, n_heads=4, d_ff=256, dropout=0.1)  # tiny, every scheme
TOY_FR_PAIRS = 60_000  # the toy-fr pairs lengths are drawn from (its sentences are 2 to about 25 words)
Progress = Callable[[str, int, int], None]  # (stage: "<scheme>: training" or "<scheme>: reading", done, total)


class LengthError(UserError):
    """Settings the length experiment cannot run with; the message says why, in one line."""


@dataclass(frozen=True)
class LengthSettings:
    corpus: str = "copy"
    train_max: int = 20  # the longest training sentence (pieces; words for toy-fr)
    test_max: int = 60  # the longest sentence read
    schemes: tuple[str, ...] = TRANSFORMER_POSITIONS
    steps: int = 1500  # optimizer steps per scheme
    train_pairs: int = 20_000
    per_length: int = 20  # test sentences per length
    seed: int = 0
    train_min: int = 1  # the shortest training sentence
    max_len: int | None = None  # the models' positions (default: room for the longest test sentence)
    randomised: bool = False  # the table schemes trained with randomised positions (Ruoss et al. 2023)

    @property
    def positions(self) -> int:
        """The models' ``max_len``: a test sentence, its </s> and a margin (the decoder may run past the reference)."""
        return self.max_len if self.max_len is not None else self.test_max + 12


@dataclass
class LengthRow:
    scheme: str
    length: int
    trained: bool  # within the training lengths
    n: int  # sentences read
    exact_match: float
    token_accuracy: float
    example: str = ""  # the first sentence decoded wrongly, else the first read (``wrong`` says which)
    output: str = ""  # what the model decoded for it
    wrong: bool = False  # the example was decoded wrongly


@dataclass
class LengthResult:
    settings: LengthSettings
    rows: list[LengthRow] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)  # scheme -> its model file
    seconds: dict[str, float] = field(default_factory=dict)  # scheme -> training and reading

    def of(self, scheme: str) -> list[LengthRow]:
        return [row for row in self.rows if row.scheme == scheme]


def check_settings(settings: LengthSettings) -> None:
    """A LengthError (one line) for settings that contradict each other or that a scheme cannot hold."""
    if settings.corpus not in CORPORA:
        raise LengthError(f"--corpus must be one of {', '.join(CORPORA)}, not {settings.corpus!r}")
    unknown = [scheme for scheme in settings.schemes if scheme not in TRANSFORMER_POSITIONS]
    if unknown or not settings.schemes:
        raise LengthError(
            f"--positions takes all or some of {', '.join(TRANSFORMER_POSITIONS)}, not {', '.join(unknown) or 'none'}"
        )
    for name in ("train_max", "test_max", "steps", "train_pairs", "per_length", "train_min"):
        if getattr(settings, name) < 1:
            raise LengthError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(settings, name)}")
    if settings.train_min > settings.train_max:
        raise LengthError(f"--train-min {settings.train_min} is above --train-max {settings.train_max}")
    if settings.test_max < settings.train_max:
        raise LengthError(
            f"--test-max {settings.test_max} is below --train-max {settings.train_max}: the experiment reads longer sentences "
            "than it trains on"
        )
    if settings.positions < settings.test_max + 2:
        raise LengthError(
            f"--max-len {settings.positions} cannot hold a test sentence of {settings.test_max} pieces and its </s> and <s>: "
            f"a learned table has no row past {settings.positions} (give at least {settings.test_max + 2})"
        )


def length_of(pair: Pair) -> int:
    """A pair's length: its source's words (one piece each in the symbol tasks)."""
    return len(pair.source.split())


def experiment_pairs(settings: LengthSettings) -> tuple[Splits, dict[int, list[Pair]]]:
    """(training splits of sentences up to train_max, test sentences by length 1..test_max; a toy-fr length with no
    sentence is left out)."""
    if settings.corpus in TASKS:
        train = generate(settings.corpus, settings.train_pairs, settings.seed, settings.train_min, settings.train_max)
        valid = generate(settings.corpus, 50, settings.seed + 1, settings.train_min, settings.train_max)
        tests = {n: generate(settings.corpus, settings.per_length, 1000 + n, n, n) for n in range(1, settings.test_max + 1)}
        return Splits(train, valid, []), tests
    splits = load_corpus(CorpusSpec("toy-fr", size=TOY_FR_PAIRS, seed=settings.seed))
    train = [pair for pair in splits.train if settings.train_min <= length_of(pair) <= settings.train_max]
    if not train:
        raise LengthError(f"toy-fr has no training sentence of {settings.train_min} to {settings.train_max} words")
    pool: dict[int, list[Pair]] = {}
    for pair in splits.test + splits.valid:
        pool.setdefault(length_of(pair), []).append(pair)
    tests = {n: pool[n][: settings.per_length] for n in sorted(pool) if n <= settings.test_max}
    valid = [pair for pair in splits.valid if length_of(pair) <= settings.train_max][:50]
    return Splits(train[: settings.train_pairs], valid, []), tests


def train_scheme(
    settings: LengthSettings,
    scheme: str,
    splits: Splits,
    check: Callable[[], None],
    on_step: Callable[[int, int], None],
    device: torch.device,
) -> ModelBundle:
    """The model of ``scheme`` trained on ``splits`` (the same seed, shape and steps for every scheme)."""
    corpus = CorpusSpec(settings.corpus if settings.corpus != "toy-fr" else "toy-fr", size=settings.train_pairs, seed=settings.seed)
    options = MODEL | {"positional_encoding": scheme, "max_len": settings.positions}
    if settings.randomised and scheme in POSITIONAL_ENCODINGS:  # a table's rows drawn at random in training
        options["randomised_positions"] = True
    bundle, _ = prepare(
        corpus, TokenizerOptions(vocab_size=200 if settings.corpus in TASKS else 2000), options, settings.seed, splits
    )
    control, stopped = TrainingControl(), []

    def progress(report) -> None:
        on_step(report.step, settings.steps)
        try:
            check()
        except Exception as error:  # noqa: BLE001 - the caller's cancellation: training stops, then it is raised
            stopped.append(error)
            control.cancel()

    training = TrainingOptions(epochs=10_000, max_steps=settings.steps, batch_size=64, seed=settings.seed, warmup_steps=200)
    training = replace(training, valid_decode_limit=20, keep_best=False, lr_factor=2.0)
    Trainer(bundle.model, bundle.source_tokenizer, bundle.target_tokenizer, splits, training, device, progress,
            control=control, history=bundle.history).run()  # fmt: skip
    if stopped:
        raise stopped[0]
    bundle.model.eval()
    return bundle


def read_lengths(
    bundle: ModelBundle, scheme: str, tests: dict[int, list[Pair]], train_max: int, check: Callable[[], None]
) -> list[LengthRow]:
    """Every length's sentences decoded greedily (each length one batch) and scored."""
    rows = []
    device = next(bundle.model.parameters()).device
    for length, pairs in tests.items():
        check()
        sources = [bundle.source_ids(pair.source)[0] for pair in pairs]
        width = max(len(ids) for ids in sources)
        batch = torch.full((len(sources), width), bundle.config.pad_id, dtype=torch.long)
        for index, ids in enumerate(sources):
            batch[index, : len(ids)] = torch.tensor(ids)
        limit = min(bundle.config.max_len, max(len(pair.target.split()) for pair in pairs) + 10)
        network = cast(DecodingNetwork, bundle.model)
        outputs = [bundle.target_tokenizer.decode(ids) for ids in greedy_decode(network, batch.to(device), limit)]
        rows.append(_scored(scheme, length, length <= train_max, pairs, outputs))
    return rows


def _scored(scheme: str, length: int, trained: bool, pairs: list[Pair], outputs: list[str]) -> LengthRow:
    exact, right, total = 0, 0, 0
    wrong = [(pair.source, decoded) for pair, decoded in zip(pairs, outputs) if decoded.split() != pair.target.split()]
    for pair, decoded in zip(pairs, outputs):
        reference, tokens = pair.target.split(), decoded.split()
        exact += tokens == reference
        right += sum(a == b for a, b in zip(tokens, reference))
        total += len(reference)
    example, output = wrong[0] if wrong else (pairs[0].source, outputs[0])
    accuracy = right / max(total, 1)
    return LengthRow(scheme, length, trained, len(pairs), exact / len(pairs), accuracy, example, output, bool(wrong))


def run_lengths(
    settings: LengthSettings,
    folder: str | Path,
    progress: Progress | None = None,
    check: Callable[[], None] | None = None,
    device: torch.device | None = None,
) -> LengthResult:
    """Train and read every scheme (see the module's docstring); each model is saved in ``folder`` as <scheme>.safetensors."""
    check_settings(settings)
    report = progress or (lambda stage, done, total: None)
    check = check or (lambda: None)
    device = device or torch.device("cpu")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    splits, tests = experiment_pairs(settings)
    result = LengthResult(settings)
    for scheme in settings.schemes:
        started = time.perf_counter()
        bundle = train_scheme(settings, scheme, splits, check, functools.partial(report, f"{scheme}: training"), device)
        report(f"{scheme}: reading", 0, len(tests))
        result.rows += read_lengths(bundle, scheme, tests, settings.train_max, check)
        result.models[scheme] = str(checkpoint.save(bundle, folder / f"{scheme}.safetensors"))
        result.seconds[scheme] = time.perf_counter() - started
    return result


COLUMNS = ("scheme", "length", "trained", "n", "exact_match", "token_accuracy", "example", "output", "example_wrong", "model")


def save_lengths_csv(result: LengthResult, path: str | Path) -> Path:
    """One row per scheme and length (atomically written), with the model file and the first sentence it got wrong."""
    with atomic_output(path) as written, open(written, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for row in result.rows:
            values = (row.scheme, row.length, int(row.trained), row.n, f"{row.exact_match:.4f}", f"{row.token_accuracy:.4f}")
            writer.writerow([*values, row.example, row.output, int(row.wrong), result.models.get(row.scheme, "")])
    return Path(path)
