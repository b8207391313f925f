"""``transformer-explorer compare``: two models' cross-attention on one sentence, side by side in one figure,
each showing its best alignment head with its AER (the Explore tab's "Side by side" view, without a window): the
app's one best head, measured on ``--aer-pairs`` held-out toy-fr pairs drawn with ``--aer-seed`` (200 and 0 by
default, as ``evaluate`` and ``heads`` measure it), the pairs and seed printed beside the AER and in the figure.

    transformer-explorer compare --model default --with rnn-bahdanau --toy-fr 3 --out pair.pdf
    transformer-explorer compare --model default --with rnn-bahdanau --text "the cat sleeps" --out pair.png
"""

from __future__ import annotations

import argparse

from model.cli.export import add_figure_arguments, figure_options, model_name
from model.cli.options import CommandError, aer_arguments, check_aer_pairs
from model.cli.recorded import record_for
from model.data.corpora import toy_fr
from model.figures.comparison import pair_figure
from model.figures.saving import FIGURE_SUFFIXES, save_figure
from model.files import check_output
from model.inspection.comparison import FRESH_SEED, decoded_panel
from model.io.models import model_source, open_model
from model.kinds import AttentionKind


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="the first model: a file or a shipped model's name (default)")
    parser.add_argument("--with", dest="other", required=True, metavar="MODEL", help="the second model (rnn-bahdanau)")
    sentence = parser.add_mutually_exclusive_group(required=True)
    sentence.add_argument("--text", help="the source sentence")
    sentence.add_argument(
        "--toy-fr",
        type=int,
        metavar="N",
        help="the N-th fresh toy-fr sentence (from 1; never seen in training): its gold alignment gives each side's AER",
    )
    parser.add_argument("--step", type=int, help="decoding steps to show (default: each model's whole translation)")
    add_figure_arguments(parser)
    parser.add_argument("--pieces", action="store_true", help="sub-word pieces instead of words")
    aer_arguments(parser)
    parser.add_argument("--out", required=True, help=f"FILE ({', '.join(FIGURE_SUFFIXES)})")


def run_compare(args) -> int:
    if args.toy_fr is not None and not 1 <= args.toy_fr <= 100_000:
        raise CommandError(f"--toy-fr must be a sentence number from 1 to 100000, got {args.toy_fr}")
    if args.step is not None and args.step < 0:
        raise CommandError(f"--step must be 0 or more, got {args.step}")
    check_aer_pairs(args)
    if not args.toy_fr and not (args.text or "").strip():
        raise CommandError("--text is empty: give a sentence, or --toy-fr N for a toy-fr sentence with gold alignments")
    options = figure_options(args)
    protected = tuple(path for path in (model_source(args.model), model_source(args.other)) if path)
    out = check_output(args.out, protected)
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise CommandError(f"--out must end in {', '.join(FIGURE_SUFFIXES)}, not {out.name!r}")
    gold = None
    text = args.text
    if args.toy_fr is not None:
        gold = toy_fr.generate(args.toy_fr, FRESH_SEED)[-1]
        text = gold.source
    panels, bundles = [], []
    for name in (args.model, args.other):
        bundle = open_model(name)
        bundles.append(bundle)
        if AttentionKind.CROSS not in bundle.family.capabilities.kinds:
            raise CommandError(f"{model_name(name)} has no cross-attention to compare ({bundle.describe()})")
        panel = decoded_panel(
            model_name(name), bundle, text, step=args.step, gold=gold, aer_pairs=args.aer_pairs, aer_seed=args.aer_seed
        )
        panels.append(panel)
        print(f"{panel.heading()}\n  output: {panel.trace.target_text}")
    view = {"view": "side by side", "other model": args.other, "step": args.step, "pieces": args.pieces}
    record = record_for("compare", add_compare_arguments, args, bundles[0], view, text)  # the first model's digest
    save_figure(pair_figure(panels, options, word_level=not args.pieces), out, args.dpi, record)
    print(f"wrote {out}")
    return 0
