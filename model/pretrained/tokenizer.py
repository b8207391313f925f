"""A Hugging Face tokenizer behind the app's tokenizer interface (model/data/tokenizer.py): ``encode``,
``decode``, ``pieces``, ``piece_to_id``, ``vocab_size``.

Pieces keep each scheme's word marks, which model/data/token_labels.py reads: SentencePiece's "▁"
(T5, Marian), WordPiece's "##" (BERT) and byte-level BPE's "Ġ" (GPT-2, BART). Byte-level pieces are
stored as one printable character per byte ("Ã©" for "é"); they are shown decoded ("Ġcafé") when
their bytes are whole UTF-8 characters, so figures print the text people typed.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from model.data.tokenizer import check_text


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-character table, reversed: printable bytes stand for themselves, the others
    (space, control bytes, 0x7f-0xa0, 0xad) for characters from U+0100 on."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    characters = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, characters)}


def readable_byte_piece(piece: str) -> str:
    """A byte-level piece with its bytes decoded where they are whole, printable UTF-8 ("ĠcafÃ©" -> "Ġcafé");
    as it was otherwise (a piece that holds half a character)."""
    table = _byte_decoder()
    marked = piece.startswith("Ġ")
    body = piece[1:] if marked else piece
    if not body or any(c not in table for c in body):
        return piece
    try:
        text = bytes(table[c] for c in body).decode("utf-8")
    except UnicodeDecodeError:
        return piece
    if not text.isprintable() or " " in text:
        return piece
    return ("Ġ" if marked else "") + text


def detect_scheme(tokenizer: Any) -> str:
    """Which word marks the tokenizer's pieces carry."""
    vocab = tokenizer.get_vocab()
    sample = list(vocab)[:5000]
    if any(piece.startswith("##") for piece in sample):
        return "wordpiece"
    if sum(piece.startswith("Ġ") for piece in sample) > 3:
        return "byte-level"
    if sum(piece.startswith("▁") for piece in sample) > 3:
        return "sentencepiece"
    return "other"


class PretrainedTokenizer:
    """One Hugging Face tokenizer (source and target share it in every family here)."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.scheme = detect_scheme(tokenizer)
        self.special_ids = set(int(i) for i in tokenizer.all_special_ids)
        self._piece_ids: dict[str, int] | None = None

    @property
    def unk_id(self) -> int:
        """The unknown piece's id (-1 for a byte-level tokenizer, which has none: every byte is a piece)."""
        unk = self.tokenizer.unk_token_id
        return -1 if unk is None else int(unk)

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    @property
    def name(self) -> str:
        return type(self.tokenizer).__name__

    def describe(self) -> str:
        return f"{self.name} ({self.scheme}, {self.vocab_size:,} pieces)"

    def encode(self, text: str) -> list[int]:
        """Piece ids of text, without the special tokens the model adds (those come with ``model_input``)."""
        return list(self.tokenizer(check_text(text), add_special_tokens=False)["input_ids"])

    def model_input(self, text: str) -> list[int]:
        """Ids as the model expects them: the tokenizer's own special tokens added ([CLS] ... [SEP], ... </s>)."""
        return list(self.tokenizer(check_text(text), add_special_tokens=True)["input_ids"])

    def decode(self, ids) -> str:
        """Text of ids, special tokens dropped (decoding stops at the first end-of-sequence)."""
        kept: list[int] = []
        eos = self.tokenizer.eos_token_id
        for piece_id in ids:
            if eos is not None and int(piece_id) == eos and kept:
                break
            kept.append(int(piece_id))
        return self.tokenizer.decode(kept, skip_special_tokens=True, clean_up_tokenization_spaces=True).strip()

    def piece(self, piece_id: int) -> str:
        piece = self.tokenizer.convert_ids_to_tokens(int(piece_id))
        if piece is None:
            return "<unk>"
        return readable_byte_piece(piece) if self.scheme == "byte-level" else str(piece)

    def pieces(self, ids) -> list[str]:
        return [self.piece(i) for i in ids]

    def piece_to_id(self, piece: str) -> int | None:
        """Id of a piece as shown (or as stored), or of a word typed by a user (tried with each word mark)."""
        check_text(piece)
        if self._piece_ids is None:
            vocab = self.tokenizer.get_vocab()
            self._piece_ids = dict(vocab)
            if self.scheme == "byte-level":
                for raw, piece_id in vocab.items():
                    self._piece_ids.setdefault(readable_byte_piece(raw), piece_id)
        for candidate in (piece, "▁" + piece, "Ġ" + piece, "##" + piece):
            if candidate in self._piece_ids:
                return self._piece_ids[candidate]
        return None
