"""The corpus index built by a Dask distributed cluster: the same index as ``IndexBuilder`` builds in one process
(model/corpus/build.py), its chunks read by worker processes.

``DistributedIndexBuilder`` is an ``IndexBuilder`` (it plans and opens the folder, fits the PCA, commits and finishes
with the same code) whose chunks after the PCA's are indexed by the workers of a ``DaskCluster``: a ``LocalCluster`` of
``workers`` processes started for the run (``--workers N``), or an existing scheduler (``--cluster tcp://HOST:8786``).
This process (the coordinator) fits the PCA first, as one process does (on the first chunk's reading, or on the first
``pca_sentences`` read on their own) and saves it, so the projection is the one of a single-process build. Then each worker task
gets one chunk's sentences (never the whole corpus), loads the model itself by the name or path the index was given
(once per worker process: ``WORKER_MODELS``, checked against the index's model digest), reads them with torch on one
thread, reduces the residual vectors by the PCA, writes ``chunks/NNNNN.npz`` itself (atomically, ``write_chunk``) and
returns only the sentences and their head statistics. The coordinator commits the chunks to DuckDB in chunk order
(holding those that arrive early) and finishes the index as one process does. A chunk is finished only once
committed, so an interrupted distributed build resumes, by either path, to the same index; the chunk files of chunks
never committed are removed when it resumes (``tidy_chunks``). The workers of an existing cluster must see the index
folder at the same path (a shared file system) and the same model.

Why Dask distributed and not Ray: it is pure Python and light to install (dask and distributed wheels of about 1 MB
each; Ray's wheel is 67 MB, with compiled GCS and raylet processes); a ``LocalCluster`` of two worker processes started
in 1.3 s on a 2-core laptop (measured, niced, torch not yet imported by the workers) and needs no daemon; a local
cluster and an existing scheduler are used through the one same ``Client`` API; and a task that dies with its worker is
retried on another worker by the scheduler (``KilledWorker`` once it has killed too many), which Ray also does but with
its own head-node processes costing cores a 2-core machine does not have to spare.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import signal
import socket
import uuid
from collections.abc import Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from model.corpus.build import IndexBuilder, IndexProgress, IndexResult, chunk_pairs, write_projected
from model.corpus.extract import BatchReading, Decodings, read_sentences_batched
from model.corpus.layout import PROJECTION, CorpusIndexError, Layer
from model.corpus.reduce import Projection, load_projections
from model.corpus.store import Store
from model.data.corpora import Pair
from model.family import Bundle
from model.io.digest import bundle_digest
from model.nn.masking import Head
from model.runtime import set_cpu_threads

INSTALL = "pip install 'transformer-explorer[cluster]'"
CONNECT_TIMEOUT = 10.0  # seconds a scheduler (and its first worker) has to answer
TASKS_PER_WORKER = 2  # chunks in flight or held for their turn, per worker: bounds the coordinator's and workers' memory

# Per worker process: model name -> (bundle, digest), loaded by the first chunk task that needs it
WORKER_MODELS: dict[str, tuple[Bundle, str]] = {}
# Per worker process: index folder -> (its projection.npz's modification time, the projections)
WORKER_PROJECTIONS: dict[str, tuple[int, dict[str, Projection]]] = {}


def require_dask() -> Any:
    """The ``distributed`` module; one line saying how to install it when it is missing (imported by name: dask is an
    optional dependency, so nothing here needs its types)."""
    try:
        return importlib.import_module("distributed")
    except ImportError:
        raise CorpusIndexError(f"indexing with a Dask cluster needs dask[distributed]: {INSTALL}") from None


def check_address(address: str) -> tuple[str, str, int]:
    """(protocol, host, port) of a scheduler's address; one line when it is malformed."""
    parsing = importlib.import_module("distributed.comm.addressing")
    try:
        protocol, location = parsing.parse_address(address, strict=True)
        host, port = parsing.parse_host_port(location)
    except (ValueError, TypeError):
        host, port, protocol = "", None, ""
    if protocol not in ("tcp", "tls", "ws", "wss") or not host or not port:
        raise CorpusIndexError(f"{address}: not a Dask scheduler address; give one as tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)")
    return protocol, host, int(port)


