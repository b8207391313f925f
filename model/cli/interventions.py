"""``transformer-explorer patch`` and ``transformer-explorer lens``: what happens if we change an activation
(model/interventions/), from the command line.

    transformer-explorer patch --model default --clean "the cat sees the dog" --corrupt "the cats see the dog" --out patch.pdf
    transformer-explorer patch --model default --pair number --out patch.csv          (a generated toy-fr minimal pair)
    transformer-explorer lens --model default --text "the black cat sees the small dog" --out lens.png
    transformer-explorer lens --model default --text "…" --tool attribution --step 3 --out dla.pdf
    transformer-explorer lens --model default --text "…" --tool decoder-lens --out decoder-lens.csv

``patch`` writes every grid (.npz: arrays and labels; .csv: one row per cell) or draws the chosen ones (.png, .svg,
.pdf), and prints the compared tokens and the cells that restore most. ``lens`` writes the logit lens, direct logit
attribution or DecoderLens as a table (.csv) or a figure, and prints a summary.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from model.cli.export import add_figure_arguments, caption_name, figure_options
from model.cli.options import CommandError, language_arguments, with_languages
from model.cli.recorded import lens_record, patch_record
from model.figures.interventions import attribution_figure, decoder_lens_figure, lens_figure, patching_figure, patching_panel
from model.figures.saving import save_figure
from model.files import check_output
from model.interventions.decoder_lens import bundle_decoder_lens
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.minimal_pairs import FEATURES, minimal_pairs
from model.interventions.patching import COMPONENTS, DIRECTIONS, METHODS, PatchingResult, activation_patching, attribution_patching
from model.interventions.served_pass import head_classes
from model.interventions.tables import (
    attribution_rows,
    decoder_lens_rows,
    lens_rows,
    patching_arrays,
    patching_rows,
    save_npz,
    write_rows,
)
from model.io.models import model_source, open_model
from model.provenance.embed import write_sidecar

FIGURES = (".png", ".svg", ".pdf")
TOOLS = ("logit-lens", "attribution", "decoder-lens")


def pair_arguments(parser: argparse.ArgumentParser, model_help: str) -> None:
    """``--model`` and the languages, then a clean and a corrupted source (or ``--pair``) and ``--step``: what patching
    and the circuits compare."""
    parser.add_argument("--model", required=True, help=model_help)
    language_arguments(parser)
    parser.add_argument("--clean", help="the clean source sentence")
    parser.add_argument("--corrupt", help="the corrupted source: as many pieces as --clean")
    parser.add_argument("--pair", choices=FEATURES, help="a toy-fr minimal pair instead of --clean/--corrupt")
    parser.add_argument("--pair-index", type=int, default=0, help="which pair of --pair's list (default 0)")
    parser.add_argument("--step", type=int, help="the target step compared, from 1 (default: the first the two differ)")


def add_patch_arguments(parser: argparse.ArgumentParser) -> None:
    pair_arguments(parser, "a model: a file, a shipped model's name, a Hugging Face folder")
    parser.add_argument("--direction", choices=DIRECTIONS, default="denoising", help="clean into corrupted (default) or back")
    parser.add_argument("--method", choices=METHODS, default="exact", help="exact, or attribution (a gradient estimate)")
    parser.add_argument("--grids", help=f"figure: comma-separated, of {', '.join(COMPONENTS)} (default: heads + encoder residual)")
    parser.add_argument("--out", required=True, help="FILE.npz, FILE.csv or a figure FILE.png|svg|pdf")
    add_figure_arguments(parser)


def add_lens_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a model: a file, a shipped model's name, a Hugging Face folder")
    language_arguments(parser)
    parser.add_argument("--text", required=True, help="the sentence, translated greedily (an encoder-only model's: read)")
    parser.add_argument("--tool", choices=TOOLS, default="logit-lens", help="what to read (default logit-lens)")
    parser.add_argument("--step", type=int, default=1, help="attribution figure: the step drawn, from 1 (default 1)")
    parser.add_argument("--top-k", type=int, default=5, help="logit lens: candidates kept per reading (default 5)")
    parser.add_argument("--versus", metavar="TOKEN", help="attribution: the chosen token's logit minus this token's, at --step")
    parser.add_argument("--out", required=True, help="FILE.csv or a figure FILE.png|svg|pdf")
    add_figure_arguments(parser)


def out_suffix(out: str, allowed: tuple[str, ...]) -> str:
    """--out's suffix, lower-cased; a CommandError when it is none of ``allowed`` or names a folder."""
    suffix = Path(out).suffix.lower()
    if suffix not in allowed or Path(out).is_dir():
        raise CommandError(f"--out must end in {', '.join(allowed)}, not {Path(out).name!r}")
    return suffix


