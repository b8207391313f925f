"""``transformer-explorer attribute``: a contribution measure of a decoded sentence, beyond raw attention weights.

    transformer-explorer attribute --model default --text "the black cat sees the small dog" --measure norm --out norm.npz
    transformer-explorer attribute --model default --text "…" --measure norm --kind cross --out norm.pdf

The sentence is decoded greedily (heads knocked out with ``--mask-heads``), then the measure is read from one
teacher-forced pass over the decoded output. ``.npz`` holds every kind's raw values [layers, heads, queries, keys]
(``{kind}_{measure}``) with the tokens; a figure (PNG, SVG, PDF) shows one kind's every layer and head, each
query's row as its shares of the row's total, so that it compares with the attention grid.

Measures: ``norm``, ‖α_ij f(x_j)‖ (Kobayashi et al., EMNLP 2020; model/attribution/norms.py).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from model.cli.export import add_figure_arguments, figure_options
from model.cli.options import CommandError
from model.io.files import check_output

MEASURES = {"norm": "norm-based contributions ‖α f(x)‖"}
SUFFIXES = (".npz", ".png", ".svg", ".pdf")


def add_attribute_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="the app's Transformer: a file or a shipped model's name (default)")
    parser.add_argument("--text", required=True, help="the source sentence")
    parser.add_argument("--measure", choices=list(MEASURES), default="norm", help="norm: ‖α_ij f(x_j)‖ (Kobayashi et al. 2020)")
    parser.add_argument("--kind", choices=["encoder", "decoder", "cross"], default="cross", help="the kind a figure shows")
    parser.add_argument("--mask-heads", metavar="KIND:LAYER:HEAD,...", default="", help="heads knocked out, e.g. cross:3:1")
    add_figure_arguments(parser)
    parser.add_argument("--out", required=True, help=f"FILE ({', '.join(SUFFIXES)})")


def run_attribute(args) -> int:
    import torch

    from model.attribution.masking import parse_heads
    from model.attribution.norms import norm_contributions
    from model.cli.export import model_name
    from model.decoding.stepper import DecodingOptions, Stepper
    from model.figures.attention import grid_figure
    from model.figures.saving import save_figure
    from model.io.models import model_source, open_model
    from model.kinds import AttentionKind

    suffix = Path(args.out).suffix.lower()
    if suffix not in SUFFIXES:
        raise CommandError(f"--out must end in {', '.join(SUFFIXES)}, not {Path(args.out).name!r}")
    options = figure_options(args)
    heads = parse_heads(args.mask_heads)
    model_path = model_source(args.model)
    check_output(args.out, (model_path,) if model_path else ())
    bundle = open_model(args.model)
    if getattr(bundle.model, "family", "") != "transformer":
        raise CommandError(
            f"the {args.measure} measure is computed for the app's encoder-decoder Transformer; {bundle.describe()} is not one"
        )
    stepper = Stepper(bundle, args.text, DecodingOptions(masked_heads=heads))
    stepper.run()
    trace = stepper.trace()
    if not trace.n_steps:
        raise CommandError("the model decoded nothing for this sentence")
    inputs = [bundle.config.bos_id] + [int(i) for i in trace.chosen_ids[:-1]]
    device = next(stepper.model.parameters()).device
    values = norm_contributions(
        stepper.model, torch.tensor([stepper.source_ids], device=device), torch.tensor([inputs], device=device)
    )
    arrays = {kind: torch.stack(tables)[:, 0].float().cpu().numpy() for kind, tables in values.items()}  # [layers, heads, Q, K]
    if suffix == ".npz":
        extra = {f"{kind.value}_{args.measure}": table for kind, table in arrays.items()}
        trace.save_npz(args.out, extra)
    else:
        kind = AttentionKind.parse(args.kind)
        shares = arrays[kind] / np.maximum(arrays[kind].sum(-1, keepdims=True), 1e-20)  # each row's shares
        shown = replace(trace, **{kind.field: shares.astype(np.float32)})
        options.model_name = model_name(args.model)
        title = f"{kind.label[0].upper()}{kind.label[1:]}: {MEASURES[args.measure]}, each row's shares"
        save_figure(grid_figure(shown, kind, options, title, "share of the row's total"), args.out, args.dpi)
    print(f"wrote {args.out}")
    return 0