def _unreachable(address: str, timeout: float) -> CorpusIndexError:
    return CorpusIndexError(
        f"{address}: no Dask scheduler answered within {timeout:g} s; start one (dask scheduler) or use --workers N"
    )


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the local workers start: processes started meanwhile inherit it (Python leaves an ignored
    SIGINT ignored), so a Ctrl-C at the terminal, sent to every process of its group, stops this process only, which
    then closes its workers, instead of each worker printing its own traceback."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are the caller's
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class DaskCluster:
    """The workers of one run: a ``LocalCluster`` of ``workers`` processes of one thread each, started on entering and
    closed on leaving, or the existing scheduler at ``address`` (connected to within ``timeout`` seconds)."""

    def __init__(self, workers: int | None = None, address: str | None = None, timeout: float = CONNECT_TIMEOUT) -> None:
        if (workers is None) == (address is None):
            raise CorpusIndexError("give either a number of local workers or a cluster's address, not both")
        if workers is not None and workers < 1:
            raise CorpusIndexError(f"--workers must be at least 1, not {workers}")
        self.workers, self.address, self.timeout = workers, address, timeout
        self.distributed = require_dask()
        if address is not None:
            check_address(address)
        self.cluster: Any = None
        self.client: Any = None
        self.client_log_level = logging.NOTSET

    def __enter__(self) -> DaskCluster:
        distributed = self.distributed
        client_log = logging.getLogger("distributed.client")  # a lost scheduler is said here in one line, not logged
        self.client_log_level = client_log.level
        client_log.setLevel(logging.CRITICAL)
        if self.address is None:
            with sigint_ignored():  # the workers inherit it: Ctrl-C stops this process, which closes them
                self.cluster = distributed.LocalCluster(
                    n_workers=self.workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    scheduler_kwargs={"dashboard": False},  # no web page: nothing listens beyond the workers' own ports
                    silence_logs=logging.ERROR,
                )
            self.client = distributed.Client(self.cluster, set_as_default=False)
            return self
        self._connect()
        return self

    def _connect(self) -> None:
        address, timeout = str(self.address), self.timeout
        protocol, host, port = check_address(address)
        if protocol == "tcp":  # a closed port or a missing host answered at once, without a client to tidy away
            try:
                socket.create_connection((host, port), timeout=timeout).close()
            except OSError:
                raise _unreachable(address, timeout) from None
        try:
            self.client = self.distributed.Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError):
            raise _unreachable(address, timeout) from None
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError):
            self.client.close()
            raise CorpusIndexError(
                f"{address}: the Dask scheduler has no workers; start some (dask worker {address}) or use --workers N"
            ) from None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
        logging.getLogger("distributed.client").setLevel(self.client_log_level)

    def worker_addresses(self) -> list[str]:
        """The scheduler's workers now; one line when the scheduler went away (the client holds no workers then)."""
        workers = self.client.scheduler_info().get("workers") if self.client is not None else None
        if workers is None or self.client.status not in ("running", "connecting"):
            raise CorpusIndexError(f"the Dask scheduler {self.address or 'of the local workers'} went away")
        return list(workers)

    @property
    def n_workers(self) -> int:
        return len(self.worker_addresses()) if self.client is not None else 0

    def describe(self) -> str:
        """The workers used, in words (once entered)."""
        if self.address is None:
            return f"{self.n_workers} local Dask worker processes (1 thread each)"
        return f"{self.n_workers} Dask workers of the scheduler {self.address}"


@dataclass(frozen=True)
class ChunkTask:
    """What a worker needs to index one chunk (small: its sentences, not the corpus)."""

    model: str  # the name or absolute path the worker loads the model by
    digest: str  # the index's model digest: a worker with another model refuses
    folder: str  # the index's folder (absolute)
    number: int
    pairs: list[Pair]
    layers: list[Layer]
    heads: list[Head]
    batch_size: int
    d_model: int
    dims: int
    known: Decodings  # the chunk's sentences the coordinator decoded already (for the PCA): not decoded again


