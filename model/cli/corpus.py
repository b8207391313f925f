"""``transformer-explorer index``, ``search`` and ``qk``: a corpus index (model/corpus/), built, searched and mapped.

    transformer-explorer index --model default --corpus toy-fr --limit 20000 --out toy-fr-index
    transformer-explorer search toy-fr-index --token chat --layer decoder:3 --k 10
    transformer-explorer search toy-fr-index --text "the cat sees the dog" --token cat --layer encoder:3
    transformer-explorer search toy-fr-index --head decoder:1:2 --where "previous >= 0.5"
    transformer-explorer qk toy-fr-index --kind decoder --layer 1 --method pca --out map.png

    transformer-explorer index --model default --corpus toy-fr --out toy-fr-index --workers 2
    transformer-explorer index --model default --corpus toy-fr --out toy-fr-index --cluster tcp://10.0.0.5:8786

``index`` shows its progress on stderr; Ctrl-C keeps the chunks finished, and the same command resumes after them.
``--workers N`` (a local cluster) or ``--cluster ADDRESS`` (a running Dask scheduler) reads the chunks in Dask worker
processes (model/corpus/distributed.py): the same index as one process builds.
Searching with a sentence typed (``--text``) runs the model the index was built with (its manifest names it; another
model is refused by its digest). Results print as a table; ``--csv`` writes them too.
"""

from __future__ import annotations

import argparse
import csv
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from tqdm import tqdm

