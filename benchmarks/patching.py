"""How long activation patching takes on the shipped default model: a full grid for a 12-piece minimal pair; and
what the logit lens adds to a decoding step.

The pair differs in number ("the cat sees the small dog that the boy loves" / "the cats see …", 12 source pieces
each). Timed, best of a few runs after a warm-up: the reference runs (the clean greedy translation, both sources'
activations), the grids asked for (every head of the three kinds of attention × every layer, and the encoder's
residual stream at every source position), every grid (the decoder's residual and the feed-forward blocks as well),
and the attribution-patching preview of every grid. Target: the reference runs and the asked grids within 3 s on
2 cores. Prints each time with the target ratio (below 1 meets it), then the cells that restore most. The logit
lens of the same clean sentence (every reading at every step, top 5) is timed against decoding it step by step in
the Stepper, as the window does; its cost a step (its time divided by the steps) has the target 20 ms.

    python benchmarks/patching.py [--repeats 5] [--step N] [--direction denoising|noising] [--threads N]

On a machine shared with other work, two threads can wait on each other (OpenMP's helpers wake for every small
operation): compare with --threads 1, which the window uses for work outside training (model/runtime.py).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from common import best_seconds, print_table

from model.decoding.stepper import DecodingOptions, Stepper
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import COMPONENTS, patch_grids
from model.interventions.patching_setup import prepare_bundle_patching
from model.io.models import open_model
from model.runtime import set_cpu_threads

CLEAN = "the cat sees the small dog that the boy loves"
CORRUPTED = "the cats see the small dog that the boy loves"
ASKED = ("encoder heads", "decoder heads", "cross heads", "encoder residual")
TARGET_SECONDS = 3.0
LENS_TARGET_MS = 20.0  # what the logit lens may add to a decoding step


def lens_cost(bundle, repeats: int) -> None:
    """The logit lens of CLEAN against decoding it step by step: its milliseconds a step and the target ratio."""

    def decode() -> None:
        Stepper(bundle, CLEAN, DecodingOptions(strategy="greedy")).run()

    steps = len(bundle_logit_lens(bundle, CLEAN).chosen_ids)
    lens = best_seconds(lambda: bundle_logit_lens(bundle, CLEAN), repeats) * 1000 / steps
    decoding = best_seconds(decode, repeats) * 1000 / steps
    print(f"\nlogit lens of the clean sentence ({steps} steps): {lens:.1f} ms a step, decoding {decoding:.1f} ms a step")
    print(f"target: the lens adds at most {LENS_TARGET_MS:.0f} ms a step; ratio {lens / LENS_TARGET_MS:.3f} (< 1 meets it)")


def strongest(result, count: int = 6) -> list[list]:
    """The cells of every grid that restore the most, as table rows."""
    cells = []
    for grid in result.grids.values():
        for (row, column), value in np.ndenumerate(grid.values):
            cells.append((abs(float(value)), grid.component, grid.rows[row], grid.columns[column], f"{value:+.3f}"))
    return [list(cell[1:]) for cell in sorted(cells, key=lambda cell: -cell[0])[:count]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--step", type=int, default=None, help="the target step compared, from 1 (default: the first that differs)")
    parser.add_argument("--direction", default="denoising", choices=("denoising", "noising"))
    parser.add_argument("--threads", type=int, default=None, help="torch's CPU threads (default: every core)")
    args = parser.parse_args()
    set_cpu_threads(args.threads)
    bundle = open_model("default")
    step = None if args.step is None else args.step - 1
    setup = prepare_bundle_patching(bundle, CLEAN, CORRUPTED, step)
    result = patch_grids(setup, "exact", args.direction)
    cells = sum(grid.values.size for grid in result.grids.values())
    asked_cells = sum(result.grids[name].values.size for name in ASKED)
    print(
        f"default model ({bundle.config.describe()}), {len(result.labels.clean)} source pieces, {torch.get_num_threads()} "
        f"threads; step {result.step + 1}: {result.labels.clean_token!r} against {result.labels.compared_token!r} "
        f"(logit differences {result.clean_metric:.2f} clean, {result.corrupted_metric:.2f} corrupted)"
    )
    asked = f"asked grids ({asked_cells} cells)"
    times = {
        "reference runs": best_seconds(lambda: prepare_bundle_patching(bundle, CLEAN, CORRUPTED, step), args.repeats),
        asked: best_seconds(lambda: patch_grids(setup, "exact", args.direction, ASKED), args.repeats),
        f"every grid ({cells} cells)": best_seconds(lambda: patch_grids(setup, "exact", args.direction), args.repeats),
        "attribution, every grid": best_seconds(lambda: patch_grids(setup, "attribution", args.direction), args.repeats),
    }
    asked_total = times["reference runs"] + times[asked]
    rows = [[name, f"{seconds * 1000:.1f}"] for name, seconds in times.items()]
    rows.append(["reference + asked grids", f"{asked_total * 1000:.1f}"])
    print_table(["what", "ms"], rows)
    ratio = asked_total / TARGET_SECONDS
    print(f"target: reference runs + asked grids within {TARGET_SECONDS:.0f} s; ratio {ratio:.3f} (< 1 meets it)")
    print(f"\n{args.direction}: the cells that move the metric most (1 = the clean run's value, 0 = the corrupted run's)")
    print_table(["grid", "row", "column", "value"], strongest(result))
    assert set(result.grids) == set(COMPONENTS)
    lens_cost(bundle, args.repeats)


if __name__ == "__main__":
    main()
