"""What a corpus index is made of: its folder's files, the residual-stream layers and heads it holds, and its
manifest (model/corpus/__init__.py describes the whole index).

A folder holds ``manifest.json`` (the model's digest, the corpus, the layers and heads, the counts), ``index.duckdb``
(the tables sentences, tokens, head_stats, chunks), ``projection.npz`` (the PCA of each residual layer), the arrays
``arrays/NAME.npy`` (or, while indexing, ``chunks/NNNNN.npz``) and, once complete, ``parquet/TABLE.parquet``.

Arrays are named by what they hold: ``resid.encoder.L3`` (the residual stream after encoder layer 3, reduced),
``q.cross.L3.H2`` and ``k.cross.L3.H2`` (the queries and keys of cross-attention head 2 of layer 3, full d_head).
Rows follow the tokens of one side: an encoder array has a row per source piece (its </s> included), a decoder one
a row per decoder position (<s> and the pieces it was fed). Layers and heads are counted from 1 as people name
them; layer 0 of a side is its embeddings with their positions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from model.corpus.schema import FORMAT, MAX_MANIFEST_BYTES, SIDES, parse_manifest
from model.errors import UserError
from model.files import atomic_output, open_input
from model.kinds import AttentionKind, KindError
from model.nn.masking import Head

MANIFEST, DATABASE, PROJECTION = "manifest.json", "index.duckdb", "projection.npz"
ARRAYS, CHUNKS, PARQUET = "arrays", "chunks", "parquet"
TABLES = ("sentences", "tokens", "head_stats")  # exported as Parquet (chunks is the index's own bookkeeping)


class CorpusIndexError(UserError):
    """A corpus index that cannot be built, resumed or read; the message says which file and why."""


@dataclass(frozen=True, order=True)
class Layer:
    """The residual stream of one side after ``layer`` layers (counted from 1; 0: the embeddings with positions)."""

    side: str  # "encoder" or "decoder"
    layer: int

    def __str__(self) -> str:
        return f"{self.side}:{self.layer}"

    @property
    def array(self) -> str:
        return f"resid.{self.side}.L{self.layer}"


def query_side(kind: AttentionKind) -> str:
    """The side whose tokens a kind's queries belong to: the source's for encoder self-attention, else the decoder's."""
    return "encoder" if kind is AttentionKind.ENCODER else "decoder"


def key_side(kind: AttentionKind) -> str:
    """The side whose tokens a kind's keys belong to: the decoder's for its self-attention, else the source's."""
    return "decoder" if kind is AttentionKind.DECODER else "encoder"


def head_arrays(head: Head) -> tuple[str, str]:
    """The names of a head's query and key arrays."""
    name = f"{head.kind.value}.L{head.layer + 1}.H{head.head + 1}"
    return f"q.{name}", f"k.{name}"


def array_side(name: str) -> str:
    """The side whose token rows an array's rows are."""
    what, kind_or_side = name.split(".")[:2]
    if what == "resid":
        return kind_or_side
    kind = AttentionKind.parse(kind_or_side)
    return query_side(kind) if what == "q" else key_side(kind)