from model.cli.options import CommandError, load_bundle
from model.corpus.build import IndexBuilder, IndexOptions, IndexProgress
from model.corpus.checks import check_outside
from model.corpus.distributed import DaskCluster, DistributedIndexBuilder
from model.corpus.index import CorpusIndex
from model.corpus.layout import Layer, parse_head, parse_layers
from model.corpus.predicates import FIELDS, parse_predicate
from model.corpus.qk import DEFAULT_SENTENCES, METHODS, head_map, layer_maps, write_map_csv
from model.corpus.search import METRICS, HeadQueryResult, TokenMatch, head_query, index_token, nearest_tokens, typed_token
from model.corpus.sources import DEFAULT_BUILTIN_LIMIT, IndexCorpus
from model.data.token_labels import display_labels
from model.figures.attention import FigureOptions
from model.figures.layout import parse_width
from model.figures.qk_map import COLOURINGS, save_qk_maps
from model.files import atomic_output
from model.io.models import model_source
from model.kinds import AttentionKind, KindError


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a model file, a shipped model's name (default) or a Hugging Face folder")
    parser.add_argument(
        "--corpus",
        required=True,
        metavar="{toy-fr,copy,reverse,...,PATH}",
        help="a built-in corpus, a text file (one sentence a line), a TSV file (source TAB reference) or the source "
        "file of a Moses pair",
    )
    parser.add_argument("--target", metavar="PATH", help="the target file of a Moses pair (with --corpus SOURCE)")
    parser.add_argument("--out", required=True, metavar="DIR", help="the index's folder (new or empty; or the index to resume)")
    parser.add_argument(
        "--layers", default="all", help="residual layers kept: all, or e.g. encoder:3,decoder:3 (3: both sides; 0: embeddings)"
    )
    parser.add_argument(
        "--heads", default="all", help="heads whose queries and keys are kept: all, none, or e.g. decoder,cross:3 or cross:3:2"
    )
    parser.add_argument(
        "--limit",
        type=int,
        help=f"the first N distinct sentences (default: a built-in corpus's {DEFAULT_BUILTIN_LIMIT:,}, a file's all)",
    )
    parser.add_argument("--seed", type=int, default=0, help="a built-in corpus's generation seed (default 0)")
    parser.add_argument("--dims", type=int, default=64, help="PCA dimensions of the residual vectors (default 64)")
    parser.add_argument("--chunk-size", type=int, default=1000, help="sentences committed together (default 1000)")
    parser.add_argument("--batch-size", type=int, default=128, help="sentences decoded together (default 128)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="index with N local worker processes (a Dask LocalCluster; needs the cluster extra)",
    )
    cluster.add_argument(
        "--cluster", metavar="ADDRESS", help="index with the workers of a running Dask scheduler (tcp://HOST:8786)"
    )


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as Ctrl-C is, so that a terminated run closes its database and removes its partial files."""


@contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """While indexing, SIGTERM stops the run as Ctrl-C does (the finished chunks kept, nothing half-written left)."""

    def stop(_signal: int, _frame: object) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: the caller handles its own signals
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_index(args) -> int:
    corpus = IndexCorpus(args.corpus, args.target, args.limit, args.seed)
    options = IndexOptions(args.layers, args.heads, args.dims, args.chunk_size, args.batch_size)
    options.validate()
    out = Path(args.out)
    for source in (model_source(args.model), Path(args.corpus), Path(args.target) if args.target else None):
        if source is not None and source.exists() and out.resolve() == source.resolve():
            raise CommandError(f"{out}: is an input of this command; choose another folder")
    workers, address = getattr(args, "workers", None), getattr(args, "cluster", None)
    cluster = None if workers is None and address is None else DaskCluster(workers, address)  # checked before the model loads
    bundle = load_bundle(args.model)
    if cluster is None:
        builder = IndexBuilder(bundle, args.model, corpus, out, options)  # the corpus read and the folder checked first
    else:
        builder = DistributedIndexBuilder(bundle, args.model, corpus, out, options, cluster=cluster)
    # shown once it has run a second: a run refused at once (a cluster that does not answer) prints its one line alone
    bar = tqdm(total=0, desc="indexing", unit=" sentences", file=sys.stderr, disable=args.quiet, delay=1)

    def progress(report: IndexProgress) -> None:
        bar.set_description(report.phase)
        bar.total = report.total
        bar.update(report.done - bar.n)

    builder.progress = progress
    try:
        with terminated_as_interrupt(), cluster or nullcontext():
            if cluster is not None:
                print(f"indexing with {cluster.describe()}", flush=True)
            result = builder.run()
    except KeyboardInterrupt as stopped:
        bar.close()
        how = "terminated" if isinstance(stopped, Terminated) else "interrupted"
        print(
            f"transformer-explorer index: {how}; the {builder.indexed:,} sentences indexed are kept in {out}: run "
            "the same command again to resume",
            file=sys.stderr,
        )
        return 143 if isinstance(stopped, Terminated) else 130
    finally:
        bar.close()
    print(result.describe())
    if result.complete and result.counts:
        counts = result.counts
        sides = [(counts["encoder_tokens"], "source"), (counts["decoder_tokens"], "decoder-position")]
        print(f"{counts['sentences']:,} sentences, " + " and ".join(f"{n:,} {what} tokens" for n, what in sides if n))
    return 0


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("index", metavar="DIR", help="a corpus index (transformer-explorer index --out DIR)")
    parser.add_argument("--token", help="the token to search for (a piece, with or without its word-start mark ▁)")
    parser.add_argument("--text", help="take the token from this sentence, read by the index's model")
    parser.add_argument("--sentence", type=int, help="take the token from this sentence of the index (its id)")
    parser.add_argument("--position", type=int, help="the token's position in its sentence (from 0)")
    parser.add_argument("--layer", help="SIDE:LAYER whose vectors are compared (default: the index's last encoder layer)")
    parser.add_argument("--k", type=int, default=10, help="nearest tokens listed (default 10)")
    parser.add_argument("--metric", choices=METRICS, default="cosine", help="distance (default cosine)")
    parser.add_argument("--model", help="with --text: the model the index was built with (default: the one its manifest names)")
    parser.add_argument("--head", help="KIND:LAYER:HEAD, with --where: the sentences where this head behaves so")
    parser.add_argument("--where", help='a head query: e.g. "previous >= 0.5", "eos >= 0.5 and entropy < 0.3", "role ~ sink"')
    parser.add_argument("--sort", help="sort a head query's sentences by this name (default: the first condition's)")
    parser.add_argument("--ascending", action="store_true", help="smallest first")
    parser.add_argument("--limit", type=int, default=20, help="sentences of a head query listed (default 20)")
    parser.add_argument("--csv", metavar="OUT.csv", help="also write the results as CSV")


def _search_layer(index: CorpusIndex, text: str | None) -> Layer:
    manifest = index.manifest
    if text is None:
        held = manifest.layer_list
        encoder = [layer for layer in held if layer.side == "encoder"]
        return (encoder or list(held))[-1]
    side = manifest.sides()[0]  # a bare layer number is the encoder's (a decoder-only model's: its decoder's)
    layers = parse_layers(text if ":" in text else f"{side}:{text}", manifest.n_encoder_layers, manifest.n_decoder_layers)
    if len(layers) != 1:
        raise CommandError(f"--layer {text}: give one layer, as SIDE:LAYER (e.g. encoder:3)")
    return index.check_layer(layers[0])


def highlighted(pieces: list[str], position: int) -> str:
    """The pieces as text, the one at ``position`` in [brackets]."""
    labels = display_labels(pieces)
    return " ".join(f"[{label}]" if place == position else label for place, label in enumerate(labels))


def _write_rows(path: str, columns: list[str], rows: list[tuple]) -> None:
    with atomic_output(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)


def run_search(args) -> int:
    if args.head is None and args.where is None and args.token is None and args.sentence is None:
        raise CommandError("nothing to search for: give --token (nearest tokens) or --head with --where (a head query)")
    if args.csv:
        check_outside(args.csv, Path(args.index), (args.index,))  # never over one of the index's own files
    with CorpusIndex(args.index) as index:
        if args.head is not None or args.where is not None:
            return _head_search(args, index)
        return _token_search(args, index)


def _token_search(args, index: CorpusIndex) -> int:
    if args.k < 1:
        raise CommandError(f"--k must be at least 1, got {args.k}")
    layer = _search_layer(index, args.layer)
    if args.text is not None:
        bundle = load_bundle(args.model or index.manifest.model)
        query = typed_token(index, bundle, args.text, layer, args.token, args.position)
    else:
        query = index_token(index, layer, args.token, args.sentence, args.position)
    matches = nearest_tokens(index, query, args.k, args.metric)
    print(f"nearest to {query.description} at {layer} ({args.metric}):")
    for rank, match in enumerate(matches, start=1):
        where = f"sentence {match.sentence_id:>6}  pos {match.position:>3}"
        print(f"{rank:3d}  {match.distance:.4f}  {where}  {highlighted(match.tokens, match.position)}")
    if args.csv:
        _write_rows(
            args.csv, ["rank", "distance", "sentence_id", "position", "token", "side", "source", "output"], _match_rows(matches)
        )
        print(f"wrote {len(matches)} rows to {args.csv}")
    return 0


def _match_rows(matches: list[TokenMatch]) -> list[tuple]:
    return [
        (rank, f"{match.distance:.6g}", match.sentence_id, match.position, match.token, match.side, match.source, match.output)
        for rank, match in enumerate(matches, start=1)
    ]


def _head_search(args, index: CorpusIndex) -> int:
    if args.head is None or args.where is None:
        raise CommandError(
            'a head query needs --head KIND:LAYER:HEAD and --where, e.g. --head decoder:1:2 --where "previous >= 0.5"'
        )
    if args.limit < 1:
        raise CommandError(f"--limit must be at least 1, got {args.limit}")
    result = head_query(index, parse_head(args.head), args.where, args.sort, False if args.ascending else None, args.limit)
    _print_head_result(result)
    if args.csv:
        _write_rows(args.csv, result.columns, result.rows)
        print(f"wrote {len(result.rows)} rows to {args.csv}")
    return 0


def _print_head_result(result: HeadQueryResult) -> None:
    head = result.head
    print(f"{result.total:,} sentences where {head.kind.value} L{head.layer + 1} H{head.head + 1} has {result.predicate}:")
    asked = [condition.column for condition in parse_predicate(result.predicate) if condition.name != "role"]
    shown = list(dict.fromkeys([*asked, "normalised_entropy", "max_weight"]))  # the conditions' columns first
    names = {column: name for name, (column, _) in reversed(FIELDS.items())}  # a column's first name in the language
    print("    id  " + "  ".join(f"{names[column]:>8}" for column in shown) + "  role: sentence")
    for row in result.rows:
        values = dict(zip(result.columns, row))
        numbers = "  ".join(f"{values[column]:8.3f}" for column in shown)
        print(f"{values['sentence_id']:>6}  {numbers}  {values['role']}: {values['source']}")
    if result.total > len(result.rows):
        print(f"... and {result.total - len(result.rows):,} more (--limit)")


def add_qk_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("index", metavar="DIR", help="a corpus index (transformer-explorer index --out DIR)")
    parser.add_argument("--kind", required=True, choices=[kind.value for kind in AttentionKind], help="the attention")
    parser.add_argument("--layer", type=int, required=True, help="the layer (from 1)")
    parser.add_argument("--head", type=int, help="the head (from 1); without it, every head of the layer side by side")
    parser.add_argument("--method", choices=METHODS, default="pca", help="projection (default pca; umap needs umap-learn)")
    parser.add_argument("--colour", choices=COLOURINGS, default="position", help="colour by (default position)")
    parser.add_argument("--sentences", type=int, default=DEFAULT_SENTENCES, help=f"sentences mapped (default {DEFAULT_SENTENCES})")
    parser.add_argument("--seed", type=int, default=0, help="draws the sentences, seeds t-SNE and UMAP (default 0)")
    parser.add_argument("--raw", action="store_true", help="map the raw vectors (no key translation and scaling)")
    parser.add_argument("--width", default="6.9", help="figure width in inches, or column / page (default 6.9)")
    parser.add_argument("--dpi", type=float, default=300, help="a PNG's resolution (default 300)")
    parser.add_argument("--out", required=True, metavar="MAP.png|svg|pdf|csv", help="the figure, or the points as CSV")


def run_qk(args) -> int:
    suffix = Path(args.out).suffix.lower()
    if suffix not in (".png", ".svg", ".pdf", ".csv"):
        raise CommandError(f"{args.out}: write the map as .png, .svg, .pdf or .csv")
    check_outside(args.out, Path(args.index), (args.index,))  # never over one of the index's own files
    options = FigureOptions(width=parse_width(args.width))
    try:
        kind = AttentionKind.parse(args.kind)
    except KindError as error:
        raise CommandError(str(error)) from None
    with CorpusIndex(args.index) as index:
        if args.head is not None:
            head = index.check_head(parse_head(f"{kind.value}:{args.layer}:{args.head}"))
            panels = [head_map(index, head, args.method, args.sentences, args.seed, not args.raw)]
        else:
            panels = layer_maps(index, kind, args.layer - 1, args.method, args.sentences, args.seed, not args.raw)
        corpus = Path(str(index.manifest.corpus.get("name", ""))).name
        caption = (
            f"Queries (●) and keys (▲) of {kind.label}, layer {args.layer}, from {min(args.sentences, index.n_sentences)} "
            f"sentences of {corpus} read by {index.manifest.model}; {args.method.upper()}"
            + ("" if args.raw else ", keys moved to the queries' mean and both scaled alike (attention unchanged)")
        )
    if suffix == ".csv":
        write_map_csv(panels, args.out, args.method)
    else:
        save_qk_maps(panels, args.out, args.colour, options, caption, args.dpi)
    for panel in panels:
        print(f"{panel.title}: {len(panel.xy)} points; " + "; ".join(panel.notes))
    print(f"wrote {args.out}")
    return 0
