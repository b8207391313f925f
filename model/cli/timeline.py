"""``transformer-explorer timeline``: a model's training snapshots, as an animation, a strip of small multiples, the
signed difference of two snapshots, or per-head curves (model/timeline/).

    transformer-explorer timeline --model copy --text "a b c d" --view cross --layer 1 --head 2 --out anim.gif
    transformer-explorer timeline --model copy --text "a b c d" --grid --snapshots 0,3,6 --out strip.pdf
    transformer-explorer timeline --model copy --text "a b c d" --view cross --layer 1 --diff 0 6 --out diff.svg
    transformer-explorer timeline --model copy --text "a b c d" --out curves.csv      (or --curves --out curves.png)

What is written follows the suffix of ``--out``: .gif an animation (one frame per snapshot); .png, .svg or .pdf the
strip (snapshots in a row), the difference with ``--diff I J`` (J minus I) or the curves with ``--curves``; .csv the
curves. Whatever is written, the command prints a summary of the snapshots decoded: the best head's AER at the first
and last, when each head became alignment-like and the largest changes, ranked by rate. Snapshots are numbered from 0 as
the timeline lists them. Every snapshot decodes the sentence forced along
one output (the final model's translation, or ``--reference``), so their matrices compare cell by cell.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from model.cli.options import CommandError, whole_numbers
from model.cli.recorded import timeline_record
from model.decoding.stepper import DecodingOptions
from model.figures.attention import FigureOptions
from model.figures.layout import check_font_size, parse_width
from model.figures.saving import save_figure
from model.files import check_output
from model.inspection.selection import parse_head
from model.io.models import model_source
from model.kinds import AttentionKind
from model.provenance.embed import write_sidecar
from model.timeline.animation import FRAME_SECONDS, FRAME_WIDTH, save_gif
from model.timeline.curve_files import save_curves_csv, save_curves_figure
from model.timeline.curves import CURVE_AER_PAIRS, CurveOptions, HeadCurves, head_curves
from model.timeline.figures import difference_figure, snapshot_strip
from model.timeline.source import SnapshotSource, check_index, choose_snapshots, open_timeline
from model.timeline.traces import TARGETS, SnapshotTrace, decode_own, snapshot_traces
from model.timeline.views import ViewSpec, default_view

FIGURES = (".png", ".svg", ".pdf")
SUFFIXES = (".gif", *FIGURES, ".csv")


def add_timeline_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a model file recorded with its timeline, or a shipped model's name")
    parser.add_argument("--text", required=True, help="the sentence every snapshot decodes")
    parser.add_argument("--view", choices=[kind.value for kind in AttentionKind], help="the kind (default: cross, if any)")
    parser.add_argument("--layer", type=int, help="one layer, from 1 (with --head: one head)")
    parser.add_argument("--head", help="a head of --layer, from 1, or mean, max, rollout")
    parser.add_argument("--grid", action="store_true", help="every layer and head (the default without --layer)")
    parser.add_argument("--snapshots", metavar="I,J,...", help="the snapshots shown, from 0 (default: all)")
    parser.add_argument("--diff", nargs=2, type=int, metavar=("I", "J"), help="snapshot J minus snapshot I (a figure)")
    parser.add_argument("--curves", action="store_true", help="per-head curves (a figure; a .csv is always the curves)")
    parser.add_argument("--target", choices=TARGETS, help="what every snapshot is forced to output (default: final)")
    parser.add_argument("--reference", help="the reference translation (implies --target reference)")
    parser.add_argument("--aer-pairs", type=int, default=CURVE_AER_PAIRS, help=f"curves: AER pairs (default {CURVE_AER_PAIRS})")
    parser.add_argument("--aer-seed", type=int, default=0, help="curves: the seed that draws them (default 0)")
    parser.add_argument("--importance", type=int, default=0, metavar="N", help="curves: head importance on N pairs (slow)")
    parser.add_argument("--width", help=f"figure width: column, page or a size (default 6.9 in; GIF {FRAME_WIDTH:g} in)")
    parser.add_argument("--font-size", type=float, default=8.0, help="points (default 8)")
    parser.add_argument("--colormap", default="viridis", help="colour map of attention (a difference is red-blue)")
    parser.add_argument("--dpi", type=float, help="PNG: 300 by default; GIF: 100")
    parser.add_argument("--frame-seconds", type=float, default=FRAME_SECONDS, help="GIF: seconds per snapshot")
    parser.add_argument("--out", required=True, help="FILE.gif, FILE.png|svg|pdf or FILE.csv")
    parser.add_argument("--device", default="cpu")


def _what(args) -> str:
    """'gif', 'strip', 'diff' or 'curves', from the suffix and the options; a CommandError for a mismatch."""
    suffix = Path(args.out).suffix.lower()
    if suffix not in SUFFIXES or Path(args.out).is_dir():
        raise CommandError(
            f"--out must end in .gif (an animation), .png, .svg or .pdf (a strip, --diff or --curves) or .csv (the curves), "
            f"not {Path(args.out).name!r}"
        )
    if args.diff and (suffix not in FIGURES or args.curves):
        raise CommandError("--diff draws one figure: give --out FILE.png, .svg or .pdf (and no --curves)")
    if args.diff and args.snapshots:
        raise CommandError("give --snapshots or --diff, not both")
    if args.curves and suffix == ".gif":
        raise CommandError("--curves is a figure or a table: give --out FILE.png, .svg, .pdf or .csv")
    if args.grid and (args.layer is not None or args.head is not None):
        raise CommandError("--grid shows every layer and head: leave out --layer and --head")
    if args.head is not None and args.layer is None:
        raise CommandError("--head is a head of a layer: give --layer too")
    if args.target == "reference" and args.reference is None:
        raise CommandError("--target reference needs --reference TEXT")
    if args.reference is not None and args.target not in (None, "reference"):
        raise CommandError(f"--reference is forced with --target reference, not --target {args.target}")
    if args.aer_pairs < 0 or args.importance < 0:
        raise CommandError("--aer-pairs and --importance must be 0 (none) or more")
    if suffix == ".csv" or args.curves:
        return "curves"
    return "diff" if args.diff else "gif" if suffix == ".gif" else "strip"


def _options(args, what: str) -> FigureOptions:
    width = parse_width(args.width if args.width else (FRAME_WIDTH if what == "gif" else None))
    options = FigureOptions(width=width, font_size=check_font_size(args.font_size), colormap=args.colormap)
    options.colours()  # an unknown colour map is refused before anything slow
    low, high = (20, 300) if what == "gif" else (50, 1200)
    if args.dpi is not None and not low <= args.dpi <= high:
        raise CommandError(f"--dpi must be between {low} and {high} for this output, not {args.dpi:g}")
    if not 0.02 <= args.frame_seconds <= 60:
        raise CommandError(f"--frame-seconds must be between 0.02 and 60, not {args.frame_seconds:g}")
    return options


def _indices(args, source: SnapshotSource) -> list[int] | None:
    """The snapshots to decode: --diff's two, --snapshots, or all (None)."""
    if args.diff:
        return [check_index(source, index) for index in args.diff]
    if args.snapshots is None:
        return None
    numbers = whole_numbers(args.snapshots)
    if not numbers:
        raise CommandError(f"--snapshots {args.snapshots!r}: expected snapshot numbers from 0, such as 0,3,6")
    return choose_snapshots(source, numbers)


