"""Token labels as people read them, for chips, axes and figures.

Tokenizers mark where words start in their own ways: SentencePiece puts "▁" before a word's first
piece ("▁La" is "La" at the start of a word), WordPiece puts "##" before a continuation piece
("##ing"), byte-level BPE puts "Ġ" before a word's first piece. Printed raw, readers take these
markers for literal characters ("_L a" for "La"). Displayed here:

- a piece that starts a word prints as the word's text ("▁La" → "La");
- a piece that continues a word gets a leading "·" ("a" after "▁L" → "·a"), so "L ·a" reads as one
  word cut in two;
- a piece that is only the word marker (SentencePiece's lone "▁") prints as "␣" (a space);
- special pieces (<s>, </s>, <pad>, <unk>) print as they are.

Word-level labels (already whole words) print unchanged. The data files (CSV, NPZ) keep the raw
pieces, so programs can map them back to the vocabulary.
"""

from __future__ import annotations

import re

SPECIAL_PIECES = ("<s>", "</s>", "<pad>", "<unk>", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")
# Other tokenizers' special pieces: <mask>, <|endoftext|>, <extra_id_0>, Marian's language tokens >>fr<<.
SPECIAL_PATTERN = re.compile(r"</?\|?[A-Za-z][\w.-]*\|?>|\[[A-Z_]+\]|>>[\w-]+<<")
WORD_START = "▁"  # SentencePiece
CONTINUATION_MARK = "·"
SPACE_MARK = "␣"
HIGHLIGHT = "#ff2d55"  # the current step: its token, row and outline, in the window and in figures


def is_special(piece: str) -> bool:
    """A tokenizer's special piece (<s>, [CLS], <|endoftext|>, >>fr<<, ...): a word of its own, printed as it is."""
    return piece in SPECIAL_PIECES or bool(SPECIAL_PATTERN.fullmatch(piece))


def word_starts(pieces: list[str]) -> list[bool]:
    """Whether each piece begins a word (a special piece is a word of its own). Pieces with no "▁" or "Ġ" mark at
    all are WordPiece's, where every piece but a "##" one begins a word."""
    wordpiece = not any(p.startswith((WORD_START, "Ġ")) for p in pieces if not is_special(p))
    starts = []
    for index, piece in enumerate(pieces):
        if index == 0 or is_special(piece) or is_special(pieces[index - 1]):
            starts.append(True)
        elif wordpiece:
            starts.append(not piece.startswith("##"))
        else:
            starts.append(piece.startswith((WORD_START, "Ġ")))
    return starts


def piece_text(piece: str) -> str:
    """The text a piece adds to its word, word marks removed ("▁La" -> "La", "##ing" -> "ing", "Ġcat" -> "cat")."""
    return piece[2:] if piece.startswith("##") else piece.replace(WORD_START, " ").replace("Ġ", " ").strip()


def display_piece(pieces: list[str], index: int, starts: list[bool] | None = None) -> str:
    """How the piece at ``index`` prints (see the module docstring); ``starts``: word_starts(pieces), if known."""
    piece = pieces[index]
    if is_special(piece):
        return piece
    text = piece_text(piece)
    if not text:
        return SPACE_MARK
    after_mark = index > 0 and pieces[index - 1] in (WORD_START, "Ġ") and not piece.startswith("##")
    starts_here = after_mark or (starts if starts is not None else word_starts(pieces))[index]
    return text if starts_here else CONTINUATION_MARK + text


def display_labels(pieces: list[str], level: str = "piece") -> list[str]:
    """Every label of an axis as people read it; word-level labels are returned as they are."""
    pieces = [str(piece) for piece in pieces]
    if level == "word":
        return pieces
    starts = word_starts(pieces)
    return [display_piece(pieces, index, starts) for index in range(len(pieces))]


def display_candidate(piece: str) -> str:
    """A next-token candidate on its own: "▁La" -> "La", a piece that would continue the word -> "·a"."""
    return display_piece([WORD_START + "x", str(piece)], 1)


def display_mask_candidate(piece: str) -> str:
    """A masked-LM candidate on its own: a WordPiece continuation "##s" -> "·s", a word as it is (no "·")."""
    return CONTINUATION_MARK + piece[2:] if piece.startswith("##") else piece_text(piece) or piece


def pieces_text(pieces: list[str], level: str = "piece") -> str:
    """The text that a row of pieces spells (special pieces left out), for captions."""
    kept = [str(piece) for piece in pieces if not is_special(str(piece))]
    if level == "word":
        return " ".join(kept)
    if any(str(piece).startswith("##") or piece in ("[CLS]", "[SEP]") for piece in pieces):  # WordPiece's: words apart
        starts = word_starts(kept)
        return "".join((" " if starts[i] and i else "") + piece_text(piece) for i, piece in enumerate(kept))
    return (
        "".join(piece[2:] if piece.startswith("##") else piece for piece in kept).replace(WORD_START, " ").replace("Ġ", " ").strip()
    )
