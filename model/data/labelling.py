"""From labelled text to the ids and labels an encoder-only classifier reads and learns.

A tagger's text is a sequence of words (a tagging corpus gives them space-separated, one tag each; a
sentence typed in the window has its punctuation split off first, as the corpora write it). Each word is
encoded on its own, so the pieces of one word never straddle two, and its tag is learned and read at its
first piece; the other pieces and the final EOS carry no label. A sentence classifier reads the text
as the tokenizer splits it, then EOS, with one label for the whole.

Labels are stored shifted by one (``class index + 1``) so that 0 means "no label here": padded and
unlabelled positions are then left out of the loss and of the accuracy.
"""

from __future__ import annotations

import re

NO_LABEL = 0  # a position without a label (a word's later pieces, EOS, padding)
_EDGES = re.compile(r"^([^\w\s]*)(.*?)([^\w\s]*)$")  # leading punctuation, the word, trailing punctuation


def split_words(text: str) -> list[str]:
    """The words of typed text as the tagging corpora write them: "The cat sleeps." -> The, cat, sleeps, ".".
    Punctuation at a word's edges becomes a word of its own; inside a word ("km/h", "don't") it stays.
    (Training reads a corpus's words as given: they are already split.)"""
    words: list[str] = []
    for item in text.split():
        match = _EDGES.match(item)
        lead, core, trail = match.groups() if match else ("", item, "")
        words += [part for part in (lead, core, trail) if part] if core else [item]
    return words


def encode_words(tokenizer, words: list[str], max_len: int, eos_id: int) -> tuple[list[int], list[int]]:
    """(ids: each word's pieces, cut to fit ``max_len`` with EOS; the position of each kept word's first piece)."""
    ids: list[int] = []
    starts: list[int] = []
    for word in words:
        pieces = tokenizer.encode(word)
        if not pieces:
            continue
        if len(ids) + len(pieces) > max_len - 1:
            break
        starts.append(len(ids))
        ids += pieces
    return ids + [eos_id], starts


def tag_labels(starts: list[int], n_ids: int, tag_indices: list[int]) -> list[int]:
    """Shifted labels over ``n_ids`` positions: tag + 1 at each word's first piece, NO_LABEL elsewhere."""
    labels = [NO_LABEL] * n_ids
    for position, tag in zip(starts, tag_indices):
        labels[position] = tag + 1
    return labels
