"""Reading a corpus index (model/corpus/__init__.py): its manifest, its database (read-only) and its arrays as memory
maps, each file checked as it is opened, so a missing, truncated or damaged one is one message naming it. An index
still being built (or stopped part-way) is read as far as its finished chunks go.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from model.corpus.checks import map_array, tidy_partials
from model.corpus.chunks import read_chunk_array
from model.corpus.extract import check_model
from model.corpus.layout import ARRAYS, DATABASE, PROJECTION, CorpusIndexError, Layer, Manifest, array_side, head_arrays
from model.corpus.reduce import Projection, load_projections
from model.corpus.store import CHUNK_COLUMNS, Store
from model.family import Bundle
from model.io.digest import bundle_digest
from model.nn.masking import Head


class CorpusIndex:
    """An index folder, open for reading: ``manifest``, ``store`` (its tables), ``array(name)`` and the helpers below."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.manifest = Manifest.read(self.folder)  # model/corpus/schema.py: every field checked
        tidy_partials(self.folder)
        self.store = Store(self.folder / DATABASE, read_only=True)  # nothing stored in it runs (model/corpus/store.py)
        try:
            self.chunks = check_chunks(self.store.finished_chunks(), self.manifest, self.store.path)
        except BaseException:
            self.store.close()
            raise
        self._arrays: dict[str, np.ndarray] = {}
        self._projections: dict[str, Projection] | None = None

    def close(self) -> None:
        self._arrays.clear()
        self.store.close()

    def __enter__(self) -> CorpusIndex:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    # --- what it holds -------------------------------------------------------------------------------
    @property
    def n_sentences(self) -> int:
        """Sentences indexed (all of the corpus once complete)."""
        return sum(chunk["n_sentences"] for chunk in self.chunks)

    def n_rows(self, side: str) -> int:
        return sum(chunk[f"{side}_rows"] for chunk in self.chunks)

    def describe(self) -> str:
        manifest = self.manifest
        state = "complete" if manifest.complete else f"{self.n_sentences:,} of {manifest.n_sentences:,} sentences (unfinished)"
        corpus = manifest.corpus.get("name", "?")
        return f"{self.folder.name}: {Path(str(corpus)).name} with {Path(manifest.model).name} — {state}"

    def check_layer(self, layer: Layer) -> Layer:
        if layer not in self.manifest.layer_list:
            held = ", ".join(str(item) for item in self.manifest.layer_list)
            raise CorpusIndexError(f"{self.folder}: holds no vectors of layer {layer}; it holds {held}")
        return layer

    def check_head(self, head: Head, arrays: bool = True) -> Head:
        """``head`` when the index has it: its statistics (every head of the model), and with ``arrays`` its queries and
        keys (the heads chosen when indexing)."""
        manifest = self.manifest
        if head.kind not in manifest.kind_list:
            kinds = ", ".join(manifest.kinds)
            raise CorpusIndexError(f"{head}: the indexed model has no {head.kind.label}; its kinds are {kinds}")
        n_layers = manifest.layers_of(head.kind)
        if head.layer >= n_layers or head.head >= manifest.n_heads:
            raise CorpusIndexError(
                f"{head}: the indexed model's {head.kind.value} attention has layers 1 to {n_layers} of heads 1 to "
                f"{manifest.n_heads}"
            )
        if arrays and head not in manifest.head_list:
            held = ", ".join(manifest.heads) if len(manifest.heads) <= 12 else f"{len(manifest.heads)} heads"
            raise CorpusIndexError(f"{self.folder}: holds no queries and keys of head {head}; it holds {held or 'none'}")
        return head

    def check_model(self, bundle: Bundle, name: str = "the model") -> None:
        """Refuse a model other than the one the index was built with (by its family, then its digest)."""
        check_model(bundle)
        digest = bundle_digest(bundle)
        if digest != self.manifest.model_digest:
            raise CorpusIndexError(
                f"{self.folder}: was indexed with another model ({self.manifest.model}, digest "
                f"{self.manifest.model_digest[:12]}), not {name} (digest {digest[:12]}); search it with that model, or "
                "index the corpus again with this one"
            )

    # --- arrays --------------------------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        """[rows of its side, width] (float16): the joined file as a memory map, or an unfinished index's chunks; each
        file checked (a regular file, its header's type and shape) before it is read."""
        if name not in self._arrays:
            path = self.folder / ARRAYS / f"{name}.npy"
            rows, width = f"{array_side(name)}_rows", self.manifest.array_width(name)
            if os.path.lexists(path) or self.manifest.complete:
                array = map_array(path, (self.n_rows(array_side(name)), width))
            else:
                parts: list[np.ndarray] = []
                for chunk in self.chunks:
                    shape = (chunk[rows], parts[0].shape[1] if parts else width)
                    parts.append(read_chunk_array(self.folder, chunk["chunk"], name, shape))
                array = np.concatenate(parts) if parts else np.zeros((0, 1), np.float16)
            self._arrays[name] = array
        return self._arrays[name]

    def layer_vectors(self, layer: Layer) -> np.ndarray:
        return self.array(self.check_layer(layer).array)

    def head_vectors(self, head: Head) -> tuple[np.ndarray, np.ndarray]:
        """(queries [query-side rows, d_head], keys [key-side rows, d_head]) of a head the index holds."""
        q_name, k_name = head_arrays(self.check_head(head))
        return self.array(q_name), self.array(k_name)

    def projection(self, layer: Layer) -> Projection:
        """The PCA that reduced ``layer``'s vectors, checked to give vectors as wide as the index's."""
        if self._projections is None:
            names = [item.array for item in self.manifest.layer_list]
            self._projections = load_projections(self.folder / PROJECTION, names, self.manifest.d_model, self.manifest.dims)
        projection = self._projections[self.check_layer(layer).array]
        width = self.layer_vectors(layer).shape[1]
        if len(self.chunks) and projection.dims != width:
            raise CorpusIndexError(
                f"{self.folder / PROJECTION}: reduces {layer} to {projection.dims} dimensions where the index's vectors have "
                f"{width}; it is damaged: build the index again"
            )
        return projection

    # --- tables --------------------------------------------------------------------------------------
    def query(self, sql: str, parameters: list | None = None) -> tuple[list[str], list[tuple]]:
        """(column names, rows) of a query the core built (never text from the user). Each query has a cursor of its
        own, so that searches from several threads (the window's jobs) may read the index at once."""
        with self.store.failures("reading"), self.store.connection.cursor() as cursor:
            result = cursor.execute(sql, parameters or [])
            rows = result.fetchall()
            return [column[0] for column in result.description], rows

    def tokens(self, side: str, row_ids: list[int]) -> dict[int, tuple[int, int, str, str | None]]:
        """row id -> (sentence id, position, token, next token) for rows of one side."""
        if not row_ids:
            return {}
        _, rows = self.query(
            "SELECT row_id, sentence_id, position, token, next_token FROM tokens WHERE side = ? AND row_id IN "
            "(SELECT unnest(?::BIGINT[]))",
            [side, [int(row) for row in row_ids]],
        )
        return {int(row[0]): (int(row[1]), int(row[2]), row[3], row[4]) for row in rows}

    def sentences(self, sentence_ids: list[int]) -> dict[int, tuple[str, str]]:
        """sentence id -> (source, output)."""
        if not sentence_ids:
            return {}
        _, rows = self.query(
            "SELECT sentence_id, source, output FROM sentences WHERE sentence_id IN (SELECT unnest(?::INTEGER[]))",
            [[int(sentence) for sentence in sentence_ids]],
        )
        return {int(row[0]): (row[1], row[2]) for row in rows}

    def sentence_tokens(self, side: str, sentence_id: int) -> list[str]:
        """A sentence's pieces on one side, in order."""
        _, rows = self.query(
            "SELECT token FROM tokens WHERE side = ? AND sentence_id = ? ORDER BY position", [side, int(sentence_id)]
        )
        return [row[0] for row in rows]


def check_chunks(chunks: list[dict[str, int]], manifest: Manifest, path: Path) -> list[dict[str, int]]:
    """The database's record of its finished chunks, refused unless it is the one an index writes: chunks numbered
    from 0, each of at most ``chunk_size`` sentences starting where the one before ended, rows counted alike."""
    expected = {"first_sentence": 0, "first_encoder_row": 0, "first_decoder_row": 0}
    for number, chunk in enumerate(chunks):
        values = [chunk[name] for name in CHUNK_COLUMNS]
        if (
            any(type(value) is not int or value < 0 for value in values)
            or chunk["chunk"] != number
            or any(chunk[name] != start for name, start in expected.items())
            or not 1 <= chunk["n_sentences"] <= manifest.chunk_size
            or expected["first_sentence"] + chunk["n_sentences"] > manifest.n_sentences
        ):
            raise CorpusIndexError(f"{path}: its record of chunk {number} is not one an index writes; build the index again")
        expected["first_sentence"] += chunk["n_sentences"]
        expected["first_encoder_row"] += chunk["encoder_rows"]
        expected["first_decoder_row"] += chunk["decoder_rows"]
    return chunks
