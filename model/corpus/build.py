"""Building a corpus index in the background: a model run over a corpus chunk by chunk, with progress, a cancel flag
and resume.

``IndexBuilder(...).run()`` first fits the PCA of each residual layer on the corpus's first sentences (``projection.npz``), then
indexes chunks of ``chunk_size`` sentences in order. A chunk is finished when its arrays folder has been renamed into
place and its rows committed to the database in one transaction; a run that is cancelled, interrupted or stopped by a
full disk keeps every finished chunk, and running it again (the same model, corpus and settings) continues after the
last one. Chunks are the same whatever run makes them, so a resumed index equals one built in one go. Once every chunk
is in, the arrays are joined into ``arrays/`` and the tables exported as Parquet, and the manifest says so.

The same index built by Dask workers (model/corpus/distributed.py) is this class with its chunk loop
(``_index_chunks``) replaced: planning, the PCA, committing (``_commit``) and finishing are the ones here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from model.corpus.checks import tidy_partials
from model.corpus.chunks import ChunkArchives, join_array, remove_chunks, tidy_chunks, write_chunk
from model.corpus.extract import BatchReading, Decodings, check_model, kind_layers, read_sentences_batched, stacks
from model.corpus.layout import (
    ARRAYS,
    CHUNKS,
    DATABASE,
    MANIFEST,
    PARQUET,
    PROJECTION,
    CorpusIndexError,
    Manifest,
    array_side,
    head_arrays,
    parse_index_heads,
    parse_layers,
)
from model.corpus.reduce import Projection, fit_projection, load_projections, save_projections
from model.corpus.sources import IndexCorpus, read_sentences
from model.corpus.store import Store
from model.corpus.tables import chunk_tables
from model.data.corpora import Pair
from model.family import Bundle
from model.files import OutputError, failure_reason
from model.io.digest import bundle_digest
from model.nn.masking import head_projection
from model.runtime import follow_free_cores


@dataclass
class IndexOptions:
    layers: str = "all"  # model/corpus/layout.parse_layers
    heads: str = "all"  # whose queries and keys are kept: model/corpus/layout.parse_index_heads
    dims: int = 64  # the reduced residual vectors' width
    chunk_size: int = 1000  # sentences committed together
    batch_size: int = 128  # sentences decoded together
    pca_sentences: int = 1000  # the first sentences the PCA is fitted on

    def validate(self) -> None:
        for name in ("dims", "chunk_size", "batch_size", "pca_sentences"):
            if getattr(self, name) < 1:
                raise CorpusIndexError(f"{name.replace('_', ' ')} must be at least 1, not {getattr(self, name)}")


@dataclass
class IndexProgress:
    phase: str  # "fitting" (the PCA), "indexing", "finishing" (joining the arrays, Parquet)
    done: int  # sentences indexed so far
    total: int

    def describe(self) -> str:
        if self.phase == "fitting":
            return f"fitting the PCA on the first {self.total:,} sentences"
        if self.phase == "finishing":
            return f"joining the arrays and writing Parquet ({self.total:,} sentences indexed)"
        return f"{self.done:,} of {self.total:,} sentences indexed"


@dataclass
class IndexResult:
    folder: Path
    n_sentences: int  # in the corpus
    indexed: int  # sentences in the index now
    complete: bool
    cancelled: bool = False
    resumed_from: int = 0  # sentences already indexed when this run started
    seconds: float = 0.0
    counts: dict = field(default_factory=dict)

    def describe(self) -> str:
        resumed = f", resumed after {self.resumed_from:,}" if self.resumed_from else ""
        if self.complete:
            return f"{self.folder}: {self.indexed:,} sentences indexed{resumed} ({self.seconds:.1f} s)"
        return (
            f"{self.folder}: stopped with {self.indexed:,} of {self.n_sentences:,} sentences indexed{resumed}; "
            "run the same command again to resume"
        )


def _plan(bundle: Bundle, model_name: str, corpus: IndexCorpus, options: IndexOptions, n_sentences: int) -> Manifest:
    config = bundle.config
    counts = dict(stacks(bundle.model))  # side -> layers, of the stacks the model has
    n_encoder, n_decoder = counts.get("encoder", 0), counts.get("decoder", 0)
    kinds = [kind for kind, _ in kind_layers(bundle.model)]
    layers = parse_layers(options.layers, n_encoder, n_decoder)
    heads = parse_index_heads(options.heads, n_encoder, n_decoder, config.n_heads, kinds)
    return Manifest(
        model=model_name,
        model_digest=bundle_digest(bundle),
        model_description=config.describe(),
        corpus=corpus.to_dict(),
        n_sentences=n_sentences,
        layers=[[layer.side, layer.layer] for layer in layers],
        heads=[str(head) for head in heads],
        dims=min(options.dims, config.d_model),
        d_model=config.d_model,
        d_head=head_projection(bundle.model, kinds[0], 0)[2],  # each head's width (a T5's d_kv)
        n_encoder_layers=n_encoder,
        n_decoder_layers=n_decoder,
        n_heads=config.n_heads,
        chunk_size=options.chunk_size,
        pca_sentences=min(options.pca_sentences, n_sentences),
        kinds=[kind.value for kind in kinds],
    )


def check_writable(folder: Path) -> None:
    """Refuse, before any work, an index folder that cannot be written: the folder itself when it exists (and its
    subfolders), else the nearest folder above it that exists, judged by its permissions and by its mode, as
    model/files.check_output judges a file's folder (so a read-only folder is refused even to root)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    places = [existing] + [existing / name for name in (ARRAYS, CHUNKS, PARQUET) if existing == folder]
    for place in places:
        if place.is_dir() and (not os.access(place, os.W_OK | os.X_OK) or not place.stat().st_mode & 0o222):
            raise CorpusIndexError(f"{folder}: the folder {place} is not writable; choose another folder for the index")


