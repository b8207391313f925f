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

SPECIAL_PIECES = ("<s>", "</s>", "<pad>", "<unk>", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")
WORD_START = "▁"  # SentencePiece
CONTINUATION_MARK = "·"
SPACE_MARK = "␣"
HIGHLIGHT = "#ff2d55"  # the current step: its token, row and outline, in the window and in figures


def starts_word(pieces: list[str], index: int) -> bool:
    """Whether the piece at ``index`` begins a word (or is a special piece, a word of its own)."""
    piece = pieces[index]
    if piece in SPECIAL_PIECES or index == 0:
        return True
    if piece.startswith("##"):
        return False
    if piece.startswith((WORD_START, "Ġ")):
        return True
    return pieces[index - 1] in SPECIAL_PIECES or pieces[index - 1] in (WORD_START, "Ġ")  # after a lone marker


def display_piece(pieces: list[str], index: int) -> str:
    """How the piece at ``index`` prints (see the module docstring)."""
    piece = pieces[index]
    if piece in SPECIAL_PIECES:
        return piece
    text = piece[2:] if piece.startswith("##") else piece.replace(WORD_START, " ").replace("Ġ", " ").strip()
    if not text:
        return SPACE_MARK
    return text if starts_word(pieces, index) else CONTINUATION_MARK + text


def display_labels(pieces: list[str], level: str = "piece") -> list[str]:
    """Every label of an axis as people read it; word-level labels are returned as they are."""
    pieces = [str(piece) for piece in pieces]
    if level == "word":
        return pieces
    return [display_piece(pieces, index) for index in range(len(pieces))]


def display_candidate(piece: str) -> str:
    """A next-token candidate on its own: "▁La" -> "La", a piece that would continue the word -> "·a"."""
    return display_piece([WORD_START + "x", str(piece)], 1)


def pieces_text(pieces: list[str], level: str = "piece") -> str:
    """The text that a row of pieces spells (special pieces left out), for captions."""
    kept = [str(piece) for piece in pieces if piece not in SPECIAL_PIECES]
    if level == "word":
        return " ".join(kept)
    return (
        "".join(piece[2:] if piece.startswith("##") else piece for piece in kept).replace(WORD_START, " ").replace("Ġ", " ").strip()
    )