def _view(args, trace) -> ViewSpec:
    """The view the options name, checked against the trace (its kinds, layers and heads)."""
    kind = AttentionKind.parse(args.view) if args.view else default_view(trace).kind
    if args.layer is None:
        view = ViewSpec(kind)
    else:
        view = ViewSpec(kind, args.layer - 1, None if args.head is None else parse_head(args.head))
    view.check(trace)
    return view


def _report(curves: HeadCurves) -> None:
    """The AER of the best head at the first and last snapshot, the onsets and the ranked phase changes."""
    if curves.aer is not None:
        best = curves.best_aer()
        print(f"best head's AER: {best[0]:.3f} at {curves.names[0]} → {best[-1]:.3f} at {curves.names[-1]} ({curves.aer_where})")
    for onset in curves.onsets:
        print(onset.describe())
    if curves.phase_changes:
        print("largest changes between consecutive snapshots, ranked by rate (the change per unit of log step, ln(1 + step)):")
    for change in curves.phase_changes:
        print(f"  {change.describe()}")


def _draw(args, what: str, source: SnapshotSource, traces: list[SnapshotTrace], options: FigureOptions) -> None:
    final = source.bundle_at(len(source.snapshots) - 1)  # the model as opened: what the record's digest names
    kind = str(AttentionKind.parse(args.view) if args.view else default_view(traces[-1].trace).kind)
    head = None if args.head is None else parse_head(args.head)
    layer = None if args.layer is None else args.layer - 1
    diff = tuple(args.diff) if args.diff else None
    curves_figure = what == "curves" and Path(args.out).suffix.lower() != ".csv"
    record = timeline_record(final, args.model, args.text, what, kind, layer, head, args.snapshots, diff, curves_figure,
                             options, args.dpi, args.frame_seconds)  # fmt: skip
    if what == "curves":
        curves = head_curves(source, traces, CurveOptions(args.aer_pairs, args.aer_seed, args.importance))
        if Path(args.out).suffix.lower() == ".csv":
            save_curves_csv(curves, args.out)
            write_sidecar(args.out, record)
        else:
            save_curves_figure(curves, args.out, options.width, args.dpi or 200, record)
        _report(curves)
        return
    view = _view(args, traces[-1].trace)  # checked before decoding (run_timeline); the same layers and heads
    if what == "gif":
        save_gif(traces, view, args.out, options, args.dpi or 100, args.frame_seconds)
        write_sidecar(args.out, record)  # a GIF keeps its record beside it
    elif what == "diff":
        before, after = (next(item for item in traces if item.index == index) for index in args.diff)
        save_figure(difference_figure(before, after, view, options), args.out, args.dpi or 300, record)
    else:
        save_figure(snapshot_strip(traces, view, options), args.out, args.dpi or 300, record)


