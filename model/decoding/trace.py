"""The decoding trace: every attention probability of every kind, layer, head and step, as NumPy.

This is the one contract between the core and the GUI: views read a Trace, never the model. A
trace holds the kinds of attention its model has (``kinds``): an encoder-decoder all three, an
encoder-only model only encoder self-attention (no steps), a decoder-only model only decoder
self-attention (no source). A kind the model lacks is None; views and exports show what there is.

Axes: the source has S pieces (its </s> last). Decoding made T steps; step t consumed the decoder
input token ``decoder_input_tokens[t]`` (<s> first) and produced ``target_tokens[t]``. So
``decoder_self[l, h, t, j]`` is how much position t attended to position j <= t, and
``cross[l, h, t, s]`` how much the step that produced target token t attended to source piece s.

Before the first step (T = 0) the ``next_candidate_*`` fields hold the distribution the first token
will be chosen from; they are empty once a step has been made, or when that is not known.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from model.data.token_labels import is_special, piece_text, word_starts
from model.files import atomic_output
from model.kinds import AttentionKind, SelectionError

if TYPE_CHECKING:  # the trace itself needs only NumPy
    from model.decoding.beam import BeamTree


def word_groups(pieces: list[str]) -> tuple[np.ndarray, list[str]]:
    """Pieces -> (word index of each piece, word texts), for every tokenizer's word marks: SentencePiece's "▁"
    and byte-level BPE's "Ġ" start a word, WordPiece's "##" continues one (model/data/token_labels.py);
    special pieces are words of their own."""
    groups: list[int] = []
    words: list[str] = []
    for piece, starts in zip(pieces, word_starts(pieces)):  # a lone "▁" mark starts the word its next pieces continue
        if starts:
            words.append(piece if is_special(piece) else piece_text(piece))
        else:
            words[-1] += piece_text(piece)
        groups.append(len(words) - 1)
    return np.array(groups, dtype=np.int64), words


def group_matrix(matrix: np.ndarray, query_groups: np.ndarray, key_groups: np.ndarray) -> np.ndarray:
    """[..., Q, K] piece attention -> [..., Qw, Kw] word attention: sum over a word's key pieces,
    mean over its query pieces (so rows still sum to 1)."""
    n_query_words, n_key_words = int(query_groups.max()) + 1, int(key_groups.max()) + 1
    key_sum = np.zeros(matrix.shape[:-1] + (n_key_words,), dtype=np.float64)
    np.add.at(key_sum, (..., key_groups), matrix)  # type: ignore[arg-type]  # numpy's stubs omit Ellipsis
    moved = np.moveaxis(key_sum, -2, 0)  # [Q, ..., Kw]
    query_sum = np.zeros((n_query_words,) + moved.shape[1:], dtype=np.float64)
    np.add.at(query_sum, query_groups, moved)
    counts = np.bincount(query_groups, minlength=n_query_words).reshape((-1,) + (1,) * (moved.ndim - 1))
    return np.moveaxis(query_sum / counts, 0, -2).astype(matrix.dtype)


NOT_ARRAYS = ("beam", "hypothesis_rank")  # fields the trace command writes as beam_* arrays instead


@dataclass
class Trace:
    encoder_self: np.ndarray | None  # [encoder layers, heads, S, S]; None in a decoder-only model
    decoder_self: np.ndarray | None  # [decoder layers, heads, T, T]; None in an encoder-only model
    cross: np.ndarray | None  # [decoder layers, heads, T, S]; None unless the model is an encoder-decoder
    source_tokens: list[str]  # S pieces (or words at word level)
    target_tokens: list[str]  # T produced pieces
    decoder_input_tokens: list[str]  # T pieces fed to the decoder: <s>, then target_tokens[:-1]
    candidate_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # [T, k]
    candidate_probabilities: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))  # [T, k]
    candidate_tokens: list[list[str]] = field(default_factory=list)  # [T][k]
    chosen_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # [T]
    log_probabilities: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # [T] of the chosen
    forced: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # [T] what-if steps
    next_candidate_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # [k] at T = 0 only
    next_candidate_probabilities: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # [k]
    next_candidate_tokens: list[str] = field(default_factory=list)  # [k] raw pieces
    target_vocab_size: int = 0  # the model's target vocabulary (candidates show what share they cover); 0: unknown
    n_given: int = 0  # the first steps' tokens were given, not chosen: a decoder-only model's prompt, a forced first token
    # An encoder-only model's head: candidates at each mask token, class probabilities ([C], or [S, C] per piece).
    mask_positions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # [M] source positions
    mask_candidate_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # [M, k]
    mask_candidate_probabilities: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))  # [M, k]
    mask_candidate_tokens: list[list[str]] = field(default_factory=list)  # [M][k]
    class_names: list[str] = field(default_factory=list)  # [C]
    class_probabilities: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # [C] or [S, C]
    beam: BeamTree | None = None  # the whole beam search, when decoding searched one (its pieces filled in)
    hypothesis_rank: int | None = None  # the beam hypothesis these steps follow (0 = best); None off the beam
    level: str = "piece"  # "piece" or "word"
    source_text: str = ""
    target_text: str = ""
    masked_heads: list[str] = field(default_factory=list)  # heads knocked out, as KIND:LAYER:HEAD from 1
    # What the attention arrays hold: "" for the weights, else a measure's shares (model/attribution/measures.py).
    measure: str = ""
    source_share: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # [T] of each prediction, when known
    # Integrated gradients, per prediction (pieces, also at word level): the completeness gap (a share; NaN where
    # not computed), the gradient points used and whether the integration converged (model/attribution/integration.py).
    completeness_gap: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # [T]
    integration_points: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # [T]
    integration_converged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # [T]
    source_unknown: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # [S] read as <unk>: never seen

    @property
    def value_label(self) -> str:
        """What the attention arrays hold, for a colour bar: the weights, or a measure's shares of each row."""
        return "share of the row" if self.measure else "attention weight"

    @property
    def n_steps(self) -> int:
        return len(self.target_tokens)

    def source_words(self) -> tuple[np.ndarray, list[str]]:
        return word_groups(self.source_tokens)

    def target_words(self) -> tuple[np.ndarray, list[str]]:
        return word_groups(self.target_tokens)

    def decoder_input_words(self) -> tuple[np.ndarray, list[str]]:
        return word_groups(self.decoder_input_tokens)

    @property
    def kinds(self) -> tuple[AttentionKind, ...]:
        """The kinds of attention this trace holds, in the order encoder, decoder, cross."""
        return tuple(kind for kind in AttentionKind if getattr(self, kind.field) is not None)

    def has(self, kind: AttentionKind | str) -> bool:
        return getattr(self, AttentionKind.parse(kind).field) is not None

    def matrix(self, kind: AttentionKind | str) -> np.ndarray:
        """[layers, heads, queries, keys] of a kind (or its Trace field name); SelectionError if the model has none."""
        kind = AttentionKind.parse(kind)
        weights = getattr(self, kind.field)
        if weights is None:
            raise SelectionError(f"this model has no {kind.label}")
        return weights

    def axis_labels(self, kind: AttentionKind | str) -> tuple[list[str], list[str]]:
        """(query labels, key labels) for a kind of attention."""
        kind = AttentionKind.parse(kind)
        if kind is AttentionKind.ENCODER:
            return self.source_tokens, self.source_tokens
        if kind is AttentionKind.DECODER:
            return self.decoder_input_tokens, self.decoder_input_tokens
        return self.target_tokens, self.source_tokens

    def at_step(self, step: int) -> Trace:
        """The trace as it stood after ``step`` steps (rows of later steps dropped)."""
        step = max(0, min(step, self.n_steps))
        next_ids, next_probabilities, next_tokens = (
            self.next_candidate_ids,
            self.next_candidate_probabilities,
            self.next_candidate_tokens,
        )
        if step == 0 and step < self.n_steps and len(self.candidate_tokens):  # step 1's candidates come next
            next_ids, next_probabilities = self.candidate_ids[0], self.candidate_probabilities[0]
            next_tokens = list(self.candidate_tokens[0])
        elif step < self.n_steps:
            next_ids, next_probabilities, next_tokens = np.zeros(0, np.int64), np.zeros(0, np.float32), []
        decoder_self = None if self.decoder_self is None else self.decoder_self[:, :, :step, :step]
        cross = None if self.cross is None else self.cross[:, :, :step]
        return replace(
            self,
            decoder_self=decoder_self,
            cross=cross,
            target_tokens=self.target_tokens[:step],
            decoder_input_tokens=self.decoder_input_tokens[:step],
            candidate_ids=self.candidate_ids[:step],
            candidate_probabilities=self.candidate_probabilities[:step],
            candidate_tokens=self.candidate_tokens[:step],
            chosen_ids=self.chosen_ids[:step],
            log_probabilities=self.log_probabilities[:step],
            forced=self.forced[:step],
            source_share=self.source_share[:step],
            completeness_gap=self.completeness_gap[:step],
            integration_points=self.integration_points[:step],
            integration_converged=self.integration_converged[:step],
            next_candidate_ids=next_ids,
            next_candidate_probabilities=next_probabilities,
            next_candidate_tokens=next_tokens,
        )

    def word_level(self) -> Trace:
        """Words instead of pieces: keys summed over a word's pieces, queries averaged."""
        if self.level == "word" or not (self.source_tokens or self.target_tokens or self.decoder_input_tokens):
            return self
        source_groups, source_words = self.source_words() if self.source_tokens else (None, [])
        target_groups, target_words = self.target_words() if self.target_tokens else (None, [])
        input_groups, input_words = self.decoder_input_words() if self.decoder_input_tokens else (None, [])

        def grouped(weights: np.ndarray | None, queries: np.ndarray | None, keys: np.ndarray | None):
            if weights is None or queries is None or keys is None or 0 in weights.shape[2:]:
                return weights
            return group_matrix(weights, queries, keys)

        return replace(
            self,
            encoder_self=grouped(self.encoder_self, source_groups, source_groups),
            decoder_self=grouped(self.decoder_self, input_groups, input_groups),
            cross=grouped(self.cross, target_groups, source_groups),
            source_tokens=source_words,
            target_tokens=target_words,
            decoder_input_tokens=input_words,
            class_probabilities=self.word_classes(),
            source_share=self._word_source_share(target_groups),
            source_unknown=self._word_unknown(source_groups),
            level="word",
        )

    def _word_source_share(self, target_groups: np.ndarray | None) -> np.ndarray:
        """The source share of each target word: the mean over its pieces (as a word's query rows are)."""
        if target_groups is None or len(self.source_share) != len(target_groups):
            return self.source_share
        totals = np.bincount(target_groups, weights=self.source_share.astype(np.float64))
        return (totals / np.bincount(target_groups)).astype(np.float32)

    def _word_unknown(self, source_groups: np.ndarray | None) -> np.ndarray:
        """A source word is unknown when any of its pieces is."""
        if source_groups is None or len(self.source_unknown) != len(source_groups):
            return self.source_unknown
        return np.bincount(source_groups, weights=self.source_unknown.astype(np.float64)) > 0

    def word_classes(self) -> np.ndarray:
        """A tagger's class probabilities per word (read at each word's first piece): [words, C]; a sentence's [C]
        as it is."""
        classes = self.class_probabilities
        if classes.ndim != 2 or self.level == "word" or len(classes) != len(self.source_tokens):
            return classes
        groups, _ = self.source_words()
        first = np.flatnonzero(np.diff(groups, prepend=-1))  # [words] the first piece of each word
        return classes[first]

    # --- files ------------------------------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays (strings as fixed-width unicode) that numpy.load reads with allow_pickle=False."""
        arrays = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None or item.name in NOT_ARRAYS:  # a kind the model lacks; the beam (its own arrays)
                continue
            if item.name in ("candidate_tokens", "mask_candidate_tokens"):
                width = max((len(row) for row in value), default=0)
                value = np.array([row + [""] * (width - len(row)) for row in value], dtype=str).reshape(len(value), width)
            elif isinstance(value, list):
                value = np.array(value, dtype=str)
            elif isinstance(value, str):
                value = np.array(value)
            arrays[item.name] = value
        arrays["source_word_groups"], _ = self.source_words() if self.source_tokens else (np.zeros(0, np.int64), [])
        arrays["target_word_groups"], _ = self.target_words() if self.target_tokens else (np.zeros(0, np.int64), [])
        return arrays

    def save_npz(self, path: str | Path, extra: dict[str, np.ndarray] | None = None) -> None:
        """Every array into one .npz, written atomically (an error leaves an earlier file intact)."""
        with atomic_output(path) as temporary, open(temporary, "wb") as handle:
            np.savez_compressed(handle, **self.to_arrays(), **(extra or {}))  # type: ignore[arg-type]

    @classmethod
    def load_npz(cls, path: str | Path) -> Trace:
        with np.load(path, allow_pickle=False) as data:
            values: dict[str, Any] = {}
            for item in fields(cls):
                if item.name not in data.files:  # a kind the model lacks, or a field newer than the file
                    if item.name in ("encoder_self", "decoder_self", "cross"):
                        values[item.name] = None
                    continue
                array = data[item.name]
                if item.name in ("candidate_tokens", "mask_candidate_tokens"):
                    values[item.name] = [[t for t in row if t] for row in array.tolist()]
                elif item.type in ("list[str]",):
                    values[item.name] = [str(t) for t in array.tolist()]
                elif item.type == "int":
                    values[item.name] = int(array)
                elif item.type == "str":
                    values[item.name] = str(array)
                else:
                    values[item.name] = array
        return cls(**values)
