"""The corpus index built by a Dask cluster (model/corpus/distributed.py): the same tables and arrays as one process
builds, an interrupted distributed build resumed (by the single-process path) to the same index, a worker killed
mid-build (retried, or stopped in one line and resumed), and each bad input (an unreachable or malformed address, no
dask, --workers 0) answered in one line, through the API and the command line.

500 toy-fr sentences in chunks of 100 read by the tiny toy-fr model, saved to a file that the workers load by its path."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

import model.corpus.distributed as distributed_module
from model.cli.commands import main
from model.corpus.build import IndexBuilder, IndexOptions
from model.corpus.distributed import DaskCluster, DistributedIndexBuilder, index_chunk
from model.corpus.layout import CorpusIndexError
from model.corpus.sources import IndexCorpus
from model.io.models import open_model
from model.runtime import set_cpu_threads
from tests.conftest import saved_model

CORPUS = IndexCorpus("toy-fr", limit=500, seed=3)
OPTIONS = dict(heads="decoder:1,cross", chunk_size=100, batch_size=50, dims=16)
TABLES = ("sentences", "tokens", "head_stats", "chunks")


@pytest.fixture(scope="module")
def model_file(toy_fr_bundle, tmp_path_factory) -> str:
    return str(saved_model(toy_fr_bundle[0], tmp_path_factory.mktemp("model")))


@pytest.fixture(scope="module")
def bundle(model_file):
    return open_model(model_file)


def build(bundle, model_file: str, folder: Path, cluster: DaskCluster | None = None, pca: int = 100, **extra):
    """The index of CORPUS, in one process (no ``cluster``) or by ``cluster``'s workers; torch on one thread here too."""
    set_cpu_threads(1)
    options = IndexOptions(**OPTIONS, pca_sentences=pca)
    if cluster is None:
        return IndexBuilder(bundle, model_file, CORPUS, folder, options, **extra).run()
    return DistributedIndexBuilder(bundle, model_file, CORPUS, folder, options, cluster=cluster, **extra).run()


@pytest.fixture(scope="module")
def single(bundle, model_file, tmp_path_factory) -> dict[int, Path]:
    """Indexes built in one process: pca sentences -> folder (100: fitted on the first chunk; 150: on its own)."""
    root = tmp_path_factory.mktemp("single")
    folders = {pca: root / f"pca{pca}" for pca in (100, 150)}
    for pca, folder in folders.items():
        assert build(bundle, model_file, folder, pca=pca).complete
    return folders


@pytest.fixture(scope="module")
def cluster():
    """Two local worker processes, shared by the module's tests."""
    with DaskCluster(workers=2) as running:
        yield running


def contents(folder: Path) -> dict[str, object]:
    """Every table of the database and of the Parquet export (rows in order), every joined array and the projection."""
    held: dict[str, object] = {}
    with duckdb.connect(str(folder / "index.duckdb"), read_only=True) as connection:
        for table in TABLES:
            held[table] = connection.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
    with duckdb.connect() as connection:
        for path in sorted((folder / "parquet").glob("*.parquet")):
            held[f"parquet/{path.name}"] = connection.execute(f"SELECT * FROM '{path}' ORDER BY ALL").fetchall()
    for path in sorted((folder / "arrays").glob("*.npy")):
        held[f"arrays/{path.name}"] = np.load(path)
    with np.load(folder / "projection.npz") as projection:
        held.update({f"projection/{name}": projection[name] for name in projection.files})
    return held


def assert_same_index(folder: Path, expected: Path) -> None:
    got, wanted = contents(folder), contents(expected)
    assert sorted(got) == sorted(wanted) and any(name.startswith("arrays/") for name in got)
    for name, value in wanted.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(got[name], value), name  # exactly: float16 arrays bit for bit
        else:
            assert got[name] == value, name
    assert not (folder / "chunks").exists()


def test_two_workers_build_the_index_one_process_builds(bundle, model_file, single, cluster, tmp_path):
    reports = []
    result = build(bundle, model_file, tmp_path / "index", cluster, progress=reports.append)
    assert result.complete and result.indexed == 500 and result.counts["sentences"] == 500
    assert [report.done for report in reports if report.phase == "indexing"][-1] == 500
    assert cluster.describe() == "2 local Dask worker processes (1 thread each)"
    assert_same_index(tmp_path / "index", single[100])


