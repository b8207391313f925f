"""``transformer-explorer export``: a view of a decoded sentence as a figure (PNG, SVG, PDF, by the
suffix), as data (CSV, NPY) or as an interactive page (HTML: every kind, layer, head and step in one
self-contained file), or with ``--all`` every kind x layer x head into a folder, without a window. The
same settings give the same files as the app's Export menu (both go through ``model.figures.export``).

    transformer-explorer export --model default --text "the cat sleeps" --kind cross --layer 2 \\
        --head mean --width column --out cross.pdf
    transformer-explorer export --model default --text "the cat sleeps" --kind cross --layer 2 --out page.html
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from model.cli.options import CommandError, language_arguments, mask_heads_argument, whole_numbers, with_languages
from model.cli.recorded import caption_name, default_dimensions, export_record, export_records, language_flags, positional_record
from model.cli.recorded import model_name as model_name  # where the commands import it from
from model.decoding.stepper import DecodingOptions, Stepper
from model.figures.attention import FigureOptions
from model.figures.export import SUFFIXES, VIEWS, ExportRequest, export_all, export_view, save_table
from model.figures.html_page import PAGE_SUFFIX, PAGE_VIEWS
from model.figures.layout import DEFAULT_WIDTH, check_font_size, parse_width
from model.figures.positional import positional_figure
from model.figures.saving import save_figure
from model.files import check_output
from model.inspection.position_reports import positional_report
from model.inspection.selection import parse_head
from model.io.models import model_source, open_model
from model.nn.masking import parse_heads
from model.provenance.embed import write_sidecar


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", required=True, help="model file, a shipped model's name (default), or a pretrained folder or cached id"
    )
    language_arguments(parser)
    parser.add_argument("--text", help="the source sentence (every view but positional)")
    parser.add_argument(
        "--view",
        choices=[*VIEWS, "positional"],
        default="focus",
        help="focus: one heatmap; grid: every layer x head; lines: the paper's line view of a "
        "layer; candidates: the next-token probabilities; positional: the model's positional "
        "encoding (no sentence)",
    )
    parser.add_argument("--positions", type=int, default=64, help="positional view: positions shown")
    parser.add_argument("--dimensions", help="positional view: dimensions drawn as curves (default 0,1,8,9,32,33)")
    parser.add_argument("--kind", choices=["encoder", "decoder", "cross"], default="cross")
    parser.add_argument("--layer", type=int, default=1, help="layer, from 1")
    parser.add_argument("--head", default="mean", help="head from 1, or mean, max, rollout (lines: the head in front)")
    parser.add_argument("--heads", help="lines view: the heads drawn, e.g. 1,3 (default all)")
    parser.add_argument("--step", type=int, help="decoding steps to show (default: the whole translation)")
    parser.add_argument("--beam", type=int, help="decode with beam search of this width")
    parser.add_argument("--word-level", action="store_true", help="words instead of sub-word pieces")
    mask_heads_argument(parser)
    figure = parser.add_argument_group("figures (.png, .svg, .pdf)")
    figure.add_argument(
        "--width", default=str(DEFAULT_WIDTH), help="column (3.3 in), page (6.9 in, the default), or a size: 5in, 12cm"
    )
    figure.add_argument("--height", help="a size (default: from the content, square cells)")
    figure.add_argument("--font-size", type=float, default=8.0, help="points (default 8); labels shrink to fit")
    figure.add_argument("--colormap", default="viridis", help="a matplotlib colour map (viridis, magma, cividis, ...)")
    figure.add_argument("--dpi", type=float, help="PNG resolution (default 300; 150 with --all)")
    figure.add_argument("--no-caption", action="store_true", help="only the title: no sentence, model or step")
    figure.add_argument("--model-name", help="how the caption names the model (default: its file's stem)")
    figure.add_argument("--outline-step", action="store_true", help="outline the current step's row, as the window does")
    parser.add_argument(
        "--all",
        action="store_true",
        help="write every kind x layer x head and the aggregates (PNG, CSV, NPY) and index.csv into the folder --out",
    )
    parser.add_argument(
        "--out",
        required=True,
        help=f"FILE ({', '.join(SUFFIXES)}; .html: an interactive page of every kind, layer, head and step), "
        "or a folder with --all",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="transformer-explorer export", description="Export a view of a decoded sentence as a figure or data."
    )
    add_export_arguments(parser)
    return parser


def add_figure_arguments(parser: argparse.ArgumentParser) -> None:
    """The figure options of the commands that draw one figure of their own (compare, attribute)."""
    parser.add_argument("--width", default=str(DEFAULT_WIDTH), help="column (3.3 in), page (6.9 in, the default), 5in, 12cm")
    parser.add_argument("--font-size", type=float, default=8.0, help="points (default 8); labels shrink to fit")
    parser.add_argument("--colormap", default="viridis", help="a matplotlib colour map (viridis, magma, cividis, ...)")
    parser.add_argument("--dpi", type=float, default=300, help="PNG resolution (default 300)")
    parser.add_argument("--no-caption", action="store_true", help="only the title: no sentence, model or step")
    parser.add_argument("--model-name", help="how the caption names the model (default: its file's stem)")


def figure_options(args) -> FigureOptions:
    """FigureOptions from the figure arguments a command has; a bad width, font size or colour map is refused here,
    before anything slow."""
    height = getattr(args, "height", None)
    options = FigureOptions(
        width=parse_width(args.width),
        height=parse_width(height, "height") if height else None,
        font_size=check_font_size(args.font_size),
        colormap=args.colormap,
        caption=not args.no_caption,
        outline_step=getattr(args, "outline_step", False),
    )
    options.colours()  # an unknown colour map is reported before decoding
    if getattr(args, "model", None):
        options.model_name = caption_name(args)  # how the captions (and the records) name the model
    return options


def request_from(args) -> ExportRequest:
    heads = None
    if args.heads:
        numbers = whole_numbers(args.heads)
        if numbers is None:
            raise CommandError(f"--heads must be head numbers from 1 such as 1,3, not {args.heads!r}")
        heads = sorted({number - 1 for number in numbers})
    options = figure_options(args)
    return ExportRequest(
        view=args.view,
        kind=args.kind,
        layer=args.layer - 1,
        head=parse_head(args.head),
        step=args.step,
        word_level=args.word_level,
        figure=options,
        dpi=args.dpi or (150 if args.all else 300),
        heads=heads,
    )


def run_export(args) -> int:
    if args.view == "positional":
        return run_positional(args)
    if not args.text:
        raise CommandError("--text is needed: the sentence to decode")
    if args.beam is not None and args.beam < 1:
        raise CommandError(f"--beam must be positive, got {args.beam}")
    request = request_from(args)
    request.validate()
    heads = parse_heads(args.mask_heads)
    model_path = model_source(args.model)
    protected = (model_path,) if model_path else ()
    out = Path(args.out)
    if args.all:
        if out.exists() and not out.is_dir():
            raise CommandError(f"{out}: --all writes into a folder, and this is a file")
    else:
        if out.suffix.lower() not in SUFFIXES:
            raise CommandError(f"--out must end in {', '.join(SUFFIXES)}, not {out.name!r}")
        if out.suffix.lower() == PAGE_SUFFIX and args.view not in PAGE_VIEWS:
            raise CommandError(f"the page (.html) shows the focus and grid views, not the {args.view} view")
        check_output(out, protected)  # before the decoding, which can take a while
    bundle = with_languages(open_model(args.model), args)
    request.figure.model_name = caption_name(args)
    options = DecodingOptions(strategy="beam", beam_width=args.beam) if args.beam else DecodingOptions()
    options.masked_heads = heads
    stepper = Stepper(bundle, args.text, options)
    for message in stepper.messages:
        print(f"note: {message}", file=sys.stderr)
    stepper.run()
    trace = stepper.trace()
    if args.all:
        base = export_record(request, bundle, args.model, args.text, args.beam, args.mask_heads)
        records = export_records(base, args.model, args.text, args.beam, args.mask_heads, language_flags(bundle))
        written = export_all(trace, out, request, record_for=records)
        print(f"wrote {len(written)} files into {out} (index.csv names them)")
    else:
        record = export_record(request, bundle, args.model, args.text, args.beam, args.mask_heads)
        print(f"wrote {export_view(trace, request, out, protected, record)}")
    return 0


def run_positional(args) -> int:
    """The positional-encoding figure (PNG, SVG, PDF) or its table (CSV, NPY: positions x d_model)."""
    model_path = model_source(args.model)
    out = check_output(args.out, (model_path,) if model_path else ())
    if out.suffix.lower() not in SUFFIXES:
        raise CommandError(f"--out must end in {', '.join(SUFFIXES)}, not {out.name!r}")
    options = request_from(args).figure
    options.model_name = caption_name(args)
    bundle = open_model(args.model)
    if not 2 <= args.positions <= bundle.config.max_len:
        raise CommandError(f"--positions must be between 2 and {bundle.config.max_len} (the model's longest input)")
    report = positional_report(bundle, args.positions)
    if report is None:
        raise CommandError(f"{bundle.describe()}: this model has no positional table or position bias to show")
    d_model = report.table.shape[1]  # dimensions; heads for T5's relative bias
    dimensions = default_dimensions(report) if args.dimensions is None else _dimensions(args.dimensions)
    if any(not 0 <= d < d_model for d in dimensions):
        raise CommandError(f"--dimensions must be between 0 and {d_model - 1}")
    record = positional_record(bundle, args.model, report, args.positions, dimensions[:12], options, args.dpi or 300)
    if out.suffix.lower() in (".csv", ".npy"):
        save_table(report.table, report.table, report.row_labels, [str(d) for d in range(d_model)], out, "position \\ dimension")
        write_sidecar(out, record)
    else:
        save_figure(positional_figure(report, dimensions[:12], options), out, args.dpi or 300, record)
    print(f"wrote {out}")
    return 0


def _dimensions(text: str) -> list[int]:
    numbers = whole_numbers(text)
    if numbers is None:
        raise CommandError(f"--dimensions must be numbers such as 0,1,8, not {text!r}")
    return numbers
