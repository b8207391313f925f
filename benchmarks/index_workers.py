"""The corpus index built in one process and by N Dask worker processes (model/corpus/distributed.py): seconds for each,
the speed-up, a check that both indexes are equal (every table, Parquet file and array, bit for bit), and the costs the
design note (docs/at-scale.md) rests on: milliseconds and core-milliseconds per sentence, bytes on disk per sentence.

    python benchmarks/index_workers.py [--model default] [--sentences 2000] [--workers N] [--chunk-size 250]

One process runs as the command line does (torch on the cores other programs leave free); each worker runs torch on one
thread. The cluster's start (about a second) and each worker's model load are counted in its time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from model.corpus.build import IndexBuilder, IndexOptions
from model.corpus.distributed import DaskCluster, DistributedIndexBuilder
from model.corpus.sources import IndexCorpus
from model.io.models import open_model
from model.runtime import follow_cores_in_this_thread

TABLES = ("sentences", "tokens", "head_stats", "chunks")


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def differences(one: Path, other: Path) -> list[str]:
    """The tables, Parquet files and arrays that differ between two indexes (none when they are equal)."""
    differing = []
    for database in (one, other):
        assert (database / "manifest.json").exists()
    with (
        duckdb.connect(str(one / "index.duckdb"), read_only=True) as a,
        duckdb.connect(str(other / "index.duckdb"), read_only=True) as b,
    ):
        for table in TABLES:
            query = f"SELECT * FROM {table} ORDER BY ALL"
            if a.execute(query).fetchall() != b.execute(query).fetchall():
                differing.append(table)
    with duckdb.connect() as connection:
        for path in sorted((one / "parquet").glob("*.parquet")):
            rows = [
                connection.execute(f"SELECT * FROM '{folder / 'parquet' / path.name}' ORDER BY ALL").fetchall()
                for folder in (one, other)
            ]
            if rows[0] != rows[1]:
                differing.append(f"parquet/{path.name}")
    for name in ["projection.npz"] + [f"arrays/{path.name}" for path in sorted((one / "arrays").glob("*.npy"))]:
        if name.endswith(".npz"):
            with np.load(one / name) as a_file, np.load(other / name) as b_file:
                equal = a_file.files == b_file.files and all(np.array_equal(a_file[key], b_file[key]) for key in a_file.files)
        else:
            equal = np.array_equal(np.load(one / name), np.load(other / name))
        if not equal:
            differing.append(name)
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--chunk-size", type=int, default=250, help="sentences a chunk (default 250: 8 chunks of 2,000)")
    parser.add_argument("--pca-sentences", type=int, default=250)
    args = parser.parse_args()
    follow_cores_in_this_thread()  # as the command line does
    root = Path(tempfile.mkdtemp(prefix="index-workers-"))
    corpus = IndexCorpus("toy-fr", limit=args.sentences)
    options = dict(chunk_size=args.chunk_size, pca_sentences=args.pca_sentences)
    print(f"{args.model}, toy-fr, {args.sentences:,} sentences in chunks of {args.chunk_size}; {os.cpu_count()} cores")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    bundle = open_model(args.model)
    try:
        started = time.perf_counter()
        IndexBuilder(bundle, args.model, corpus, root / "one", IndexOptions(**options)).run()
        one = time.perf_counter() - started
        started = time.perf_counter()
        with DaskCluster(workers=args.workers) as cluster:
            builder = DistributedIndexBuilder(bundle, args.model, corpus, root / "many", IndexOptions(**options), cluster=cluster)
            builder.run()
        many = time.perf_counter() - started
        differing = differences(root / "one", root / "many")
        size = folder_bytes(root / "one")
        n = args.sentences
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(f"one process:          {one:7.1f} s   {1000 * one / n:6.2f} ms/sentence")
        print(f"{args.workers} Dask workers:       {many:7.1f} s   {1000 * many / n:6.2f} ms/sentence (cluster start included)")
        print(f"speed-up:             {one / many:7.2f}x")
        per_core = n / (many * args.workers)  # sentences a second per worker core
        print(f"core cost (workers):  {1000 / per_core:7.2f} core-ms/sentence = {per_core:.0f} sentences/s per core")
        print(f"index on disk:        {size / n:7.0f} bytes/sentence ({size / 1e6:.1f} MB)")
        print(
            "indexes equal:        "
            + ("yes (tables, Parquet, arrays, projection)" if not differing else "NO: " + ", ".join(differing))
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
