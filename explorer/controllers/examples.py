"""Whether a model can read a sentence, and a short sentence it can: what the Explore controller decodes instead
of one mostly unknown to the model (a corpus of another language, or of symbols)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from model.data.corpora import CorpusError, generate_builtin
from model.data.corpora.files import read_moses, read_tsv
from model.family import Bundle

WORD_MARK = "▁"  # SentencePiece's word-start piece: a lone one says nothing about the words
UNREADABLE_SHARE = 0.5  # a sentence more than half of whose pieces are unknown cannot be read by the model
EXAMPLE_CANDIDATES = 20  # sentences tried from the history or the corpus
MAX_EXAMPLE_PIECES = 24  # an example stays short enough to read its attention
MAX_CORPUS_FILE_BYTES = 50 * 1024 * 1024  # a larger corpus file is not read just to find an example


def unknown_share(bundle: Bundle | None, text: str) -> float:
    """Share of the sentence's source pieces (lone word marks aside) that the model's source tokenizer does not
    know (<unk>); 0 without a model or text."""
    if bundle is None:
        return 0.0
    tokenizer = bundle.source_tokenizer
    ids = [i for i in tokenizer.encode(text) if tokenizer.piece(i) != WORD_MARK]
    return sum(i == tokenizer.unk_id for i in ids) / len(ids) if ids else 0.0


def can_read(bundle: Bundle | None, text: str) -> bool:
    return unknown_share(bundle, text) <= UNREADABLE_SHARE


def example_sentence(bundle: Bundle | None) -> tuple[str, str] | None:
    """A short source sentence the model can read, and where it comes from: an example for its kind, a sample
    translation of its training history, or a sentence of its corpus (a built-in one is generated again; a file
    is read if it is still there). None when nothing fits."""
    if bundle is None:
        return None
    for text, origin in _candidates(bundle):
        text = " ".join(str(text).split())
        if text and len(bundle.source_tokenizer.encode(text)) <= MAX_EXAMPLE_PIECES and unknown_share(bundle, text) == 0.0:
            return text, origin
    return None


def _candidates(bundle: Bundle) -> Iterator[tuple[str, str]]:
    for text in bundle.examples:  # a pretrained model's: its task prefix, a mask token
        yield text, "an example for this kind of model"
    for validation in reversed(bundle.history.get("validations") or []):
        for sample in (validation.get("samples") or [])[:EXAMPLE_CANDIDATES]:
            if sample:
                yield sample[0], "its training history's sample translations"
    corpus = bundle.corpus
    if corpus is None:
        return
    try:
        if corpus.is_builtin:
            pairs = generate_builtin(corpus.name, EXAMPLE_CANDIDATES, corpus.seed)
        elif Path(corpus.name).is_file() and Path(corpus.name).stat().st_size <= MAX_CORPUS_FILE_BYTES:
            pairs = (
                read_moses(corpus.name, corpus.target_path, skip_malformed=True)
                if corpus.target_path
                else read_tsv(corpus.name, skip_malformed=True)
            ).pairs[:EXAMPLE_CANDIDATES]
        else:
            return  # the corpus file has moved, or is too large to read for one example
    except (CorpusError, OSError):  # the file moved or became unreadable: no example from it
        return
    for pair in pairs:
        yield pair.source, f"its corpus ({corpus.describe()})"
