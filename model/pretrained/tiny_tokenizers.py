"""The tokenizers of the tiny pretrained-layout models (model/pretrained/tiny.py), trained here on a few hundred
sentences: SentencePiece's unigram (T5, Marian), byte-level BPE (GPT-2, BART and its kin, NLLB, the Llama family) and
WordPiece (BERT and its kin); a published model's vocabulary size is reached with filler pieces no text is split into."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from model.pretrained.hub import require_transformers

VOCAB = 400  # pieces: enough for the toy-fr corpus's words in both languages
BART_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # BART's byte-level specials, ids 0-4


def fillers(have: int, padded_to: int | None) -> list[str]:
    """Pieces that pad a vocabulary of ``have`` pieces to ``padded_to`` pieces (none when None): strings no
    text is split into, so tokenizing is unchanged and the embeddings are the published size."""
    return [f"<filler{index}>" for index in range(max(0, (padded_to or 0) - have))]


def sentencepiece(texts: list[str], folder: Path, vocab: int, specials: dict[str, Any]) -> Path:
    """Train a unigram SentencePiece model; returns the .model file."""
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    import sentencepiece as spm

    prefix = folder / "spm"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(prefix),
        vocab_size=vocab,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
        **specials,
    )
    return prefix.with_suffix(".model")


def unigram_fast(model_file: Path, unk_id: int, padded_to: int | None) -> Any:
    """A `tokenizers` Unigram tokenizer with the SentencePiece model's pieces and scores (as T5's fast one), padded to
    ``padded_to`` pieces with fillers no text is split into (their score the lowest)."""
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    import sentencepiece as spm

    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    vocab = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size())]
    vocab += [(piece, -1e9) for piece in fillers(len(vocab), padded_to)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Replace(" {2,}", " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    return tokenizer


def byte_level(texts: list[str], specials: list[str]) -> Any:
    """A byte-level BPE trained on ``texts`` (GPT-2's and BART's), ``specials`` first."""
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(texts, vocab_size=VOCAB, min_frequency=1, special_tokens=specials, show_progress=False)
    return tokenizer


def padded_byte_level(
    texts: list[str], work: Path, padded_to: int | None, specials: tuple[str, ...] = BART_SPECIALS
) -> dict[str, int]:
    """A byte-level BPE trained on ``texts`` into ``work`` (vocab.json, merges.txt), its vocabulary padded with fillers
    to ``padded_to`` pieces; returns the vocabulary (written back)."""
    byte_level(texts, list(specials)).save_model(str(work))
    vocab = json.loads((work / "vocab.json").read_text(encoding="utf-8"))
    vocab |= {piece: len(vocab) + index for index, piece in enumerate(fillers(len(vocab), padded_to))}
    (work / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    return vocab


def wordpiece(texts: list[str], work: Path) -> Any:
    """A WordPiece tokenizer trained on ``texts`` (BERT's), as the library's fast tokenizer."""
    transformers = require_transformers()
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(texts, vocab_size=VOCAB, min_frequency=1, show_progress=False)
    wordpiece.save_model(str(work))
    return transformers.BertTokenizerFast(vocab_file=str(work / "vocab.txt"), do_lower_case=True)