def pair_sources(args) -> tuple[str, str, str]:
    """The clean and corrupted sentences, typed or a generated minimal pair, and the line that says the pair with its
    expected change ("" for typed ones): printed with the result, so that a command that fails prints its error
    alone."""
    if args.pair is not None:
        if args.clean is not None or args.corrupt is not None:
            raise CommandError("give --pair or --clean and --corrupt, not both")
        pairs = minimal_pairs(args.pair)
        if not 0 <= args.pair_index < len(pairs):
            raise CommandError(f"--pair-index must be from 0 to {len(pairs) - 1} for {args.pair} pairs, not {args.pair_index}")
        pair = pairs[args.pair_index]
        return pair.clean.source, pair.corrupted.source, f"minimal pair: {pair.describe()}"
    if args.clean is None or args.corrupt is None:
        raise CommandError("give --clean and --corrupt (two sentences of as many pieces), or --pair FEATURE")
    return args.clean, args.corrupt, ""


def _grids(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in COMPONENTS]
    if unknown or not names:
        raise CommandError(f"--grids: {', '.join(unknown) or 'none given'}; choose from {', '.join(COMPONENTS)}")
    return names


def report_patching(result: PatchingResult, top: int = 5) -> None:
    """The tokens compared, both runs' logit differences and the cells that restore most."""
    clean, compared = result.labels.compared()
    print(
        f"{result.labels.where(result.step)}: “{clean}” over “{compared}”, logit difference clean {result.clean_metric:.2f}, "
        f"corrupted {result.corrupted_metric:.2f} ({result.method}, {result.direction})"
    )
    cells = []
    for name in result.grids:
        panel = patching_panel(result, name)  # positions as people read them
        for r, row in enumerate(panel.rows):
            cells += [(float(panel.values[r, c]), name, row, column) for c, column in enumerate(panel.columns)]
    cells.sort(key=lambda cell: -abs(cell[0]))
    for value, name, row, column in cells[:top]:
        print(f"  {name} {row} {column}: {value:.3f}")


def run_patch(args) -> int:
    suffix = out_suffix(args.out, (".npz", ".csv", *FIGURES))
    options = figure_options(args)
    grids = _grids(args.grids)
    clean, corrupted, pair_line = pair_sources(args)
    if args.step is not None and args.step < 1:
        raise CommandError(f"--step counts from 1, not {args.step}")
    model_path = model_source(args.model)
    check_output(args.out, (model_path,) if model_path else ())
    bundle = with_languages(open_model(args.model), args)
    patch = activation_patching if args.method == "exact" else attribution_patching
    step = None if args.step is None else args.step - 1
    result = patch(bundle, clean, corrupted, step=step, direction=args.direction)
    figure = suffix not in (".npz", ".csv")  # the grids drawn matter to a figure only
    record = patch_record(bundle, args.model, result, clean, corrupted, args.step, args.grids if figure else None,
                          options, args.dpi)  # fmt: skip
    if suffix == ".npz":
        save_npz(patching_arrays(result), args.out)
    elif suffix == ".csv":
        write_rows(patching_rows(result), args.out)
    else:
        options.model_name = caption_name(args)
        save_figure(patching_figure(result, grids, options), args.out, args.dpi, record)
    write_sidecar(args.out, record if suffix in (".npz", ".csv") else None)
    if pair_line:
        print(pair_line)
    report_patching(result)
    print(f"wrote {args.out}")
    return 0