def _number(text: str, what: str, item: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise CorpusIndexError(f"{item!r}: the {what} must be a whole number (counted from 1), not {text!r}")
    return int(text)


def parse_layers(text: str, n_encoder: int, n_decoder: int) -> tuple[Layer, ...]:
    """'all', or items such as '3' (both sides), 'encoder:3', 'decoder' (every layer of a side), 'encoder:0' (the
    embeddings), separated by commas -> the layers, checked against the model's."""
    counts = {"encoder": n_encoder, "decoder": n_decoder}  # 0: the model has no such stack (a one-stack model)
    present = tuple(side for side in SIDES if counts[side])
    chosen: set[Layer] = set()
    for item in (part.strip() for part in (text or "all").split(",")):
        if not item:
            continue
        sides: tuple[str, ...]
        if item == "all":
            sides, number = present, ""
        elif item in SIDES:
            sides, number = (item,), ""
        elif ":" in item:
            side_text, _, number = item.partition(":")
            sides = (side_text.strip(),)
        else:
            sides, number = present, item
        for side in sides:
            if side not in counts:
                raise CorpusIndexError(f"{item!r}: a layer is SIDE:LAYER with SIDE encoder or decoder (e.g. encoder:3)")
            if not counts[side]:
                raise CorpusIndexError(f"{item!r}: this model has no {side}; its layers are {present[0]}:1 to {present[0]}:N")
            layers = range(1, counts[side] + 1) if not number else [_number(number, "layer", item)]
            for layer in layers:
                if layer > counts[side]:
                    raise CorpusIndexError(f"{item!r}: the model's {side} has layers 1 to {counts[side]} (0: its embeddings)")
                chosen.add(Layer(side, layer))
    if not chosen:
        raise CorpusIndexError("no layer chosen: give --layers all, or items such as encoder:3")
    return tuple(sorted(chosen))


def parse_index_heads(
    text: str, n_encoder: int, n_decoder: int, n_heads: int, kinds: Sequence[AttentionKind] = tuple(AttentionKind)
) -> tuple[Head, ...]:
    """'all', 'none', or items KIND (every head of a kind), KIND:LAYER (every head of a layer), KIND:LAYER:HEAD, counted
    from 1 and separated by commas -> the heads whose queries and keys are kept, checked against the model's (its
    ``kinds`` of attention)."""
    if (text or "all").strip() == "none":
        return ()
    chosen: set[Head] = set()
    for item in (part.strip() for part in (text or "all").split(",")):
        if not item:
            continue
        parts = [part.strip() for part in item.split(":")]
        chosen_kinds = tuple(kinds) if parts == ["all"] else (_kind(parts[0], item),)
        for kind in chosen_kinds:
            if kind not in kinds:
                raise CorpusIndexError(f"{item!r}: this model has no {kind.label}; its kinds are {_named(kinds)}")
            n_layers = n_encoder if kind is AttentionKind.ENCODER else n_decoder
            layers = [_number(parts[1], "layer", item)] if len(parts) > 1 else list(range(1, n_layers + 1))
            heads = [_number(parts[2], "head", item)] if len(parts) > 2 else list(range(1, n_heads + 1))
            if len(parts) > 3 or any(not 1 <= layer <= n_layers for layer in layers) or any(not 1 <= h <= n_heads for h in heads):
                raise CorpusIndexError(
                    f"{item!r}: write KIND, KIND:LAYER or KIND:LAYER:HEAD; this model's {kind.value} attention has layers "
                    f"1 to {n_layers} of heads 1 to {n_heads}"
                )
            chosen.update(Head(kind, layer - 1, h - 1) for layer in layers for h in heads)
    return tuple(sorted(chosen, key=Head.sort_key))


def _named(kinds: Sequence[AttentionKind]) -> str:
    return ", ".join(kind.value for kind in kinds)


def _kind(text: str, item: str) -> AttentionKind:
    try:
        return AttentionKind.parse(text)
    except KindError:
        raise CorpusIndexError(f"{item!r}: the kind is encoder, decoder or cross, not {text!r}") from None


def parse_head(text: str) -> Head:
    """One head 'KIND:LAYER:HEAD' (counted from 1), as ``--head cross:3:2`` names it."""
    parts = [part.strip() for part in text.split(":")]
    if len(parts) != 3:
        raise CorpusIndexError(f"{text!r}: write a head as KIND:LAYER:HEAD, e.g. cross:3:2 (layers and heads from 1)")
    kind, layer, head = _kind(parts[0], text), _number(parts[1], "layer", text), _number(parts[2], "head", text)
    if layer < 1 or head < 1:
        raise CorpusIndexError(f"{text!r}: layers and heads are counted from 1")
    return Head(kind, layer - 1, head - 1)


@dataclass
class Manifest:
    """What an index holds and how it was made (``manifest.json``)."""

    model: str  # the model as named when indexing (a shipped name or a path)
    model_digest: str  # model/io/digest.py: an index is searched only with the model it was built with
    model_description: str
    corpus: dict  # model/corpus/sources.IndexCorpus.to_dict()
    n_sentences: int  # the sentences of the corpus to index
    layers: list[list[Any]]  # [[side, layer], ...]
    heads: list[str]  # ["cross:3:2", ...]
    dims: int  # the reduced residual vectors' width
    d_model: int
    d_head: int
    n_encoder_layers: int
    n_decoder_layers: int
    n_heads: int
    chunk_size: int
    pca_sentences: int  # the first sentences the PCA was fitted on
    format: int = FORMAT
    # The model's kinds of attention (a one-stack model's one; an index written before this field: all three) and its
    # stacks: a side of 0 layers is one the model does not have
    kinds: list[str] = field(default_factory=lambda: [kind.value for kind in AttentionKind])
    complete: bool = False
    counts: dict = field(default_factory=dict)  # sentences, encoder and decoder tokens, once complete

    @property
    def layer_list(self) -> tuple[Layer, ...]:
        return tuple(Layer(str(side), int(layer)) for side, layer in self.layers)

    @property
    def kind_list(self) -> tuple[AttentionKind, ...]:
        return tuple(AttentionKind.parse(kind) for kind in self.kinds)

    def sides(self) -> tuple[str, ...]:
        """The sides whose tokens the index holds: the stacks the model has."""
        return tuple(side for side in SIDES if self.stack_layers(side))

    def stack_layers(self, side: str) -> int:
        """The layers of the model's "encoder" or "decoder" stack (0: it has none)."""
        return {"encoder": self.n_encoder_layers, "decoder": self.n_decoder_layers}[side]

    def layers_of(self, kind: AttentionKind) -> int:
        """The layers of ``kind``'s attention: those of the stack that holds it."""
        return self.stack_layers(kind.stack)

    @property
    def head_list(self) -> tuple[Head, ...]:
        return tuple(parse_head(text) for text in self.heads)

    def array_width(self, name: str) -> int | range:
        """The width an array of the index has: a head's d_head, or for a residual layer its PCA's dimensions (at
        most ``dims``: fewer when it was fitted on fewer vectors)."""
        return range(1, self.dims + 1) if name.startswith("resid.") else self.d_head

    def settings(self) -> dict:
        """What must be the same for a run to resume this index (everything but its progress)."""
        values = asdict(self)
        for name in ("complete", "counts", "model", "model_description"):
            values.pop(name)
        return values

    def write(self, folder: Path) -> None:
        with atomic_output(folder / MANIFEST) as temporary:
            temporary.write_text(json.dumps(asdict(self), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        if not folder.is_dir():
            raise CorpusIndexError(f"{folder}: no such folder (build an index with transformer-explorer index --out {folder})")
        if not path.exists():
            raise CorpusIndexError(
                f"{folder}: not a corpus index (it has no {MANIFEST}); build one with transformer-explorer index"
            )
        if path.is_symlink():
            raise CorpusIndexError(f"{path}: is a link; a corpus index's files are its own: build the index again")
        with open_input(path, "manifest", CorpusIndexError) as handle:
            try:
                raw = handle.read(MAX_MANIFEST_BYTES + 1)
            except OSError as problem:
                raise CorpusIndexError(f"{path}: cannot be read ({problem.strerror or problem})") from None
        try:
            values = parse_manifest(raw)  # model/corpus/schema.py: every field's type, range and pattern
            return cls(**{key: value for key, value in values.items() if key in cls.__dataclass_fields__})
        except (ValueError, TypeError) as problem:
            reason = str(problem).splitlines()[0] if str(problem) else type(problem).__name__
            raise CorpusIndexError(f"{path}: damaged or truncated ({reason[:200]}); build the index again") from None
