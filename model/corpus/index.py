"""Reading a corpus index (model/corpus/__init__.py): its manifest, its database (read-only) and its arrays as memory
maps, each file checked as it is opened, so a missing, truncated or damaged one is one message naming it. An index
still being built (or stopped part-way) is read as far as its finished chunks go.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, cast

import numpy as np

from model.corpus.chunks import chunk_file, read_chunk_array
from model.corpus.layout import ARRAYS, DATABASE, PROJECTION, CorpusIndexError, Layer, Manifest, array_side, head_arrays
from model.corpus.reduce import Projection, load_projections
from model.corpus.store import Store
from model.family import Bundle
from model.io.bundle import ModelBundle
from model.io.digest import model_digest
from model.nn.masking import Head


class CorpusIndex:
    """An index folder, open for reading: ``manifest``, ``store`` (its tables), ``array(name)`` and the helpers below."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.manifest = Manifest.read(self.folder)
        self.store = Store(self.folder / DATABASE, read_only=True)
        self.chunks = self.store.finished_chunks()
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
        n_layers = manifest.n_encoder_layers if head.kind.value == "encoder" else manifest.n_decoder_layers
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
        """Refuse a model other than the one the index was built with (by its digest)."""
        digest = model_digest(cast(ModelBundle, bundle))
        if digest != self.manifest.model_digest:
            raise CorpusIndexError(
                f"{self.folder}: was indexed with another model ({self.manifest.model}, digest "
                f"{self.manifest.model_digest[:12]}), not {name} (digest {digest[:12]}); search it with that model, or "
                "index the corpus again with this one"
            )

    # --- arrays --------------------------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        """[rows of its side, width] (float16): the joined file as a memory map, or an unfinished index's chunks."""
        if name not in self._arrays:
            path = self.folder / ARRAYS / f"{name}.npy"
            if path.exists() or self.manifest.complete:
                array = _load(path)
            else:
                parts = [_chunk_part(self.folder, chunk["chunk"], name) for chunk in self.chunks]
                array = np.concatenate(parts) if parts else np.zeros((0, 1), np.float16)
            expected = self.n_rows(array_side(name))
            if array.ndim != 2 or len(array) != expected:
                raise CorpusIndexError(
                    f"{self.folder}: the array {name} has {len(array):,} rows where the index has {expected:,} tokens; "
                    "it is damaged: build the index again"
                )
            self._arrays[name] = array
        return self._arrays[name]

    def layer_vectors(self, layer: Layer) -> np.ndarray:
        return self.array(self.check_layer(layer).array)

    def head_vectors(self, head: Head) -> tuple[np.ndarray, np.ndarray]:
        """(queries [query-side rows, d_head], keys [key-side rows, d_head]) of a head the index holds."""
        q_name, k_name = head_arrays(self.check_head(head))
        return self.array(q_name), self.array(k_name)

    def projection(self, layer: Layer) -> Projection:
        if self._projections is None:
            names = [item.array for item in self.manifest.layer_list]
            self._projections = load_projections(self.folder / PROJECTION, names)
        return self._projections[self.check_layer(layer).array]

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


def _chunk_part(folder: Path, chunk: int, name: str) -> np.ndarray:
    path = chunk_file(folder, chunk)
    if not path.exists():
        raise CorpusIndexError(f"{path}: missing; run the indexing again to resume")
    try:
        return read_chunk_array(folder, chunk, name)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as problem:
        raise CorpusIndexError(f"{path}: truncated or damaged ({str(problem).splitlines()[0]})") from None


def _load(path: Path) -> np.ndarray:
    if not path.exists():
        raise CorpusIndexError(f"{path}: missing; build the index again")
    try:
        return np.load(path, mmap_mode="r")
    except (OSError, ValueError, EOFError) as problem:
        raise CorpusIndexError(f"{path}: truncated or damaged ({str(problem).splitlines()[0]}); build the index again") from None
