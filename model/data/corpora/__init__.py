"""Corpora: the built-in generated ones (toy-fr, copy, reverse, sort; toy-fr's labelled sentences for a
classifier: toy-fr-tags, toy-fr-negation, toy-fr-number, toy-fr-relative) and users' files, with splits.

A corpus teaches one ``task``: "translation" (source, target pairs), "tagging" (words, one tag each) or
"classification" (a text, its class). Built-in corpora know theirs; a file's is what the user says it holds.

``load_corpus(spec)`` turns a CorpusSpec (a built-in name or file paths) into pairs, and
``split_pairs`` divides them into train/validation/test deterministically: duplicates are
dropped and each distinct source goes to one split by a hash of its text, so no test sentence
appears in training.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from model.data.corpora import labelled, symbolic, toy_fr
from model.data.corpora.files import CorpusError, read_moses, read_tagged, read_tsv
from model.data.corpora.pairs import Pair

BUILTIN_CORPORA = ("toy-fr", "copy", "reverse", "sort", *labelled.LABELLED_CORPORA)
DEFAULT_SIZES = {"toy-fr": 60000, "copy": 20000, "reverse": 20000, "sort": 20000} | dict.fromkeys(labelled.LABELLED_CORPORA, 20000)
TASKS = ("translation", "tagging", "classification")
MAX_CLASSES = 1000  # more distinct labels than this is a translation file read as labelled sentences

__all__ = [
    "BUILTIN_CORPORA",
    "TASKS",
    "CorpusError",
    "CorpusSpec",
    "Pair",
    "Splits",
    "generate_builtin",
    "label_names",
    "load_corpus",
    "split_pairs",
]


@dataclass
class CorpusSpec:
    """Where pairs come from; saved in checkpoints so a model knows what it was trained on."""

    name: str  # a built-in name, or a path (a TSV file, or the source side of a Moses pair)
    target_path: str | None = None  # the target side of a Moses pair
    size: int | None = None  # pairs to generate for a built-in corpus
    seed: int = 0  # generation seed of a built-in corpus
    skip_malformed: bool = False
    valid_fraction: float = 0.05
    test_fraction: float = 0.05
    extra: dict = field(default_factory=dict)
    task: str = "translation"  # what it teaches (TASKS); a built-in corpus's own, a file's as the user says

    def __post_init__(self) -> None:
        if self.is_builtin:
            self.task = labelled.task_of(self.name)
        elif self.task not in TASKS:
            raise CorpusError(f"unknown corpus task {self.task!r}; choose one of {', '.join(TASKS)}")
        elif self.task != "translation" and self.target_path is not None:
            raise CorpusError("a Moses pair of files holds translations; a tagging or labelled corpus is one file")

    @property
    def is_builtin(self) -> bool:
        return self.name in BUILTIN_CORPORA and self.target_path is None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CorpusSpec:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def describe(self) -> str:
        if self.is_builtin:
            return self.name
        return f"{self.name} + {self.target_path}" if self.target_path else self.name


@dataclass
class Splits:
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    skipped_lines: int = 0


def generate_builtin(name: str, n: int, seed: int) -> list[Pair]:
    if name == "toy-fr":
        return toy_fr.generate(n, seed)
    if name in symbolic.TASKS:
        return symbolic.generate(name, n, seed)
    if name in labelled.LABELLED_CORPORA:
        return labelled.generate(name, n, seed)
    raise CorpusError(f"unknown built-in corpus {name!r}; choose one of {', '.join(BUILTIN_CORPORA)}")


def _bucket(text: str) -> float:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def split_pairs(pairs: list[Pair], valid_fraction: float = 0.05, test_fraction: float = 0.05) -> Splits:
    """Deterministic split by hashed source text; the first occurrence of each source is kept."""
    seen: set[str] = set()
    splits = Splits([], [], [])
    for pair in pairs:
        if pair.source in seen:
            continue
        seen.add(pair.source)
        position = _bucket(pair.source)
        if position < test_fraction:
            splits.test.append(pair)
        elif position < test_fraction + valid_fraction:
            splits.valid.append(pair)
        else:
            splits.train.append(pair)
    return splits


def _read_pairs(spec: CorpusSpec) -> tuple[list[Pair], int]:
    """Every pair of the corpus (generated, or read from its file or files) and the malformed lines skipped."""
    if spec.is_builtin:
        return generate_builtin(spec.name, spec.size or DEFAULT_SIZES[spec.name], spec.seed), 0
    if spec.target_path:
        corpus = read_moses(spec.name, spec.target_path, spec.skip_malformed)
    else:
        corpus = (read_tagged if spec.task == "tagging" else read_tsv)(spec.name, spec.skip_malformed)
    return corpus.pairs, corpus.skipped_lines


def _same_files(spec: CorpusSpec, other: CorpusSpec) -> bool:
    """Whether two file corpora name the same file (or pair of files)."""

    def resolved(path: str | None) -> str | None:
        return None if path is None else str(Path(path).resolve())

    return (resolved(spec.name), resolved(spec.target_path)) == (resolved(other.name), resolved(other.target_path))


def evaluation_pairs(spec: CorpusSpec, trained_on: CorpusSpec | None) -> tuple[list[Pair], str]:
    """The pairs to score a model on, and which they are: the held-out test split of a built-in corpus or of the file
    the model was trained on (generated or split as in training, so no training pair is scored); every pair of a file
    it was not trained on."""
    same_builtin = trained_on is not None and spec.is_builtin and trained_on.is_builtin and trained_on.name == spec.name
    same_file = trained_on is not None and not spec.is_builtin and not trained_on.is_builtin and _same_files(spec, trained_on)
    if same_builtin or same_file:
        assert trained_on is not None
        spec = trained_on  # the same generation settings or split, so the test split is the held-out one
    if spec.is_builtin or same_file:
        pairs = load_corpus(spec).test
        trained = "" if spec.is_builtin else ", the file the model was trained on"
        return pairs, f"the held-out test split of {spec.describe()}{trained} ({len(pairs)} pairs)"
    pairs, _ = _read_pairs(spec)
    if not pairs:
        raise CorpusError(f"{spec.describe()}: no pairs to score")
    return pairs, f"all {len(pairs)} pairs of {spec.describe()} (a file the model was not trained on)"


def load_corpus(spec: CorpusSpec) -> Splits:
    pairs, skipped = _read_pairs(spec)
    splits = split_pairs(pairs, spec.valid_fraction, spec.test_fraction)
    splits.skipped_lines = skipped
    if not splits.train:
        raise CorpusError(f"{spec.describe()}: too few distinct pairs to train on ({len(pairs)} read)")
    return splits


def label_names(pairs: list[Pair], task: str) -> list[str]:
    """The classes a labelled corpus uses, sorted: every tag of a tagging corpus, every class of a labelled one."""
    if task == "tagging":
        names = sorted({tag for pair in pairs for tag in pair.target.split()})
    else:
        names = sorted({pair.target.strip() for pair in pairs})
    if len(names) < 2:
        raise CorpusError(f"a classifier needs at least two classes, and the corpus has {len(names)} ({', '.join(names)})")
    if len(names) > MAX_CLASSES:
        raise CorpusError(
            f"{len(names):,} distinct labels in {len(pairs):,} sentences: is this a translation file? "
            f"A labelled corpus has at most {MAX_CLASSES:,} classes"
        )
    return names