def test_an_interrupted_distributed_build_resumes_to_the_same_index(bundle, model_file, single, cluster, tmp_path):
    folder = tmp_path / "index"
    builders: list[DistributedIndexBuilder] = []

    def stop() -> bool:
        return builders[0].indexed >= 200  # after two chunks committed

    # an existing scheduler (the shared cluster's), connected to by its address; the PCA fitted on 150 sentences
    with DaskCluster(address=cluster.cluster.scheduler_address) as connected:
        options = IndexOptions(**OPTIONS, pca_sentences=150)
        builders.append(DistributedIndexBuilder(bundle, model_file, CORPUS, folder, options, stop=stop, cluster=connected))
        first = builders[0].run()
        assert connected.describe().startswith("2 Dask workers of the scheduler tcp://127.0.0.1:")
    assert first.cancelled and not first.complete and 200 <= first.indexed < 500
    resumed = build(bundle, model_file, folder, pca=150)  # by the single-process path
    assert resumed.complete and resumed.resumed_from == first.indexed
    assert_same_index(folder, single[150])


def dying_once(task):
    """A chunk task whose worker process dies the first time it reads chunk 2 (a marker beside the index says so)."""
    marker = Path(task.folder).parent / "died"
    if task.number == 2 and not marker.exists():
        marker.touch()
        os._exit(1)
    return index_chunk(task)


def dying_always(task):
    if task.number == 2:
        os._exit(1)
    return index_chunk(task)


def test_a_chunk_whose_worker_dies_is_read_again_by_another(bundle, model_file, single, cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(distributed_module, "index_chunk", dying_once)
    result = build(bundle, model_file, tmp_path / "index", cluster)
    assert result.complete and (tmp_path / "died").exists()
    assert_same_index(tmp_path / "index", single[100])


def test_workers_that_keep_dying_stop_the_build_in_one_line_and_it_resumes(
    bundle, model_file, single, cluster, tmp_path, monkeypatch
):
    folder = tmp_path / "index"
    monkeypatch.setattr(distributed_module, "index_chunk", dying_always)
    monkeypatch.setattr(cluster.cluster.scheduler, "allowed_failures", 0)  # the first death is KilledWorker
    with pytest.raises(CorpusIndexError) as stopped:
        build(bundle, model_file, folder, cluster)
    # the chunks read by the worker that died are lost with it too (chunk 2, or one it read before and not yet fetched)
    pattern = r"a worker died while indexing chunk \d \(tried 1 time, last on tcp://127\.0\.0\.1:\d+\); the ([1-4]00) "
    found = re.fullmatch(pattern + "sentences indexed are kept: run the same command again to resume", str(stopped.value))
    assert found, str(stopped.value)
    monkeypatch.undo()
    assert build(bundle, model_file, folder).resumed_from == int(found.group(1))
    assert_same_index(folder, single[100])


def test_a_scheduler_that_goes_away_is_one_line_and_the_build_resumes(bundle, model_file, single, tmp_path):
    """The scheduler closed once two chunks are committed: one line (not the disk's wording); the same cluster asked
    again, its scheduler gone before the workers are asked for: one line; and the build resumes to the same index."""
    from distributed import LocalCluster

    folder = tmp_path / "index"
    with LocalCluster(n_workers=1, processes=True, host="127.0.0.1", scheduler_kwargs={"dashboard": False}) as local:
        with DaskCluster(address=local.scheduler_address, timeout=5) as connected:

            def close_after_two_chunks(progress):
                if progress.done >= 200 and local.status.name == "running":
                    local.close()

            with pytest.raises(CorpusIndexError) as stopped:
                build(bundle, model_file, folder, connected, progress=close_after_two_chunks)
            with pytest.raises(CorpusIndexError) as gone:
                build(bundle, model_file, folder, connected)
    found = re.fullmatch(
        r"the Dask scheduler went away while indexing(?: chunk \d)?; the ([2-4]00) sentences indexed are kept: run the "
        r"same command again to resume",
        str(stopped.value),
    )
    assert found, str(stopped.value)
    assert str(gone.value).startswith(f"the Dask scheduler {connected.address} went away before indexing began; the ")
    assert build(bundle, model_file, folder).complete
    assert_same_index(folder, single[100])


@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(address="tcp://127.0.0.1:1"),
            "tcp://127.0.0.1:1: no Dask scheduler answered within 1 s; start one (dask scheduler) or use --workers N",
        ),
        (
            dict(address="10.9.9.9:8786"),
            "10.9.9.9:8786: not a Dask scheduler address; give one as tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)",
        ),
        (
            dict(address="tcp://host"),
            "tcp://host: not a Dask scheduler address; give one as tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786)",
        ),
        (dict(workers=0), "--workers must be at least 1, not 0"),
    ],
)
def test_bad_clusters_are_one_line(options, message):
    with pytest.raises(CorpusIndexError) as refused:
        with DaskCluster(timeout=1, **options):
            pass
    assert str(refused.value) == message


