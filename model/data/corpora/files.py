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
from model.errors import UserError


class CorpusError(UserError):
    """A corpus that cannot be read; the message says which file and line, and why."""


@dataclass
class FileCorpus:
    pairs: list[Pair]
    skipped_lines: int


def _read_lines(path: Path) -> list[str]:
    if not path.exists():
        raise CorpusError(f"{path}: no such file")
    if path.is_dir():
        raise CorpusError(f"{path}: is a folder, not a corpus file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CorpusError(f"{path}: cannot be read ({error.strerror or error})") from None
    if not data.strip():
        raise CorpusError(f"{path}: the file is empty")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte-order mark, as some editors write
    lines = data.splitlines()  # \n, \r\n and \r (old Mac files) all end a line; a last line end adds none
    decoded = []
    for number, raw in enumerate(lines, start=1):
        try:
            decoded.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise CorpusError(
                f"{path}:{number}: not UTF-8 text (byte 0x{raw[error.start]:02x} at column "
                f"{error.start + 1}); save the file as UTF-8"
            ) from None
    return decoded


def read_tsv(path: str | Path, skip_malformed: bool = False) -> FileCorpus:
    path = Path(path)
    pairs, skipped = [], 0
    for number, line in enumerate(_read_lines(path), start=1):
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
    for number, line in enumerate(_read_lines(path), start=1):
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
    sources, targets = _read_lines(source_path), _read_lines(target_path)
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
