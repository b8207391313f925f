"""``transformer-explorer heads``: what each head of a model is worth, and how many can go.

    transformer-explorer heads --model default --corpus toy-fr --n 200 --importance heads.csv --prune-curve prune.csv
    transformer-explorer heads --model default --corpus toy-fr --aer-table aer.csv

Head importance (Michel et al., NeurIPS 2019; model/attribution/importance.py) over N fresh pairs of a built-in
translation corpus (at most its default size), or the first N pairs of the test split of a corpus file (more
than either gives is refused, naming how many there are); then, with ``--prune-curve``, exact match and BLEU of greedy
translations as heads are knocked out from the least important up. ``--aer-table``: the AER of every measure's
reading of cross-attention (each head, each layer) against gold alignments, on the pairs every AER of the app is
measured on (``--aer-pairs`` of the held-out test split of the model's built-in corpus, drawn with ``--aer-seed``:
200 and 0 by default; model/inspection/alignment.py), with the best head and what it was measured on printed
(model/attribution/alignment_table.py); a model not trained on a built-in translation corpus, whose gold
alignments these are, is refused. Every table is CSV, written atomically.
Each stage shows a progress bar on stderr (not with ``--quiet``).
"""

from __future__ import annotations

import argparse
import csv

from model.attribution.alignment_table import alignment_table
from model.attribution.importance import (
    TooManySentences,
    check_importance,
    head_importance,
    heads_before_drop,
    measured_pairs,
    pruning_curve,
)
from model.attribution.measures import NAMES
from model.cli.options import CommandError, aer_arguments, check_aer_pairs, corpus_arguments, corpus_spec, stage_progress
from model.data.corpora import Pair
from model.family import Bundle
from model.files import atomic_output, check_output
from model.inspection.alignment import aer_corpus, aer_pairs
from model.io.models import model_source, open_model

DEFAULT_SENTENCES = 200


