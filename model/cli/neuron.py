"""``transformer-explorer neuron``: one head's query row inside (the neuron view), as a figure or its numbers.

    transformer-explorer neuron --model default --text "the black cat sees the small dog" --kind cross --layer 3 \\
        --head 2 --query 4 --out neuron.pdf
    transformer-explorer neuron --model reverse --text "a b c d e f g" --kind decoder --layer 1 --head 3 --out row.csv \\
        --shares heads.csv

The sentence is decoded greedily (as the Explore tab decodes it), or with ``--target`` that target is given to the
decoder. ``--out`` is a figure (.png, .svg, .pdf: query and key vectors, their products, the scores, the softmax row and
the four positional terms) or a CSV (a row per key); ``--shares`` writes every head's four term shares and class. It
prints the head's shares and class and the keys the row weighs most. Layers, heads and queries count from 1.
"""

from __future__ import annotations

import argparse

import numpy as np

from model.cli.export import add_figure_arguments, caption_name, figure_options
from model.cli.interventions import FIGURES, out_suffix
from model.cli.options import CommandError
from model.cli.recorded import neuron_record
from model.data.token_labels import display_labels
from model.family import Bundle
from model.figures.neuron import neuron_figure
from model.figures.saving import save_figure
from model.files import check_output
from model.io.models import model_source, open_model
from model.kinds import AttentionKind
from model.neuron.tables import read_sentence, row_rows, share_rows, write_rows
from model.neuron.terms import describe_terms, neuron_row, share_text
from model.neuron.vectors import check_model
from model.provenance.embed import write_sidecar


def add_neuron_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        help="the app's own Transformer or encoder-only model (a file or a name), or a Hugging Face encoder-decoder's folder",
    )
    parser.add_argument("--text", required=True, help="the source sentence")
    parser.add_argument("--target", help="the target given to the decoder (default: the greedy translation)")
    parser.add_argument(
        "--kind", help="encoder, decoder or cross (default: cross-attention, or the only kind a model without it has)"
    )
    parser.add_argument("--layer", type=int, default=1, help="layer, from 1 (default 1)")
    parser.add_argument("--head", type=int, default=1, help="head, from 1 (default 1)")
    parser.add_argument("--query", type=int, help="query position, from 1 (default: the last)")
    parser.add_argument("--out", required=True, help="a figure FILE.png|svg|pdf, or FILE.csv (a row per key)")
    parser.add_argument("--shares", metavar="OUT.csv", help="every head's term shares and class, as CSV")
    add_figure_arguments(parser)


def _checked(args) -> tuple[str, AttentionKind | None]:
    """The --out suffix and the kind, every number checked before the model loads."""
    suffix = out_suffix(args.out, (".csv", *FIGURES))
    kind = AttentionKind.parse(args.kind) if args.kind is not None else None
    for name in ("layer", "head", "query"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CommandError(f"--{name} counts from 1, not {value}")
    if not args.text.strip():
        raise CommandError("nothing to read: the sentence is empty")
    if args.shares is not None and not args.shares.lower().endswith(".csv"):
        raise CommandError(f"--shares is written as .csv, not {args.shares!r}")
    if args.shares is not None and args.shares == args.out:
        raise CommandError("--out and --shares are the same file")
    return suffix, kind


def run_neuron(args) -> int:
    suffix, kind = _checked(args)
    options = figure_options(args)
    model_path = model_source(args.model)
    protected = (model_path,) if model_path else ()
    for path in (args.out, args.shares):
        if path:
            check_output(path, protected)
    bundle = open_model(args.model)
    check_model(bundle.model)
    _check_target_length(bundle, args.target)
    trace, vectors = read_sentence(bundle, args.text, args.target)
    if kind is None:  # cross-attention where the model has it, else its one kind (an encoder's, a decoder's)
        kind = AttentionKind.CROSS if AttentionKind.CROSS in vectors.kinds else next(iter(vectors.kinds))
    labels = trace.axis_labels(kind) if trace.has(kind) else None
    n_queries = len(labels[0]) if labels else 0
    query = (args.query if args.query is not None else max(n_queries, 1)) - 1
    row = neuron_row(vectors, kind, args.layer - 1, args.head - 1, query, labels)
    record = neuron_record(bundle, args.model, args.text, str(kind), args.layer, args.head, query + 1, args.target,
                           options, args.dpi)  # fmt: skip
    if suffix == ".csv":
        write_rows(row_rows(row), args.out)
        write_sidecar(args.out, record)
    else:
        options.model_name = caption_name(args)
        save_figure(neuron_figure(row, options, trace.source_text, trace.target_tokens), args.out, args.dpi, record)
    if args.shares:
        write_rows(share_rows(vectors), args.shares)
        write_sidecar(args.shares, record)
    _report(row)
    for path in (args.out, args.shares):
        if path:
            print(f"wrote {path}")
    return 0


def _check_target_length(bundle: Bundle, target: str | None) -> None:
    """A --target longer than the model reads (its max_len pieces) is refused in one line; the source sentence is cut
    to fit, as everywhere, but the target's pieces are all given to the decoder."""
    limit = bundle.config.max_len  # every family's config says it (NetworkConfig)
    if target is None or not bundle.family.capabilities.architecture.has_decoder:
        return
    pieces = len(bundle.target_tokenizer.encode(target))
    if pieces > limit:
        raise CommandError(f"--target has {pieces:,} pieces; this model reads at most {limit:,} (its max_len): shorten it")


def _report(row) -> None:
    """The row, the keys it weighs most, and the head's term shares and class."""
    keys = display_labels(row.key_tokens)
    order = np.argsort(-row.weights)[:3]
    heaviest = ", ".join(f"“{keys[k]}” {row.weights[k]:.3f} (score {row.scores[k]:.2f})" for k in order)
    print(f"{row.title()}: heaviest keys {heaviest}")
    if row.shares is not None:
        print(f"head's term shares: {share_text(row.shares, row.term_split)} — {describe_terms(row.shares, row.term_split)}")
    else:
        print("the scores are not split into positional terms: this model adds no positional table")