def run_timeline(args, opener=None) -> int:
    """Check every option and the output, open the timeline (``opener(model, device)``; by default
    ``open_timeline``), decode the sentence with the chosen snapshots and write what ``--out`` asks for."""
    what = _what(args)
    options = _options(args, what)
    if not args.text.strip():
        raise CommandError("nothing to decode: the sentence is empty")
    check_output(args.out, (model_source(args.model),))
    source = (opener or open_timeline)(args.model, args.device)
    choose_snapshots(source)  # a timeline with no snapshots is refused here
    indices = _indices(args, source)
    if what != "curves":  # a layer or head the model lacks is refused before every snapshot is decoded
        last = len(source.snapshots) - 1
        _view(args, decode_own(source.bundle_at(last), args.text, DecodingOptions(max_steps=1))[0])
    target = args.target or ("reference" if args.reference is not None else "final")
    traces = snapshot_traces(source, args.text, indices, target, args.reference, DecodingOptions())
    _draw(args, what, source, traces, options)
    if what != "curves":  # the summary the curves print, for the snapshots drawn (--aer-pairs 0: without AER)
        if indices is not None:
            print(f"of snapshots {', '.join(str(item.index) for item in traces)} (of 0–{len(source.snapshots) - 1}):")
        _report(head_curves(source, traces, CurveOptions(args.aer_pairs, args.aer_seed)))
    print(f"wrote {args.out}")
    return 0