def worker_bundle(model: str, digest: str) -> Bundle:
    """The model of ``model`` in this worker process, loaded once (``WORKER_MODELS``); one line when it is another
    model than the index's."""
    from model.io.models import open_model  # deferred: only a worker process loads models here

    cached = WORKER_MODELS.get(model)
    if cached is None or cached[1] != digest:
        bundle = open_model(model)
        cached = WORKER_MODELS[model] = (bundle, bundle_digest(bundle))
    if cached[1] != digest:
        raise CorpusIndexError(
            f"{model}: this Dask worker's model is another one than the index's (digest {cached[1][:12]}, not "
            f"{digest[:12]}); give every worker the same model file"
        )
    return cached[0]


def worker_projections(task: ChunkTask) -> dict[str, Projection]:
    """The index's PCA (``projection.npz``, saved by the coordinator before any chunk task), read once per worker
    process and index folder (read again when the file changed)."""
    path = Path(task.folder) / PROJECTION
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        raise CorpusIndexError(
            f"{path}: not found by the Dask worker on {socket.gethostname()}; the workers must see the index folder at "
            "the same path (a shared file system)"
        ) from None
    cached = WORKER_PROJECTIONS.get(task.folder)
    if cached is None or cached[0] != stamp:
        names = [layer.array for layer in task.layers]
        cached = WORKER_PROJECTIONS[task.folder] = (stamp, load_projections(path, names, task.d_model, task.dims))
    return cached[1]


def warm_worker(model: str, digest: str) -> None:
    """(On a worker) load the model before the first chunk task needs it; a failure is left to that task to report."""
    set_cpu_threads(1)
    with contextlib.suppress(Exception):  # the chunk task loads it again, and says why it cannot in one line
        worker_bundle(model, digest)


def index_chunk(task: ChunkTask) -> BatchReading:
    """(On a worker) read chunk ``task.number``, write its reduced arrays to ``chunks/NNNNN.npz``, and return its
    sentences and head statistics only (no arrays: they stay on disk)."""
    set_cpu_threads(1)  # each worker process runs torch on one thread: the workers share the cores
    projections = worker_projections(task)
    bundle = worker_bundle(task.model, task.digest)
    reading = read_sentences_batched(bundle, task.pairs, task.layers, task.heads, task.batch_size, known=dict(task.known))
    assert reading is not None  # never stopped: a worker task runs to its end
    write_projected(Path(task.folder), task.number, reading, projections)
    return BatchReading(reading.sentences, {}, reading.stats)


def worker_model_name(name: str) -> str:
    """The name a worker loads the model by: a file or folder by its absolute path (workers may start elsewhere)."""
    path = Path(name).expanduser()
    return str(path.resolve()) if path.exists() else name


