"""A corpus index of 20,000 toy-fr sentences with the default model: indexing time (target at most 3 minutes on 2
cores), disk (at most 1.5 GB) and peak memory (under 2 GB), then a nearest-token search (at most 200 ms) and a head
query (at most 500 ms) on it. The machine's load is printed before and after: other programs' work slows every
figure here.

    python benchmarks/corpus_index.py [--sentences 20000] [--out FOLDER] [--keep]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from common import best_seconds, print_table

from model.corpus.build import IndexBuilder, IndexOptions
from model.corpus.index import CorpusIndex
from model.corpus.layout import Layer, parse_head
from model.corpus.search import head_query, index_token, nearest_tokens
from model.corpus.sources import IndexCorpus
from model.io.models import open_model
from model.runtime import follow_cores_in_this_thread

TARGETS = {"indexing (s)": 180.0, "disk (GB)": 1.5, "peak memory (GB)": 2.0, "search (ms)": 200.0, "head query (ms)": 500.0}


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def peak_memory_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--model", default="default")
    parser.add_argument("--out", help="the index's folder (default: a temporary one, removed afterwards)")
    parser.add_argument("--keep", action="store_true", help="keep the index")
    args = parser.parse_args()
    follow_cores_in_this_thread()  # as the command line does: the cores other programs leave free
    folder = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="corpus-index-")) / "index"
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    bundle = open_model(args.model)
    started = time.perf_counter()
    result = IndexBuilder(bundle, args.model, IndexCorpus("toy-fr", limit=args.sentences), folder, IndexOptions()).run()
    indexing = time.perf_counter() - started
    load_after = os.getloadavg()[0]
    figures = {"indexing (s)": indexing, "disk (GB)": folder_bytes(folder) / 1e9, "peak memory (GB)": peak_memory_gb()}
    with CorpusIndex(folder) as index:
        query = index_token(index, Layer("encoder", 3), token="cat")
        figures["search (ms)"] = 1000 * best_seconds(lambda: nearest_tokens(index, query, 10), 5)
        head = parse_head("decoder:1:2")
        figures["head query (ms)"] = 1000 * best_seconds(lambda: head_query(index, head, "previous >= 0.5 and entropy < 0.3"), 5)
        found = head_query(index, head, "previous >= 0.5 and entropy < 0.3").total
        counts = index.manifest.counts
    print(f"{result.describe()}; {counts['encoder_tokens']:,} source and {counts['decoder_tokens']:,} target tokens")
    print(f"head query decoder:1:2 previous >= 0.5 and entropy < 0.3: {found:,} sentences")
    print(f"load average after indexing: {load_after:.2f}")
    rows = [[name, f"{value:.3f}", f"{TARGETS[name]:g}", f"{value / TARGETS[name]:.2f}"] for name, value in figures.items()]
    print_table(["figure", "measured", "target", "measured / target"], rows)
    if not args.keep and not args.out:
        shutil.rmtree(folder.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
