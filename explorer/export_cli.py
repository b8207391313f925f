"""``transformer-explorer export``: one attention heatmap of a sentence to PNG, SVG, CSV or NPY,
without a window. The matrix is the one the app's focus view shows for the same choices.

    transformer-explorer export --model default --text "the cat sleeps" --kind cross --layer 2 \\
        --head mean --out cross.png
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

SUFFIXES = (".png", ".svg", ".csv", ".npy")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transformer-explorer export",
                                     description="Export one attention matrix of a decoded sentence.")
    parser.add_argument("--model", required=True, help="model file, or a shipped model's name (default)")
    parser.add_argument("--text", required=True, help="the source sentence")
    parser.add_argument("--kind", required=True, choices=["encoder", "decoder", "cross"])
    parser.add_argument("--layer", required=True, type=int, help="layer, from 1")
    parser.add_argument("--head", required=True, help="head from 1, or mean, max, rollout")
    parser.add_argument("--step", type=int, help="decoding steps to show (default: the whole translation)")
    parser.add_argument("--beam", type=int, help="decode with beam search of this width")
    parser.add_argument("--word-level", action="store_true", help="words instead of sub-word pieces")
    parser.add_argument("--scale", type=float, default=2.0, help="PNG scale, 1-4")
    parser.add_argument("--size", default="900x700", help="image size in pixels before scaling, WxH")
    parser.add_argument("--colormap", default="viridis")
    parser.add_argument("--out", required=True, help="FILE.png, FILE.svg, FILE.csv or FILE.npy")
    return parser


def export_matrix(args) -> Path:
    from model import checkpoint
    from model.selection import parse_head, select
    from model.shipped import resolve_model
    from model.stepper import DecodingOptions, Stepper

    out = Path(args.out)
    if out.suffix.lower() not in SUFFIXES:
        raise ValueError(f"--out must end in {', '.join(SUFFIXES)}, not {out.name!r}")
    if not 1 <= args.scale <= 4:
        raise ValueError("--scale must be between 1 and 4")
    bundle = checkpoint.load(resolve_model(args.model))
    options = DecodingOptions(strategy="beam", beam_width=args.beam) if args.beam else DecodingOptions()
    stepper = Stepper(bundle, args.text, options)
    for message in stepper.messages:
        print(f"note: {message}", file=sys.stderr)
    stepper.run()
    trace = stepper.trace()
    if args.word_level:
        trace = trace.word_level()
    matrix = select(trace, args.kind, args.layer - 1, parse_head(args.head), args.step)
    suffix = out.suffix.lower()
    if suffix == ".npy":
        matrix.save_npy(out)
    elif suffix == ".csv":
        matrix.save_csv(out)
    else:
        _render(matrix, out, args)
    return out


def _render(matrix, out: Path, args) -> None:
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from .app import make_application
    from .export import save_image
    from .heatmap import HeatmapView

    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size must look like 900x700, not {args.size!r}") from None
    make_application()
    view = HeatmapView(args.colormap)
    view.resize(width, height)
    current = len(matrix.query_labels) - 1 if matrix.kind != "encoder" and matrix.query_labels else None
    view.set_matrix(matrix.values, matrix.query_labels, matrix.key_labels, matrix.title, current)
    save_image(view, out, args.scale, matrix.title)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        out = export_matrix(args)
    except (ValueError, OSError) as error:  # CheckpointError, SelectionError, DecodingError are ValueErrors
        print(f"transformer-explorer export: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0