def _open_folder(folder: Path, planned: Manifest) -> Manifest:
    """The manifest to index under: the folder's own when it holds this index (to resume), else the planned one."""
    if folder.exists() and not folder.is_dir():
        raise CorpusIndexError(f"{folder}: is a file; give a folder for the index")
    if (folder / MANIFEST).exists():
        existing = Manifest.read(folder)
        if existing.model_digest != planned.model_digest:
            raise CorpusIndexError(f"{folder}: holds an index built with another model ({existing.model}); choose another folder")
        differing = [name for name, value in planned.settings().items() if existing.settings()[name] != value]
        if differing:
            raise CorpusIndexError(
                f"{folder}: holds an index made with other settings ({', '.join(differing)}); give the same options to "
                "resume it, or choose another folder"
            )
        return existing
    if folder.is_dir() and any(folder.iterdir()):
        raise CorpusIndexError(f"{folder}: is not empty and holds no corpus index; choose a new or empty folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CorpusIndexError(f"{folder}: cannot be created ({failure_reason(error)})") from None
    planned.write(folder)
    return planned


def chunk_pairs(pairs: list[Pair], number: int, size: int) -> list[Pair]:
    """The sentences of chunk ``number`` (chunks of ``size``)."""
    return pairs[number * size : (number + 1) * size]


def write_projected(folder: Path, number: int, reading: BatchReading, projections: dict[str, Projection]) -> None:
    """Chunk ``number``'s arrays in ``chunks/NNNNN.npz`` (written atomically), each residual layer's reduced by its PCA."""
    arrays = dict(reading.arrays)
    for name, projection in projections.items():
        arrays[name] = projection.apply(arrays[name])  # [rows, dims]
    write_chunk(folder, number, arrays)


class IndexBuilder:
    """One run of indexing (see the module's docstring)."""

    def __init__(
        self,
        bundle: Bundle,
        model_name: str,
        corpus: IndexCorpus,
        folder: str | Path,
        options: IndexOptions | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        self.options = options or IndexOptions()
        self.options.validate()
        check_model(bundle)
        self.bundle, self.folder = bundle, Path(folder)
        check_writable(self.folder)
        self.pairs = read_sentences(corpus)
        self.manifest = _open_folder(self.folder, _plan(bundle, model_name, corpus, self.options, len(self.pairs)))
        self.layers, self.heads = self.manifest.layer_list, self.manifest.head_list
        self.progress = progress or (lambda _progress: None)
        self.stop = stop or (lambda: False)
        self.indexed = 0  # sentences in finished chunks
        # The PCA's sentences as decoded to fit it: their chunks read them again without decoding them again (the
        # decoding is most of a big model's reading)
        self.decoded: Decodings = {}
        self.projections: dict[str, Projection] | None = None  # each residual layer's PCA, once fitted or read

    def _read(self, pairs: list[Pair]) -> BatchReading | None:
        """``pairs`` read batch by batch; None when stopped meanwhile."""
        return read_sentences_batched(
            self.bundle, pairs, self.layers, self.heads, self.options.batch_size, self.stop, follow_free_cores, self.decoded
        )

    def _projections(self) -> dict[str, Projection] | None:
        """Each residual layer's PCA: the one saved, or fitted on the first sentences and saved; None when stopped, or
        when the first chunk holds those sentences (it is fitted on that chunk's reading: ``_fitted``)."""
        names = [layer.array for layer in self.layers]
        path = self.folder / PROJECTION
        if path.exists():
            return load_projections(path, names, self.manifest.d_model, self.manifest.dims)
        if self.manifest.pca_sentences <= self.manifest.chunk_size:
            return None  # the first chunk's reading holds the sample: read once, fitted there
        sample = self.pairs[: self.manifest.pca_sentences]
        self.progress(IndexProgress("fitting", 0, len(sample)))
        reading = self._read(sample)
        if reading is None:
            return None
        return self._fitted(reading)

    def _fitted(self, reading: BatchReading) -> dict[str, Projection]:
        """Each residual layer's PCA fitted on the rows of ``reading``'s first ``pca_sentences`` sentences, saved."""
        n = self.manifest.pca_sentences
        rows = {
            "encoder": sum(len(sentence.source_tokens) for sentence in reading.sentences[:n]),
            "decoder": sum(len(sentence.decoder_tokens) for sentence in reading.sentences[:n]),
        }
        names = [layer.array for layer in self.layers]
        projections = {name: fit_projection(reading.arrays[name][: rows[array_side(name)]], self.manifest.dims) for name in names}
        save_projections(self.folder / PROJECTION, projections)
        return projections

    def _index_chunk(self, store: Store, number: int, previous: dict[str, int] | None, projections) -> bool:
        """Read, write and commit chunk ``number`` (the first one, with no ``projections`` yet: the PCA fitted on it
        first); False when stopped before it was finished."""
        pairs = chunk_pairs(self.pairs, number, self.manifest.chunk_size)
        reading = self._read(pairs)
        for pair in pairs:  # read now: a chunk's sentences are not read again (only the PCA's are read twice)
            self.decoded.pop(tuple(self.bundle.source_ids(pair.source)[0]), None)
        if reading is None:
            return False
        if projections is None:
            self.progress(IndexProgress("fitting", 0, self.manifest.pca_sentences))
            projections = self.projections = self._fitted(reading)
        write_projected(self.folder, number, reading, projections)
        self._commit(store, number, reading, previous)
        return True

    def _commit(self, store: Store, number: int, reading: BatchReading, previous: dict[str, int] | None) -> dict[str, int]:
        """Chunk ``number``'s rows (its arrays' file already written) committed in one transaction, its sentence ids and
        token rows continuing ``previous`` (the chunk before it, None for the first); the chunk's record."""
        size = self.manifest.chunk_size
        tables, record = chunk_tables(reading, number, number * size, previous)
        store.commit_chunk(record, tables)
        self.indexed = min((number + 1) * size, len(self.pairs))
        return record

    def run(self) -> IndexResult:
        started = time.monotonic()
        tidy_partials(self.folder)  # what a killed run left (model/corpus/checks.py); never a live writer's
        store = Store(self.folder / DATABASE)  # its tables checked before it is resumed; a stopped run's log written in
        try:
            result = self._run(store)
        except (OSError, OutputError) as error:
            why = error if isinstance(error, OutputError) or not error.errno else failure_reason(error)
            raise CorpusIndexError(
                f"{self.folder}: indexing stopped: {why}; the {self.indexed:,} "
                "sentences indexed before are kept: free some room and run the same command again to resume"
            ) from None
        finally:
            store.close()
        result.seconds = time.monotonic() - started
        return result

    def _run(self, store: Store) -> IndexResult:
        finished = store.finished_chunks()
        tidy_chunks(self.folder, {chunk["chunk"] for chunk in finished})
        size, total = self.manifest.chunk_size, len(self.pairs)
        n_chunks = -(-total // size)
        done = self.indexed = min(len(finished) * size, total)
        result = IndexResult(self.folder, total, done, False, resumed_from=done)
        if self.manifest.complete:
            result.indexed, result.complete, result.counts = total, True, self.manifest.counts
            return result
        self.projections = self._projections()
        if self.projections is None and (self.manifest.pca_sentences > size or finished):
            result.cancelled = True  # stopped while the PCA's sentences were read
            return result
        previous = finished[-1] if finished else None
        if not self._index_chunks(store, len(finished), n_chunks, previous, result):
            result.cancelled = True
            return result
        self.progress(IndexProgress("finishing", total, total))
        self._finish(store, store.finished_chunks())
        result.complete, result.counts = True, self.manifest.counts
        return result

    def _index_chunks(self, store: Store, first: int, end: int, previous: dict[str, int] | None, result: IndexResult) -> bool:
        """Chunks ``first`` to ``end - 1`` indexed in order, one after another in this process (``previous``: the record of
        the chunk before ``first``); False when stopped before they were all finished."""
        for number in range(first, end):
            self.progress(IndexProgress("indexing", result.indexed, len(self.pairs)))
            if not self._index_chunk(store, number, previous, self.projections):
                return False
            previous = store.finished_chunks()[-1]
            result.indexed = self.indexed
        return True

    def _finish(self, store: Store, chunks: list[dict[str, int]]) -> None:
        """Join the arrays, export the tables as Parquet, and mark the index complete."""
        names = [layer.array for layer in self.layers]
        for head in self.heads:
            names += list(head_arrays(head))
        with ChunkArchives(self.folder) as archives:
            for name in names:
                rows = f"{array_side(name)}_rows"
                parts = [(chunk["chunk"], chunk[rows]) for chunk in chunks]
                join_array(self.folder, name, parts, self.manifest.array_width(name), archives)
        remove_chunks(self.folder)
        store.export_parquet(self.folder / PARQUET)
        counts = store.connection.execute(
            "SELECT (SELECT count(*) FROM sentences), (SELECT sum(encoder_rows) FROM chunks), "
            "(SELECT sum(decoder_rows) FROM chunks)"
        ).fetchone()
        assert counts is not None
        self.manifest.counts = dict(sentences=int(counts[0]), encoder_tokens=int(counts[1]), decoder_tokens=int(counts[2]))
        self.manifest.complete = True
        self.manifest.write(self.folder)
