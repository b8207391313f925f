"""The sentences a corpus index is built from: a built-in corpus (generated as model/data/corpora generates it), a
TSV file (source TAB reference, as the Tatoeba/Anki files), a Moses pair of line-aligned files, or a plain text file
of one sentence a line. Files are read by the project's readers (model/data/corpora/files.py, model/data/lines.py):
only a regular UTF-8 text file is read, anything else is one message naming the file.

Duplicate sources are dropped (the first kept), so a search does not answer a token with its copies; a built-in
corpus is generated long enough to give ``limit`` distinct sentences where it can.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from model.corpus.schema import MAX_COUNT
from model.data.corpora import BUILTIN_CORPORA, CorpusError, Pair, generate_builtin
from model.data.corpora.files import read_lines, read_moses

DEFAULT_BUILTIN_LIMIT = 20_000  # sentences of a built-in corpus indexed unless a limit is given
MAX_BUILTIN_LIMIT = 1_000_000  # a built-in corpus is generated in memory: more sentences are refused, not tried
GROWTH_ROUNDS = 4  # a built-in corpus is generated at most 2**4 times the limit to find enough distinct sentences


@dataclass(frozen=True)
class IndexCorpus:
    """Where the sentences come from: a built-in name, or a file (and a Moses pair's target file)."""

    name: str
    target_path: str | None = None
    limit: int | None = None  # the first sentences kept (None: a built-in corpus's DEFAULT_BUILTIN_LIMIT, a file's all)
    seed: int = 0  # a built-in corpus's generation seed

    @property
    def is_builtin(self) -> bool:
        return self.name in BUILTIN_CORPORA and self.target_path is None

    def describe(self) -> str:
        what = self.name if self.is_builtin else Path(self.name).name
        if self.target_path:
            what += f" + {Path(self.target_path).name}"
        return what

    def to_dict(self) -> dict:
        values = asdict(self)
        if not self.is_builtin:  # a file is known by its full path, so that a resumed run reads the same one
            values["name"] = str(Path(self.name).resolve())
            values["target_path"] = str(Path(self.target_path).resolve()) if self.target_path else None
        return values

    @classmethod
    def from_dict(cls, values: dict) -> IndexCorpus:
        return cls(**{key: value for key, value in values.items() if key in cls.__dataclass_fields__})


def _distinct(pairs: list[Pair], limit: int | None) -> list[Pair]:
    seen: set[str] = set()
    kept = []
    for pair in pairs:
        if pair.source in seen:
            continue
        seen.add(pair.source)
        kept.append(pair)
        if limit is not None and len(kept) >= limit:
            break
    return kept


def _builtin(corpus: IndexCorpus) -> list[Pair]:
    limit = corpus.limit or DEFAULT_BUILTIN_LIMIT
    size = limit
    pairs = _distinct(generate_builtin(corpus.name, size, corpus.seed), limit)
    for _ in range(GROWTH_ROUNDS):  # the generators are prefix-stable: a longer run starts with the same sentences
        if len(pairs) >= limit:
            break
        size *= 2
        pairs = _distinct(generate_builtin(corpus.name, size, corpus.seed), limit)
    return pairs


def _text_file(path: str) -> list[Pair]:
    """Each non-empty line a sentence; a line with a tab is source TAB reference (further columns ignored)."""
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        if "\x00" in line:
            raise CorpusError(f"{path}:{number}: not a text file (it holds NUL bytes); give a UTF-8 text or TSV file")
        source, _, rest = line.partition("\t")
        if source.strip():
            pairs.append(Pair(source.strip(), rest.split("\t")[0].strip()))
    if not pairs:
        raise CorpusError(f"{path}: no sentences found (one sentence a line, or source TAB reference)")
    return pairs


def read_sentences(corpus: IndexCorpus) -> list[Pair]:
    """The distinct sentences to index, in corpus order, with their references ("" where the corpus has none)."""
    if corpus.limit is not None and not 1 <= corpus.limit <= MAX_COUNT:
        raise CorpusError(f"the limit must be from 1 to {MAX_COUNT:,} sentences, not {corpus.limit:,}")
    if corpus.is_builtin:
        if corpus.limit is not None and corpus.limit > MAX_BUILTIN_LIMIT:
            raise CorpusError(
                f"the limit {corpus.limit:,} is more than a built-in corpus gives (at most {MAX_BUILTIN_LIMIT:,} "
                "sentences); give a smaller limit, or index a file of your sentences"
            )
        return _builtin(corpus)
    if not Path(corpus.name).exists():
        raise CorpusError(f"{corpus.name}: no such file, and not a built-in corpus ({', '.join(BUILTIN_CORPORA)})")
    pairs = read_moses(corpus.name, corpus.target_path).pairs if corpus.target_path else _text_file(corpus.name)
    return _distinct(pairs, corpus.limit)
