"""``transformer-explorer attribute``: a contribution measure of a decoded sentence, beyond raw attention weights.

    transformer-explorer attribute --model default --text "the black cat sees the small dog" --measure norm --out norm.npz
    transformer-explorer attribute --model default --text "…" --measure norm --kind cross --out norm.pdf

The sentence is decoded greedily (heads knocked out with ``--mask-heads``), then the measure is read from one
teacher-forced pass over the decoded output. ``.npz`` holds every kind's raw values [layers, heads, queries, keys]
(``{kind}_{measure}``) with the tokens; a figure (PNG, SVG, PDF) shows one kind's every layer and head, each
query's row as its shares of the row's total, so that it compares with the attention grid.

Measures: every one registered (model/inspection/measure_catalogue.py) beyond the raw weights; the app's own
(model/attribution/builtin_measures.py) are ``norm`` ‖α_ij f(x_j)‖ (Kobayashi et al. 2020), ``alti`` and ``alti+``
(Ferrando et al. 2022), ``value-zeroing`` (Mohebbi et al. 2023), ``attn-grad`` (Chefer et al. 2021), ``grad-input``,
``ig`` (integrated gradients) and ``shift-att`` (Chen et al. 2020). A kind the measure does not define is not in the
``.npz``, and a figure of it is refused with the reason. ALTI+ and the saliencies also save ``source_share`` [T] (each
prediction's share from the source); integrated gradients ``completeness_gap`` [T] (a share of F(x) − F(0)),
``integration_points`` [T] and ``integration_converged`` [T]. For integrated gradients a line says the gaps and the
points, a figure's caption the last prediction's, and a warning on stderr names every prediction whose integration
did not converge within the cap on points (its attributions are approximate).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from model.attribution.integration import gap_percent
from model.attribution.measures import MEASURES, MeasureError, measure_names, measured_trace, trace_measure, unsupported
from model.cli.export import add_figure_arguments, caption_name, figure_options
from model.cli.options import CommandError, mask_heads_argument, stage_progress
from model.cli.recorded import record_for
from model.decoding.stepper import DecodingOptions, Stepper
from model.decoding.trace import Trace
from model.family import capabilities_of
from model.figures.attention import grid_figure
from model.figures.export import ExportRequest, FigureOptions, export_view
from model.figures.saving import save_figure
from model.files import check_output
from model.inspection.selection import one_map_per_layer, parse_head
from model.io.models import model_source, open_model
from model.kinds import AttentionKind, SelectionError
from model.nn.masking import parse_heads
from model.provenance.embed import write_sidecar
from model.provenance.record import Record

SUFFIXES = (".npz", ".png", ".svg", ".pdf")


def _check_layer_and_head(args) -> None:
    """--layer and --head before any work: a layer from 1; a head only with a layer."""
    if args.layer is not None and args.layer < 1:
        raise CommandError(f"--layer counts from 1, got {args.layer}")
    if args.head is not None and args.layer is None:
        raise CommandError("--head picks a head of the layer --layer names: give --layer too")
    if args.head is not None:
        try:
            parse_head(args.head)
        except SelectionError as error:
            raise CommandError(f"--head: {error}") from None


def _save_figure(shown: Trace, kind: AttentionKind, args, options: FigureOptions, record: Record) -> None:
    """A measure's figure: one map alone (``--layer``, or a measure with one map in all) as the focus view with every
    token labelled, else every layer and head as a grid."""
    measure = MEASURES[args.measure]
    if args.layer is None and not measure.single:
        title = f"{kind.label[0].upper()}{kind.label[1:]}: {measure.label}"
        save_figure(grid_figure(shown, kind, options, title), args.out, args.dpi, record)
        return
    n_layers = shown.matrix(kind).shape[0]
    layer = 0 if args.layer is None else args.layer - 1
    if layer >= n_layers:
        raise CommandError(f"--layer {args.layer}: {measure.label} gives {n_layers} layer(s) of {kind.label}")
    head = 0 if one_map_per_layer(shown) else parse_head(args.head or "mean")
    request = ExportRequest(view="focus", kind=kind, layer=layer, head=head, figure=options, dpi=args.dpi or 300)
    try:
        export_view(shown, request, args.out, record=record)
    except SelectionError as error:
        raise CommandError(str(error)) from None


def add_attribute_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="the app's Transformer: a file or a shipped model's name (default)")
    parser.add_argument("--text", required=True, help="the source sentence")
    names = measure_names(contributions=True)  # what is registered when the command line is read
    parser.add_argument("--measure", choices=names, default="norm", help="; ".join(f"{m}: {MEASURES[m].what}" for m in names))
    parser.add_argument("--kind", choices=["encoder", "decoder", "cross"], default="cross", help="the kind a figure shows")
    parser.add_argument(
        "--layer",
        type=int,
        help="a figure of this layer alone (from 1), with every token labelled; default: every layer and head as a grid "
        "(a measure with one map in all, a saliency, is always drawn alone)",
    )
    parser.add_argument("--head", help="with --layer: the head from 1, or mean or max (default mean)")
    mask_heads_argument(parser)
    add_figure_arguments(parser)
    parser.add_argument("--out", required=True, help=f"FILE ({', '.join(SUFFIXES)})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (value zeroing shows one, a bar of layers)")


def run_attribute(args) -> int:
    suffix = Path(args.out).suffix.lower()
    if suffix not in SUFFIXES:
        raise CommandError(f"--out must end in {', '.join(SUFFIXES)}, not {Path(args.out).name!r}")
    options = figure_options(args)
    _check_layer_and_head(args)
    heads = parse_heads(args.mask_heads)
    model_path = model_source(args.model)
    check_output(args.out, (model_path,) if model_path else ())
    bundle = open_model(args.model)
    kind = AttentionKind.parse(args.kind)
    reason = unsupported(bundle.model, args.measure, None if suffix == ".npz" else kind)
    if reason:
        raise CommandError(reason)
    stepper = Stepper(bundle, args.text, DecodingOptions(masked_heads=heads))
    stepper.run()
    trace = stepper.trace()
    if not trace.n_steps and capabilities_of(bundle.model).architecture.has_decoder:  # an encoder-only model reads its text
        raise CommandError("the model decoded nothing for this sentence")
    try:
        with stage_progress(args.quiet) as progress:  # a measure in parts (value zeroing's layers) shows a bar
            layers = progress(args.measure, "layers")
            result = trace_measure(stepper.model, stepper.source_ids, trace, args.measure, progress=layers)
    except MeasureError as error:
        raise CommandError(str(error)) from None
    view = {"view": "measure", "measure": args.measure, "kind": str(kind), "layer": args.layer, "head": args.head}
    record = record_for("attribute", add_attribute_arguments, args, bundle, view, args.text)
    if suffix == ".npz":
        extra = {f"{kind.value}_{args.measure}": table for kind, table in result.values.items()}
        measured_trace(trace, result).save_npz(args.out, extra)
        write_sidecar(args.out, record)
    else:
        shown = measured_trace(trace, result)
        options.model_name = caption_name(args)
        _save_figure(shown, kind, args, options, record)
    print(f"wrote {args.out}")
    if len(result.completeness_gap):
        report_integration(result)
    return 0


def report_integration(result) -> None:
    """Integrated gradients: the completeness gaps and points on stdout; on stderr, the predictions that did not
    converge."""
    gaps, points, converged = result.completeness_gap, result.integration_points, result.integration_converged
    print(
        f"integrated gradients: completeness gap {gap_percent(float(np.median(gaps)))} median, "
        f"{gap_percent(float(gaps.max()))} at most "
        f"over the {len(gaps)} predictions; {int(points.min()):,} to {int(points.max()):,} points per prediction; "
        f"converged at {int(converged.sum())} of {len(gaps)}"
    )
    failed = np.flatnonzero(~converged)
    if len(failed):
        listed = ", ".join(f"{step + 1} (gap {gap_percent(float(gaps[step]))}, {int(points[step]):,} points)" for step in failed)
        print(
            f"warning: integrated gradients did not converge at step{'s' if len(failed) > 1 else ''} {listed}: "
            "those attributions are approximate",
            file=sys.stderr,
        )
