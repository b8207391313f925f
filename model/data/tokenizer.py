"""SentencePiece tokenizers trained in memory on a corpus's training split, stored as bytes.

Piece ids 0-3 are fixed across every tokenizer of the project: pad, unk, bos (<s>), eos (</s>).
Any string encodes without error: characters never seen in training become the unk piece.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import sentencepiece as spm

from model.errors import UserError

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
MODEL_TYPES = ("unigram", "bpe", "word", "char")


class TokenizerError(UserError):
    """A tokenizer that cannot be trained or loaded."""


def check_text(text: str) -> str:
    """The text itself, or a TokenizerError if it holds bytes that are not UTF-8: Python hands such bytes
    of a command-line argument over as lone surrogates (U+DC80-U+DCFF), which SentencePiece cannot read."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        character = text[error.start]
        what = f"byte 0x{ord(character) - 0xDC00:02x}" if 0xDC80 <= ord(character) <= 0xDCFF else f"U+{ord(character):04X}"
        raise TokenizerError(f"the text is not valid UTF-8 ({what} at character {error.start + 1}); give it in UTF-8") from None
    return text


class Tokenizer:
    def __init__(self, model_proto: bytes):
        self._processor = spm.SentencePieceProcessor()
        try:
            self._processor.LoadFromSerializedProto(model_proto)
        except Exception as error:  # sentencepiece raises RuntimeError/OSError variants
            raise TokenizerError(f"not a SentencePiece model ({error})") from None
        self.model_proto = bytes(model_proto)
        if self._processor.pad_id() != PAD_ID or self._processor.eos_id() != EOS_ID:
            raise TokenizerError("tokenizer must use pad=0, unk=1, bos=2, eos=3")

    @property
    def unk_id(self) -> int:
        """The id every piece outside the vocabulary becomes (<unk>)."""
        return UNK_ID

    @classmethod
    def train(cls, texts: list[str], vocab_size: int, model_type: str = "unigram") -> Tokenizer:
        if model_type not in MODEL_TYPES:
            raise TokenizerError(f"model_type must be one of {MODEL_TYPES}, got {model_type!r}")
        if vocab_size < 8:
            raise TokenizerError(f"vocabulary size {vocab_size} is too small (at least 8)")
        texts = [text for text in texts if text.strip()]
        if not texts:
            raise TokenizerError("no text to train a tokenizer on")
        buffer = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(texts),
                model_writer=buffer,
                vocab_size=vocab_size,
                model_type=model_type,
                pad_id=PAD_ID,
                unk_id=UNK_ID,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                character_coverage=1.0,
                hard_vocab_limit=False,
                minloglevel=2,
                num_threads=2,
                max_sentence_length=16384,
            )
        except RuntimeError as error:
            raise TokenizerError(f"SentencePiece could not train: {error}") from None
        return cls(buffer.getvalue())

    @property
    def vocab_size(self) -> int:
        return self._processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        """Piece ids of text, without BOS/EOS."""
        return list(self._processor.encode(check_text(text)))

    def decode(self, ids) -> str:
        """Text of piece ids; pad/bos/eos are dropped and decoding stops at the first EOS."""
        kept = []
        for piece_id in ids:
            piece_id = int(piece_id)
            if piece_id == EOS_ID:
                break
            if piece_id not in (PAD_ID, BOS_ID):
                kept.append(piece_id)
        return self._processor.decode(kept)

    def piece(self, piece_id: int) -> str:
        return self._processor.id_to_piece(int(piece_id))

    def pieces(self, ids) -> list[str]:
        return [self.piece(i) for i in ids]

    def piece_to_id(self, piece: str) -> int | None:
        """Id of an exact piece (or of a word typed by a user, tried with the word-start marker)."""
        check_text(piece)
        for candidate in (piece, "▁" + piece):
            piece_id = self._processor.piece_to_id(candidate)
            if piece_id != UNK_ID or candidate == "<unk>":
                return piece_id
        return None


def unknown_pieces(tokenizer: Any, ids: list[int]) -> np.ndarray:
    """[S] whether each id is the tokenizer's unknown piece (a word or mark it never saw, read as <unk>)."""
    return np.array([piece_id == tokenizer.unk_id for piece_id in ids], dtype=bool)


def unknown_note(tokenizer: Any, ids: list[int], n_pieces: int) -> str:
    """A line for the user when some of the ``n_pieces`` pieces read (``ids``: those, and any end token) are unknown
    to the tokenizer; empty when none are."""
    unknown = int(unknown_pieces(tokenizer, ids).sum())
    if not unknown:
        return ""
    share = unknown / max(n_pieces, 1)
    return (
        f"{unknown} of the sentence's {n_pieces} pieces ({share:.0%}) are unknown to this model (<unk>): it never saw "
        "them in training and reads each as the same unknown piece, so what they say is lost"
    )
