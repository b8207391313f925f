"""The length experiment at the size issue 42 names: all six positional schemes trained on ``copy`` (lengths 1–20, the
same seed, data and steps) and read at every length up to 60, on this machine's cores, against a 15-minute budget.

Prints each scheme's exact match over the trained lengths and beyond them, the longest length it still copies at 90%,
its seconds, and the total against the budget (a ratio); writes the table (CSV) and the curves (PDF and PNG) to
``--out`` (a folder), with each scheme's model beside them. ``--corpus sort`` runs the same on sort (whose answer does
not depend on the source's order: the one task a model without positions can learn).

    python benchmarks/lengths.py [--corpus copy] [--steps 2500] [--out benchmarks/lengths_results]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from model.cli.lengths import summary_lines
from model.figures.lengths import save_lengths
from model.lengths.experiment import LengthSettings, run_lengths

BUDGET_S = 15 * 60  # issue 42: all six schemes in at most 15 minutes on 2 cores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="copy")
    parser.add_argument("--train-max", type=int, default=20)
    parser.add_argument("--test-max", type=int, default=60)
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--per-length", type=int, default=20)
    parser.add_argument("--out", default="benchmarks/lengths_results")
    args = parser.parse_args()
    settings = LengthSettings(
        corpus=args.corpus, train_max=args.train_max, test_max=args.test_max, steps=args.steps, per_length=args.per_length
    )
    out = Path(args.out)
    started = time.perf_counter()
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 30:
            print(f"  {stage} {done}/{total} ({time.perf_counter() - started:.0f} s)", flush=True)
            last[0] = time.perf_counter()

    result = run_lengths(settings, out / f"{args.corpus}_models", progress)
    seconds = time.perf_counter() - started
    for suffix in (".csv", ".pdf", ".png"):
        save_lengths(result, out / f"{args.corpus}_lengths{suffix}", dpi=200)
    print("\n".join(summary_lines(result)))
    ratio = seconds / BUDGET_S
    verdict = "within" if ratio <= 1 else "OVER"
    print(f"total {seconds / 60:.1f} min for {len(settings.schemes)} schemes: {ratio:.2f} of the 15-minute budget ({verdict})")
    print(f"wrote {out}/{args.corpus}_lengths.csv, .pdf, .png")
    return 0 if ratio <= 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
