"""``transformer-explorer circuit``: the edges that carry a prediction from a clean source rather than a corrupted
one, across cross-attention (model/circuits/), from the command line.

    transformer-explorer circuit --model copy --clean "a m b f p j" --corrupt "a m b f p q" --out circuit.pdf
    transformer-explorer circuit --model default --pair number --out circuit.json     (also .csv, .graphml, .png, .svg)

Prints the metric, the direction, the scores' method and integration points, the norm treatment, the check against
exact edge patching, the circuit found and its faithfulness (and says when its evaluation disagrees with its scores),
and writes the figure (the node-link diagram and the faithfulness curve) or the data by the suffix.
"""

from __future__ import annotations

import argparse

from model.circuits.result import Options, find_circuit_of
from model.circuits.scores import INTEGRATIONS, METHODS, METRICS
from model.cli.export import add_figure_arguments, caption_name, figure_options
from model.cli.interventions import out_suffix, pair_arguments, pair_sources
from model.cli.options import CommandError, with_languages
from model.cli.recorded import circuit_record, command_of, command_parser
from model.figures.circuit import SUFFIXES, save_circuit
from model.files import check_output
from model.io.models import model_source, open_model


def add_circuit_arguments(parser: argparse.ArgumentParser) -> None:
    pair_arguments(parser, "a model: a file or a shipped model's name (an encoder-decoder of the app's)")
    parser.add_argument("--method", choices=METHODS, default="EAP-IG", help="EAP-IG (default) or EAP")
    parser.add_argument(
        "--over", choices=INTEGRATIONS, default="activations", help="what EAP-IG integrates over (default activations)"
    )
    parser.add_argument("--ig-steps", type=int, default=5, help="EAP-IG's integration points (default 5)")
    parser.add_argument("--metric", choices=METRICS, default="logit difference", help="the metric (default logit difference)")
    parser.add_argument("--target", type=float, default=0.9, help="the share of the difference the circuit keeps (default 0.9)")
    parser.add_argument("--no-positions", action="store_true", help="key/value edges per writer, not per source position")
    check = parser.add_mutually_exclusive_group()
    check.add_argument(
        "--exact", action="store_true", help="patch every edge exactly to check the scores (default: up to 6000 edges)"
    )
    check.add_argument("--no-exact", action="store_true", help="do not patch every edge exactly")
    parser.add_argument("--out", required=True, help="a figure FILE.png|svg|pdf, or FILE.csv|json|graphml")
    add_figure_arguments(parser)


def run_circuit(args) -> int:
    out_suffix(args.out, SUFFIXES)
    options = figure_options(args)
    clean, corrupted, pair_line = pair_sources(args)
    if args.step is not None and args.step < 1:
        raise CommandError(f"--step counts from 1, not {args.step}")
    if args.ig_steps < 1:
        raise CommandError(f"--ig-steps is at least 1, not {args.ig_steps}")
    if not 0 < args.target <= 1:
        raise CommandError(f"--target is a share of the difference, above 0 and at most 1, not {args.target}")
    model_path = model_source(args.model)
    check_output(args.out, (model_path,) if model_path else ())
    bundle = with_languages(open_model(args.model), args)
    exact = True if args.exact else (False if args.no_exact else None)
    chosen = Options(args.method, args.ig_steps, args.over, args.metric, args.target, not args.no_positions, exact)
    step = None if args.step is None else args.step - 1
    result = find_circuit_of(bundle, clean, corrupted, step, chosen)
    for line in [pair_line, *result.describe()] if pair_line else result.describe():
        print(line)
    options.model_name = caption_name(args)
    command = command_of(command_parser("circuit", add_circuit_arguments), args, "circuit")
    save_circuit(result, args.out, options, args.dpi, circuit_record(result, bundle, args.model, command, clean, corrupted))
    print(f"wrote {args.out}")
    return 0