def test_a_scheduler_without_workers_is_one_line():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=True, host="127.0.0.1", scheduler_kwargs={"dashboard": False}) as empty:
        address = empty.scheduler_address
        with pytest.raises(CorpusIndexError) as refused, DaskCluster(address=address, timeout=0.5):
            pass
    assert str(refused.value) == (
        f"{address}: the Dask scheduler has no workers; start some (dask worker {address}) or use --workers N"
    )


def test_a_worker_with_another_model_refuses_to_index(model_file, monkeypatch):
    monkeypatch.setattr(distributed_module, "WORKER_MODELS", {})
    with pytest.raises(CorpusIndexError, match=r"this Dask worker's model is another one than the index's \(digest "):
        distributed_module.worker_bundle(model_file, "0" * 64)


def test_without_dask_it_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now fails as when it is not installed
    with pytest.raises(CorpusIndexError, match=r"needs dask\[distributed\]: pip install 'transformer-explorer\[cluster\]'$"):
        DaskCluster(workers=2)


def command(tmp_path: Path, monkeypatch, capsys, *arguments: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    set_cpu_threads(1)
    code = main(list(arguments))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


INDEX = (
    "--corpus",
    "toy-fr",
    "--limit",
    "40",
    "--seed",
    "3",
    "--chunk-size",
    "10",
    "--batch-size",
    "10",
    "--heads",
    "cross",
    "--quiet",
)


def test_the_command_indexes_with_local_workers_and_refuses_a_bad_address(model_file, tmp_path, monkeypatch, capsys):
    code, out, err = command(
        tmp_path, monkeypatch, capsys, "index", "--model", model_file, "--out", "idx", *INDEX, "--workers", "2"
    )
    assert code == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0] == "indexing with 2 local Dask worker processes (1 thread each)"
    assert "idx: 40 sentences indexed" in lines[1] and lines[-1].startswith("40 sentences, ")
    code, out, err = command(tmp_path, monkeypatch, capsys, "index", "--model", model_file, "--out", "one", *INDEX)
    assert code == 0 and contents(tmp_path / "idx").keys() == contents(tmp_path / "one").keys()
    assert_same_index(tmp_path / "idx", tmp_path / "one")
    code, out, err = command(
        tmp_path, monkeypatch, capsys, "index", "--model", model_file, "--out", "idx2", *INDEX, "--cluster", "tcp://127.0.0.1:1"
    )
    assert code == 1 and out == ""
    assert err == (
        "transformer-explorer index: error: tcp://127.0.0.1:1: no Dask scheduler answered within 10 s; start one "
        "(dask scheduler) or use --workers N\n"
    )
    code, out, err = command(
        tmp_path, monkeypatch, capsys, "index", "--model", model_file, "--out", "idx2", *INDEX, "--workers", "0"
    )
    assert code == 1 and err == "transformer-explorer index: error: --workers must be at least 1, not 0\n"
    code, out, err = command(
        tmp_path,
        monkeypatch,
        capsys,
        "index",
        "--model",
        model_file,
        "--out",
        "idx2",
        *INDEX,
        "--workers",
        "2",
        "--cluster",
        "tcp://127.0.0.1:1",
    )
    assert code == 2 and "not allowed with argument" in err