def add_heads_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="the app's Transformer: a file or a shipped model's name (default)")
    corpus_arguments(parser, translation_only=True)
    parser.add_argument(
        "--n",
        type=int,
        help=f"sentences of --importance and --prune-curve: fresh pairs of a built-in corpus (at most its default size), "
        f"or the first N of a file's test split (default {DEFAULT_SENTENCES}, or all the split has if fewer); "
        "--aer-table's are --aer-pairs",
    )
    parser.add_argument("--seed", type=int, default=12345, help="generation seed of the fresh pairs")
    parser.add_argument("--importance", metavar="OUT.csv", help="every head's importance (raw, per-layer normalised, rank)")
    parser.add_argument(
        "--prune-curve",
        metavar="OUT.csv",
        help="the model's scores as heads are removed, least important first: exact match and BLEU (a decoder-only "
        "model's next-piece accuracy and perplexity, a classifier's exact match and macro-F1)",
    )
    parser.add_argument("--every", type=int, default=1, help="prune curve: score after every N removals (default 1)")
    parser.add_argument("--aer-table", metavar="OUT.csv", help="AER of every measure and head against the gold alignments")
    parser.add_argument("--measures", default="", help="the measures of --aer-table, comma-separated (default: all)")
    aer_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _write_csv(path: str, rows: list[dict]) -> None:
    with atomic_output(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _pairs(args, bundle: Bundle) -> list[Pair]:
    """The pairs to measure: --n of them (refused, naming how many there are, when the corpus gives fewer)."""
    spec = corpus_spec(args)
    tasks = bundle.family.tasks  # what the family's corpora are for: a translation model's translations, a tagger's tags
    if spec.task not in tasks:
        raise CommandError(
            f"heads measures this model on {' or '.join(tasks)} corpora; {spec.describe()} is a built-in {spec.task} "
            f"corpus (give a built-in {tasks[0]} corpus or a file of pairs)"
        )
    try:
        return measured_pairs(spec, DEFAULT_SENTENCES if args.n is None else args.n, args.seed, exact=args.n is not None)
    except TooManySentences as error:
        raise CommandError(f"--n {args.n}: {error}; give --n {error.available} or fewer") from None


def run_heads(args) -> int:
    if not args.importance and not args.prune_curve and not args.aer_table:
        raise CommandError("nothing to write: give --importance OUT.csv, --prune-curve OUT.csv, --aer-table OUT.csv")
    if (args.n is not None and args.n < 1) or args.every < 1:
        raise CommandError("--n and --every must be at least 1")
    check_aer_pairs(args)
    if args.n is not None and not args.importance and not args.prune_curve:
        raise CommandError(
            "--n counts the sentences of --importance and --prune-curve; --aer-table is measured on --aer-pairs "
            "held-out pairs drawn with --aer-seed"
        )
    protected = tuple(path for path in (model_source(args.model), args.corpus, args.target) if path)
    outputs = [path for path in (args.importance, args.prune_curve, args.aer_table) if path]
    for path in outputs:
        if not path.lower().endswith(".csv"):
            raise CommandError(f"{path}: the tables are written as .csv")
        check_output(path, protected)
    if len(set(outputs)) < len(outputs):
        raise CommandError("two tables are given the same file")
    measures = _measures(args.measures)
    bundle = open_model(args.model)
    check_importance(bundle.model)  # the table's answer (``capabilities``), in its words
    pairs = _pairs(args, bundle)
    with stage_progress(args.quiet) as progress:
        _measure(args, bundle, pairs, measures, progress)
    return 0


def _measure(args, bundle: Bundle, pairs: list[Pair], measures: tuple[str, ...], progress) -> None:
    """The stages asked for, each table written as soon as it is ready."""
    if args.aer_table:
        _write_aer_table(args, bundle, measures, progress("AER table", "pair"))
        if not args.importance and not args.prune_curve:
            return
    importance = head_importance(bundle, pairs, progress("importance", "sentence"))
    if args.importance:
        _write_csv(args.importance, importance.rows())
        print(
            f"wrote the importance of {len(importance.rows())} heads over {importance.n_sentences} sentences to {args.importance}"
        )
    least = ", ".join(f"{head.describe()} {value:.3f}" for head, value in importance.ranking()[:5])
    print(f"least important (normalised per layer): {least}")
    if args.prune_curve:
        n_heads = len(importance.ranking())
        counts = sorted(set(range(0, n_heads + 1, args.every)) | {n_heads})
        points = pruning_curve(bundle, importance, pairs, counts, progress("pruning curve", "point"))
        _write_csv(args.prune_curve, [point.row() for point in points])
        kept = heads_before_drop(points)
        print(
            f"wrote the pruning curve to {args.prune_curve}: {kept} of {n_heads} heads can go before "
            f"{points[0].scoring.first} drops by 0.05 (from {points[0].first:.3f})"
        )


def _measures(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip()) or tuple(NAMES)
    unknown = [name for name in names if name not in NAMES]
    if unknown:
        raise CommandError(f"--measures: {', '.join(unknown)} unknown; the measures are {', '.join(NAMES)}")
    return names


def _write_aer_table(args, bundle: Bundle, measures: tuple[str, ...], progress) -> None:
    """The table over the app's AER pairs (--aer-pairs, --aer-seed), then the best head and each measure's best."""
    corpus = aer_corpus(bundle)
    if corpus is None:
        raise CommandError(
            "gold word alignments come with the built-in translation corpora (toy-fr, copy, reverse, sort), and "
            f"{bundle.describe()} was not trained on one"
        )
    pairs = aer_pairs(corpus, args.aer_pairs, args.aer_seed)
    table = alignment_table(bundle, pairs, measures, progress, corpus=corpus.name, seed=args.aer_seed)
    if not table.n_pairs:
        raise CommandError("no pair's words matched the model's tokens; nothing to score")
    table.write_csv(args.aer_table)
    print(f"wrote the AER of {len(table.measures)} measures on {table.where()} to {args.aer_table}")
    print(f"best cross-attention head: {table.best_head()}")
    for line in table.summary():
        print(line)
