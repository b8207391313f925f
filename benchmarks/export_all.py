"""Export all: every kind x layer x head and the aggregates (figures, CSV, NPY) plus index.csv, for a
6-layer, 8-head model decoding 40 tokens. Target: within 10 s. Measured against drawing every
figure whole with matplotlib's savefig (what the blitted export replaced), in the same run.

    python benchmarks/export_all.py [--tokens 40] [--dpi 150] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import common  # noqa: F401  (puts the project on the path)

from model.data.corpora.symbolic import SYMBOLS
from model.decoding.stepper import DecodingOptions, Stepper
from model.figures.attention import focus_figure
from model.figures.export import ExportRequest, export_all, file_stem
from model.figures.saving import save_figure
from model.inspection.selection import heads_for, select

TARGET_SECONDS = 10.0


def decoded_trace(tokens: int, layers: int, heads: int):
    from gui_redraw import make_bundle

    bundle = make_bundle(layers, heads, 256)
    text = " ".join(SYMBOLS[i % len(SYMBOLS)] for i in range(tokens - 1))
    stepper = Stepper(bundle, text, DecodingOptions(max_steps=tokens, stop_at_eos=False))
    stepper.run()
    return stepper.trace()


def whole_figures(trace, folder: Path, request: ExportRequest, limit: int) -> tuple[float, int]:
    """Seconds per figure when each is built and saved whole (the first ``limit`` of them)."""
    started, count = time.perf_counter(), 0
    for kind in trace.kinds:
        n_layers, n_heads = trace.matrix(kind).shape[:2]
        for layer in range(n_layers):
            for head in heads_for(kind, n_heads):
                if count == limit:
                    return (time.perf_counter() - started) / count, count
                matrix = select(trace, kind, layer, head)
                save_figure(
                    focus_figure(matrix, trace, request.figure), folder / f"{file_stem(kind, layer, head)}.png", request.dpi
                )
                count += 1
    return (time.perf_counter() - started) / max(count, 1), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dpi", type=float, default=150, help="PNG resolution (Export all's default is 150)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    trace = decoded_trace(args.tokens, args.layers, args.heads)
    request = ExportRequest(dpi=args.dpi)
    print(
        f"{args.layers} layers x {args.heads} heads, {len(trace.source_tokens)} source and {trace.n_steps} target "
        f"tokens, PNG at {args.dpi:g} dpi"
    )
    times = []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            written = export_all(trace, folder, request)
            times.append(time.perf_counter() - started)
        print(f"  run {repeat + 1}: {len(written)} files in {times[-1]:.2f} s")
    figures = sum(
        1 for kind in trace.kinds for _ in range(trace.matrix(kind).shape[0]) for _ in heads_for(kind, trace.matrix(kind).shape[1])
    )
    with tempfile.TemporaryDirectory() as folder:
        per_figure, sampled = whole_figures(trace, Path(folder), request, 12)
    best = min(times)
    print(
        f"Export all: best {best:.2f} s, worst {max(times):.2f} s (target {TARGET_SECONDS:g} s: "
        f"{'met' if max(times) <= TARGET_SECONDS else 'NOT met'}; best/target {best / TARGET_SECONDS:.2f})"
    )
    print(
        f"Each of the {figures} figures drawn whole instead: {per_figure * 1000:.0f} ms each over {sampled}, "
        f"about {per_figure * figures:.1f} s for the figures alone ({per_figure * figures / best:.1f}x Export all)"
    )


if __name__ == "__main__":
    main()
