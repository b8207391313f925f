"""Published models at their real sizes, with random weights built here (model/pretrained/tiny.py's PUBLISHED:
OPUS-MT's Marian, T5-base, BART-large, NLLB-600M's M2M100), through the app (issue 41, "real sizes").

Each model is measured in a process of its own, so that its peak memory is its own: the time to open its folder (the
app's ``open_model``: checks, the library's load, float32) against the target of 10 s; a greedy step of the Stepper
(every layer's and head's attention row and the candidates kept) against the library's own ``generate`` with
``output_attentions=True`` (benchmarks/pretrained_step.py's measure: both sides in one run, alternated; target: not
slower); the exact patching of every head (the encoder's, the decoder's and cross-attention's grids: one patched run
per head, batched) against the target of 60 s for OPUS-MT's size; and the process's peak resident memory. The folders
are built once into ``--folder`` (a published size's random weights: GBs on disk for NLLB's).

    python benchmarks/real_sizes.py [--only opus-mt,nllb-600m] [--folder /tmp/te-real-sizes] [--steps 16]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch
from common import ROOT, print_table
from pretrained_step import measure

from model.interventions.patching import Component, patch_grids
from model.interventions.patching_setup import prepare_bundle_patching
from model.io.models import open_model
from model.pretrained.tiny import PUBLISHED, build_published

CLEAN = "The old man sees the small house ."
CORRUPTIONS = ("The old man sees the small car .", "The old man sees the small dog .", "The old man sees the big house .")
HEAD_GRIDS = (Component.ENCODER_HEADS, Component.DECODER_HEADS, Component.CROSS_HEADS)
OPEN_TARGET_S, PATCHING_TARGET_S = 10.0, 60.0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


def measure_one(name: str, folder: Path, steps: int, repeats: int, patching: bool) -> dict:
    """One published size, in this process: build (once), open, step, patch; the figures as a dict."""
    figures: dict = {"name": name}
    if not (folder / "config.json").exists():
        start = time.perf_counter()
        build_published(name, folder)
        figures["build_s"] = time.perf_counter() - start
    start = time.perf_counter()
    bundle = open_model(str(folder))
    figures["open_s"] = time.perf_counter() - start
    figures["parameters"] = bundle.model.parameter_count()
    figures["open_mb"] = peak_mb()
    row = measure(name, bundle, steps, repeats)
    figures["stepper_ms"], figures["generate_ms"], figures["same_tokens"] = float(row[2]), float(row[3]), row[5]
    if patching:
        pieces = len(bundle.source_ids(CLEAN)[0])
        corrupted = next((text for text in CORRUPTIONS if len(bundle.source_ids(text)[0]) == pieces), None)
        if corrupted is None:
            raise SystemExit(f"{name}: no corrupted sentence has as many pieces as the clean one")
        start = time.perf_counter()
        setup = prepare_bundle_patching(bundle, CLEAN, corrupted)
        result = patch_grids(setup, "exact", components=HEAD_GRIDS)
        figures["patching_s"] = time.perf_counter() - start
        figures["patched_heads"] = sum(grid.values.size for grid in result.grids.values())
    figures["peak_mb"] = peak_mb()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(PUBLISHED), help=f"comma-separated, of {', '.join(PUBLISHED)}")
    parser.add_argument("--folder", default="/tmp/te-real-sizes", help="where the folders are built (once)")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--patch", default="opus-mt", help="the models whose head grids are patched (comma-separated)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: measure this one and print JSON
    args = parser.parse_args()
    if args.one:
        figures = measure_one(args.one, Path(args.folder) / args.one, args.steps, args.repeats, args.one in args.patch.split(","))
        print(json.dumps(figures))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; each model in a process of its own")
    rows = []
    for name in args.only.split(","):
        command = [sys.executable, __file__, "--one", name, "--folder", args.folder, "--steps", str(args.steps)]
        command += ["--repeats", str(args.repeats), "--patch", args.patch]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            print(f"{name}: failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        patching = f"{figures['patching_s']:.1f} ({figures['patched_heads']} heads)" if "patching_s" in figures else "-"
        rows.append(
            [
                name,
                f"{figures['parameters'] / 1e6:.0f} M",
                f"{figures['open_s']:.1f} (target {OPEN_TARGET_S:g})",
                f"{figures['stepper_ms']:.1f}",
                f"{figures['generate_ms']:.1f}",
                f"{figures['generate_ms'] / figures['stepper_ms']:.2f}x",
                figures["same_tokens"],
                patching,
                f"{figures['peak_mb']:,.0f}",
            ]
        )
    header = ["model", "parameters", "open s", "step ms", "generate ms", "speed-up", "same tokens", "head patching s", "peak MB"]
    print_table(header, rows)
    print(f"targets: open <= {OPEN_TARGET_S:g} s; a step not slower than generate's; the head grids <= {PATCHING_TARGET_S:g} s")


if __name__ == "__main__":
    main()
