"""Users' own corpora: a tab-separated file or a Moses-style pair of line-aligned files of translations, a
tab-separated file of labelled sentences, or a tagging file.

The TSV layout is that of the Tatoeba/Anki ``eng-fra.txt`` files: source TAB target, further
columns (attribution) ignored; a sentence classifier's file is the same with the class as the target
(text TAB label). A tagging file has one sentence a line, each word with its tag: ``The/DET cat/NOUN``
(the tag follows the word's last slash, so a word may hold one: ``km/h/NOUN``). Lines may end in LF, CR LF
or a lone CR (old Mac files). Every problem is reported as a CorpusError naming the file and the line; with
``skip_malformed`` bad lines are counted and skipped instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from model.data.corpora.pairs import Pair
from model.data.lines import TextLines
from model.errors import UserError


class CorpusError(UserError):
    """A corpus that cannot be read; the message says which file and line, and why."""


@dataclass
class FileCorpus:
    pairs: list[Pair]
    skipped_lines: int


def read_lines(path: str | Path) -> list[str]:
    """Every line of a corpus file, decoded (model/data/lines.py: only a regular file is read, a FIFO or a device
    is refused); CorpusError when it cannot be read, is empty or a line is not UTF-8."""
    lines = TextLines(path, "corpus file", CorpusError)
    decoded = list(lines)
    if not lines.saw_text:
        raise CorpusError(f"{path}: the file is empty")
    return decoded


def read_tsv(path: str | Path, skip_malformed: bool = False) -> FileCorpus:
    path = Path(path)
    pairs, skipped = [], 0
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        columns = line.split("\t")
        problem = None
        if len(columns) < 2:
            problem = "expected source<TAB>target, found no tab"
        elif not columns[0].strip() or not columns[1].strip():
            problem = "the source or the target is empty"
        if problem:
            if skip_malformed:
                skipped += 1
                continue
            raise CorpusError(f"{path}:{number}: {problem}")
        pairs.append(Pair(columns[0].strip(), columns[1].strip()))
    if not pairs:
        raise CorpusError(f"{path}: no sentence pairs found" + (f" ({skipped} malformed lines skipped)" if skipped else ""))
    return FileCorpus(pairs, skipped)


def read_tagged(path: str | Path, skip_malformed: bool = False) -> FileCorpus:
    """A tagging file as pairs (the words, their tags), each space-separated."""
    path = Path(path)
    pairs, skipped = [], 0
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        words, tags, problem = [], [], None
        for item in line.split():
            word, slash, tag = item.rpartition("/")
            if not slash or not word or not tag:
                problem = f"{item!r} is not word/TAG"
                break
            words.append(word)
            tags.append(tag)
        if problem:
            if skip_malformed:
                skipped += 1
                continue
            raise CorpusError(f"{path}:{number}: {problem} (a tagging file has word/TAG items separated by spaces)")
        pairs.append(Pair(" ".join(words), " ".join(tags)))
    if not pairs:
        raise CorpusError(f"{path}: no tagged sentences found" + (f" ({skipped} malformed lines skipped)" if skipped else ""))
    return FileCorpus(pairs, skipped)


def read_moses(source_path: str | Path, target_path: str | Path, skip_malformed: bool = False) -> FileCorpus:
    source_path, target_path = Path(source_path), Path(target_path)
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        raise CorpusError(
            f"{source_path} has {len(sources)} lines but {target_path} has {len(targets)}; the two files must be line-aligned"
        )
    pairs, skipped = [], 0
    for number, (source, target) in enumerate(zip(sources, targets), start=1):
        if not source.strip() or not target.strip():
            if skip_malformed:
                skipped += 1
                continue
            empty = source_path if not source.strip() else target_path
            raise CorpusError(f"{empty}:{number}: empty line (its partner is not)")
        pairs.append(Pair(source.strip(), target.strip()))
    if not pairs:
        raise CorpusError(f"{source_path}: no sentence pairs found")
    return FileCorpus(pairs, skipped)