def run_lens(args) -> int:
    suffix = out_suffix(args.out, (".csv", *FIGURES))
    options = figure_options(args)
    if not args.text.strip():
        raise CommandError("nothing to read: the sentence is empty")
    if args.top_k < 1 or args.step < 1:
        raise CommandError("--top-k and --step count from 1")
    if args.versus is not None and args.tool != "attribution":
        raise CommandError("--versus is a token compared in the attribution: give --tool attribution")
    model_path = model_source(args.model)
    check_output(args.out, (model_path,) if model_path else ())
    bundle = with_languages(open_model(args.model), args)
    options.model_name = caption_name(args)
    if args.tool == "logit-lens":
        lens = bundle_logit_lens(bundle, args.text, args.top_k)
        _write(suffix, args, lambda: lens_rows(lens), lambda: lens_figure(lens, options, args.text), bundle)
        _report_lens(lens.readings, lens.chosen_ranks, lens.place, lens.predicted)
    elif args.tool == "attribution":
        attribution = bundle_logit_attribution(bundle, args.text)
        count = len(attribution.target_tokens)
        if args.step > count:
            has = {"step": f"the translation has {count} steps", "position": f"the text has {count} pieces"}
            raise CommandError(f"--step {args.step}: {has.get(attribution.place, 'a sentence classifier predicts once: step 1')}")
        if args.versus is not None:
            attribution = bundle_logit_attribution(bundle, args.text, _versus(bundle, args, count, attribution.place != "step"))
        _write(
            suffix,
            args,
            lambda: attribution_rows(attribution),
            lambda: attribution_figure(attribution, args.step - 1, options, args.text),
            bundle,
        )
        print(f"largest remainder {float(np.abs(attribution.remainder).max()):.2g} (the parts sum to each logit)")
    else:
        result = bundle_decoder_lens(bundle, args.text)
        _write(suffix, args, lambda: decoder_lens_rows(result), lambda: decoder_lens_figure(result, options, args.text), bundle)
        for layer, text, logp in zip(result.layers, result.translations, result.total_log_probabilities):
            print(f"{layer}: {text}   (log p {float(logp):.2f})")
    print(f"wrote {args.out}")
    return 0


def _versus(bundle, args, steps: int, classes: bool = False) -> list[int]:
    """Per step, the token whose logit is subtracted: --versus at --step, none elsewhere (-1); ``classes``: an
    encoder-only model's, --versus names one of its head's classes."""
    if classes:
        names = head_classes(bundle.model)
        if args.versus not in names:
            raise CommandError(f"--versus {args.versus!r} is not one of the model's classes: {', '.join(names)}")
        token_id = names.index(args.versus)
    else:
        token_id = bundle.target_tokenizer.piece_to_id(args.versus)
    if token_id is None:
        raise CommandError(f"--versus {args.versus!r} is not a single piece of the target vocabulary")
    compared = [-1] * steps
    compared[args.step - 1] = token_id
    return compared


def _write(suffix: str, args, rows, figure, bundle) -> None:
    """The lens's table or figure, with the record of the command that wrote it."""
    record = lens_record(
        bundle, args.model, args.text, args.tool, args.step, args.top_k, args.versus, figure_options(args), args.dpi
    )
    if suffix == ".csv":
        write_rows(rows(), args.out)
        write_sidecar(args.out, record)
    else:
        save_figure(figure(), args.out, args.dpi, record)


def _report_lens(readings: list[str], ranks: np.ndarray, place: str = "step", predicted: str = "token") -> None:
    """The first reading from which every step's chosen token (every place's prediction) is the top candidate."""
    settled = next((readings[r] for r in range(len(readings)) if bool((ranks[r:] == 0).all())), None)
    which = f"every {place}'s {predicted}" if place != "sentence" else "the sentence's class"
    print(f"{which} is the top candidate from: {settled or 'no reading (not even the last)'}")
