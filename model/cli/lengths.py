"""``transformer-explorer lengths``: the length experiment (model/lengths/): one model per positional scheme trained on
sentences up to ``--train-max`` and read at every length up to ``--test-max``; the table (CSV) or the curves (PNG, SVG,
PDF), and each scheme's model file in a folder beside it (``--models``), which the window opens at a sentence."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from model.cli.options import CommandError, stage_progress
from model.cli.recorded import lengths_record
from model.figures.lengths import LENGTH_SUFFIXES, check_lengths_path, save_lengths
from model.files import check_output
from model.lengths import experiment
from model.lengths.experiment import CORPORA, LengthResult, LengthSettings, check_settings
from model.nn.config import TRANSFORMER_POSITIONS


def add_lengths_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = LengthSettings()
    parser.add_argument("--corpus", default=defaults.corpus, help=f"{', '.join(CORPORA)} (default {defaults.corpus})")
    parser.add_argument("--train-max", type=int, default=defaults.train_max, help="the longest training sentence (pieces)")
    parser.add_argument("--train-min", type=int, default=defaults.train_min, help="the shortest training sentence (pieces)")
    parser.add_argument("--test-max", type=int, default=defaults.test_max, help="the longest sentence read (pieces)")
    parser.add_argument(
        "--positions", default="all", metavar="SCHEMES", help=f"all, or some of {','.join(TRANSFORMER_POSITIONS)} (comma-separated)"
    )
    parser.add_argument("--steps", type=int, default=defaults.steps, help=f"training steps per scheme (default {defaults.steps})")
    parser.add_argument("--train-pairs", type=int, default=defaults.train_pairs, help="training sentences")
    parser.add_argument("--per-length", type=int, default=defaults.per_length, help="test sentences per length")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="the data's and every model's seed")
    parser.add_argument("--max-len", type=int, default=None, help="the models' positions (default: the longest test + 12)")
    parser.add_argument(
        "--randomised-positions",
        action="store_true",
        help="train the table schemes (sinusoidal, learned) with randomised positions (Ruoss et al. 2023)",
    )
    parser.add_argument("--out", required=True, help=f"FILE ({', '.join(LENGTH_SUFFIXES)})")
    parser.add_argument("--models", default=None, help="the folder for each scheme's model (default: beside --out)")
    parser.add_argument("--dpi", type=float, default=300, help="a PNG's resolution (default 300)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def settings_from(args: argparse.Namespace) -> LengthSettings:
    """The experiment's settings from the arguments (a CommandError, in one line, for a scheme it does not know)."""
    schemes = TRANSFORMER_POSITIONS if args.positions.strip() == "all" else tuple(s.strip() for s in args.positions.split(","))
    return LengthSettings(
        corpus=args.corpus,
        train_max=args.train_max,
        test_max=args.test_max,
        schemes=tuple(dict.fromkeys(s for s in schemes if s)),
        steps=args.steps,
        train_pairs=args.train_pairs,
        per_length=args.per_length,
        seed=args.seed,
        train_min=args.train_min,
        max_len=args.max_len,
        randomised=args.randomised_positions,
    )


def run_lengths(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    check_settings(settings)
    try:
        check_lengths_path(args.out)
    except Exception as error:  # noqa: BLE001 - the figure module's message, as the command's
        raise CommandError(f"--out: {error}") from None
    out = check_output(args.out)
    folder = Path(args.models) if args.models else out.with_name(f"{out.stem}_models")
    if folder.exists() and not folder.is_dir():
        raise CommandError(f"--models {folder}: is a file, not a folder")
    with stage_progress(args.quiet) as progress:
        bars: dict[str, object] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in bars:
                bars[stage] = progress(stage, "step" if stage.endswith("training") else "length")
            bars[stage](done, total)  # type: ignore[operator]

        result = experiment.run_lengths(settings, folder, report)
    save_lengths(result, out, args.dpi, lengths_record(settings, args.dpi))
    print("\n".join(summary_lines(result)))
    print(f"wrote {out} (models in {folder})", file=sys.stderr if args.quiet else sys.stdout)
    return 0


def summary_lines(result: LengthResult) -> list[str]:
    """Per scheme: exact match over the trained lengths and beyond them, and the longest length still right at 90%."""
    lines = [f"{'scheme':<11} {'trained':>8} {'beyond':>8} {'longest at 90%':>15} {'seconds':>8}"]
    for scheme in result.settings.schemes:
        rows = result.of(scheme)
        trained = _mean([row.exact_match for row in rows if row.trained])
        beyond = _mean([row.exact_match for row in rows if not row.trained])
        good = [row.length for row in rows if row.exact_match >= 0.9]
        longest = str(max(good)) if good else "—"
        lines.append(f"{scheme:<11} {trained:>8} {beyond:>8} {longest:>15} {result.seconds[scheme]:>8.0f}")
    return lines


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "—"