class DistributedIndexBuilder(IndexBuilder):
    """An ``IndexBuilder`` whose chunks after the PCA's are indexed by the workers of ``cluster`` (entered by the
    caller before ``run``); see the module's docstring."""

    def __init__(self, *arguments: Any, cluster: DaskCluster, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self.cluster = cluster

    def _index_chunks(self, store: Store, first: int, end: int, previous: dict[str, int] | None, result: IndexResult) -> bool:
        if self.cluster.client is not None and first < end:
            self._warm_workers()
        if self.projections is None and first < end:  # the first chunk holds the PCA's sentences: read here, fitted on it
            if not super()._index_chunks(store, first, first + 1, previous, result):
                return False
            first, previous = first + 1, store.finished_chunks()[-1]
        if first >= end:
            return True
        if self.cluster.client is None:
            raise CorpusIndexError("the Dask cluster was not started (enter the DaskCluster before running)")
        return self._distributed_chunks(store, first, end, previous, result)

    def _warm_workers(self) -> None:
        """Each worker loads the model now (a task of its own, not waited for), while this process reads the PCA's
        chunk: the first chunk tasks then start reading at once."""
        distributed, client = self.cluster.distributed, self.cluster.client
        model, digest = worker_model_name(self.manifest.model), self.manifest.model_digest
        try:
            addresses = self.cluster.worker_addresses()
        except CorpusIndexError as gone:
            raise CorpusIndexError(f"{gone} before indexing began; {self._kept()}") from None
        for address in addresses:
            key = f"load-model-{uuid.uuid4().hex}"
            distributed.fire_and_forget(
                client.submit(warm_worker, model, digest, key=key, workers=[address], allow_other_workers=False)
            )

    def _task(self, number: int) -> ChunkTask:
        pairs = chunk_pairs(self.pairs, number, self.manifest.chunk_size)
        known = {}
        for pair in pairs:  # as one process does: the PCA's sentences are decoded once
            key = tuple(self.bundle.source_ids(pair.source)[0])
            if key in self.decoded:
                known[key] = self.decoded.pop(key)
        model = worker_model_name(self.manifest.model)
        layers, heads = list(self.layers), list(self.heads)
        folder = str(self.folder.resolve())
        manifest = self.manifest
        return ChunkTask(
            model,
            manifest.model_digest,
            folder,
            number,
            pairs,
            layers,
            heads,
            self.options.batch_size,
            manifest.d_model,
            manifest.dims,
            known,
        )

    def _distributed_chunks(self, store: Store, first: int, end: int, previous: dict[str, int] | None, result: IndexResult) -> bool:
        """Chunks ``first`` to ``end - 1`` read by the workers, at most ``TASKS_PER_WORKER`` per worker at once, and
        committed here in order; False when stopped before they were all finished."""
        distributed, client = self.cluster.distributed, self.cluster.client
        window = TASKS_PER_WORKER * max(1, self.cluster.n_workers)
        waiting = iter(range(first, end))
        running: dict[Any, int] = {}  # future -> its chunk
        arrived: dict[int, BatchReading] = {}  # chunks read before their turn to be committed
        completed = distributed.as_completed(loop=client.loop)  # this client's (no default client is set)
        expected, total = first, len(self.pairs)
        self.progress(IndexProgress("indexing", result.indexed, total))
        try:
            while True:
                while len(running) + len(arrived) < window and (number := next(waiting, None)) is not None:
                    future = client.submit(index_chunk, self._task(number), key=f"index-chunk-{number}-{uuid.uuid4().hex}")
                    running[future] = number
                    completed.add(future)
                if not running:
                    return True
                future = next(completed)
                number = running.pop(future)
                arrived[number] = self._chunk_result(future, number)
                while expected in arrived:
                    previous = self._commit(store, expected, arrived.pop(expected), previous)
                    result.indexed, expected = self.indexed, expected + 1
                    self.progress(IndexProgress("indexing", result.indexed, total))
                if self.stop():
                    return False
        except (CancelledError, distributed.comm.CommClosedError):  # anywhere the client speaks to the scheduler
            raise CorpusIndexError(f"the Dask scheduler went away while indexing; {self._kept()}") from None
        finally:
            client.cancel(list(running))

    def _kept(self) -> str:
        if not self.indexed:
            return "nothing was indexed yet: run the same command again"
        return f"the {self.indexed:,} sentences indexed are kept: run the same command again to resume"

    def _chunk_result(self, future: Any, number: int) -> BatchReading:
        """A worker's reading of chunk ``number``; one line when its workers died or the scheduler went away."""
        distributed = self.cluster.distributed
        try:
            return future.result()
        except distributed.KilledWorker as error:
            worker = getattr(getattr(error, "last_worker", None), "address", "a worker")
            tries = getattr(error, "allowed_failures", 0) + 1
            raise CorpusIndexError(
                f"a worker died while indexing chunk {number} (tried {tries} time{'s' if tries > 1 else ''}, last on "
                f"{worker}); {self._kept()}"
            ) from None
        except (CancelledError, distributed.comm.CommClosedError):
            raise CorpusIndexError(f"the Dask scheduler went away while indexing chunk {number}; {self._kept()}") from None
