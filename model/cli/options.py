"""What the commands share: the error they print as one line, checks of options before anything slow, the corpus
options and opening the model a command names."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from model.data.corpora import BUILTIN_CORPORA, CorpusSpec
from model.device import resolve_device
from model.errors import UserError
from model.family import Bundle
from model.inspection.alignment import AER_PAIRS, AER_SEED
from model.io.models import open_model
from model.pretrained.offload import DTYPES, MemoryOptions

TRANSLATION_CORPORA = tuple(name for name in BUILTIN_CORPORA if CorpusSpec(name).task == "translation")


class CommandError(UserError):
    """An error to print as one line."""


def corpus_spec(args, **extra) -> CorpusSpec:
    """The corpus the options name; ``--task`` (where the command has it) says what a file of the user's holds."""
    task = getattr(args, "task", None)
    if args.target is None and args.corpus not in BUILTIN_CORPORA:
        if not Path(args.corpus).exists():
            raise CommandError(f"{args.corpus}: no such file, and not a built-in corpus ({', '.join(BUILTIN_CORPORA)})")
    spec = CorpusSpec(args.corpus, target_path=args.target, skip_malformed=args.skip_malformed, task=task or "translation", **extra)
    if task and spec.task != task:
        raise CommandError(f"--task {task}: {spec.describe()} is a built-in {spec.task} corpus (--task is for your own files)")
    return spec


def positive(name: str, value) -> None:
    if value is not None and value <= 0:
        raise CommandError(f"--{name} must be positive, got {value}")


def alpha(value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise CommandError(f"--alpha must be a number >= 0 (the beam length penalty), got {value}")


def forces(items: list[str]) -> list[tuple[int, str]]:
    """(step number from 1, token) of each --force STEP:TOKEN, checked before the model loads."""
    forces: dict[int, str] = {}
    for item in items:
        step_text, separator, token = item.partition(":")
        step_text = step_text.strip()
        if not separator or not (step_text.isascii() and step_text.isdigit()) or int(step_text) < 1 or not token:
            raise CommandError(f"--force {item!r}: expected STEP:TOKEN with STEP a step number from 1")
        step = int(step_text)
        if step in forces:
            raise CommandError(f"--force: step {step} is given twice ({forces[step]!r} and {token!r}); give one token per step")
        forces[step] = token
    return sorted(forces.items())


def whole_numbers(text: str) -> list[int] | None:
    """The comma-separated whole numbers of ``text`` in ASCII digits ("1, 3" -> [1, 3]); None when a part is anything
    else ('²', '٣', '1_0', '-1', 'x': Python's isdigit() and int() accept some of those)."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not all(part.isascii() and part.isdigit() for part in parts):
        return None
    return [int(part) for part in parts]


def corpus_arguments(
    parser: argparse.ArgumentParser, required: bool = True, translation_only: bool = False, task_option: bool = False
) -> None:
    """``--corpus``, ``--target`` and ``--skip-malformed``, with help that names what the command accepts: only
    translation corpora (``translation_only``), and tagging files only where the command has ``--task``."""
    names = TRANSLATION_CORPORA if translation_only else BUILTIN_CORPORA
    if translation_only:
        forms = "a built-in translation corpus, a TSV file (source TAB target) or the source file of a Moses pair"
    elif task_option:
        forms = (
            "a built-in corpus, a TSV file (source TAB target, or text TAB label), the source file of a Moses pair, "
            "or a tagging file (word/TAG word/TAG ... per line, with --task tagging)"
        )
    else:
        forms = "a built-in corpus, a TSV file (source TAB target, or text TAB label) or the source file of a Moses pair"
    parser.add_argument("--corpus", required=required, metavar="{" + ",".join(names) + ",PATH}", help=forms)
    parser.add_argument("--target", metavar="PATH", help="the target file of a Moses pair (with --corpus SOURCE)")
    parser.add_argument("--skip-malformed", action="store_true", help="skip malformed lines and report how many")


def aer_arguments(parser: argparse.ArgumentParser, none: bool = False) -> None:
    """``--aer-pairs`` and ``--aer-seed``: the held-out pairs every AER is measured on (model/inspection/alignment.py),
    the same options and defaults on every command that reports an AER; ``none``: 0 pairs means no AER."""
    zero = " (0: no AER)" if none else ""
    parser.add_argument(
        "--aer-pairs",
        type=int,
        default=AER_PAIRS,
        metavar="N",
        help=f"AER: N pairs of the test split of the model's corpus, with gold alignments (default {AER_PAIRS}){zero}",
    )
    parser.add_argument(
        "--aer-seed", type=int, default=AER_SEED, metavar="S", help=f"AER: the seed that draws those pairs (default {AER_SEED})"
    )


def check_aer_pairs(args, none: bool = False) -> None:
    """``--aer-pairs`` at least 1 (0 allowed where it means no AER), before anything slow."""
    if args.aer_pairs < (0 if none else 1):
        least = "0 (no alignment error rate) or more" if none else "at least 1"
        raise CommandError(f"--aer-pairs must be {least}, got {args.aer_pairs}")


def load_bundle(name: str, device: str = "cpu") -> Bundle:
    """The app's own model file, a shipped model, or a pretrained model's folder or cached id (model/io/models.py)."""
    return open_model(name, resolve_device(device))


def language_arguments(parser: argparse.ArgumentParser) -> None:
    """``--source-lang`` and ``--target-lang``: a multilingual model's languages (NLLB, M2M100, mBART-50)."""
    parser.add_argument(
        "--source-lang", metavar="CODE", help="a multilingual model's source language (NLLB: eng_Latn; M2M100: en; mBART-50: en_XX)"
    )
    parser.add_argument("--target-lang", metavar="CODE", help="its target language: the code decoding is made to start with")


def with_languages(bundle: Bundle, args: argparse.Namespace) -> Bundle:
    """``bundle`` reading ``--source-lang`` and writing ``--target-lang`` where given (one line for a code it lacks)."""
    bundle.choose_languages(args.source_lang, args.target_lang)
    return bundle


def mask_heads_argument(parser: argparse.ArgumentParser) -> None:
    """``--mask-heads``: the heads a command knocks out (model/nn/masking.py reads the list)."""
    parser.add_argument(
        "--mask-heads",
        metavar="KIND:LAYER:HEAD,...",
        default="",
        help="knock heads out (outputs zeroed), e.g. cross:3:1,encoder:1:2 (from 1)",
    )


@contextmanager
def stage_progress(quiet: bool) -> Iterator[Callable[[str, str], Callable[[int, int], None]]]:
    """A maker of stage progress: each stage's (done, total) moves a tqdm bar of its own on stderr, drawn from its
    first report (nothing when quiet); every bar is closed on the way out, an error's message then has its own line."""
    bars: list[tuple[str, Any]] = []  # (stage, its bar)

    def stage(what: str, unit: str) -> Callable[[int, int], None]:
        def report(done: int, total: int) -> None:
            if not bars or bars[-1][0] != what:
                bars.append((what, tqdm(total=total, desc=what, unit=f" {unit}", file=sys.stderr, disable=quiet, leave=True)))
            bar = bars[-1][1]
            bar.update(done - bar.n)
            if done >= total:
                bar.close()  # the next stage's bar is drawn below it, not beside

        return report

    try:
        yield stage
    finally:
        for _, bar in bars:
            bar.close()


def memory_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-memory``, ``--dtype`` and ``--offload-folder``: how a Hugging Face folder is opened."""
    group = parser.add_argument_group("models larger than memory (a Hugging Face folder)")
    group.add_argument("--max-memory", metavar="SIZE", help="CPU memory the weights may take, e.g. 6GB; beyond it, "
                       "layers are streamed from disk (default: offloaded only when the model would not fit)")  # fmt: skip
    group.add_argument("--dtype", choices=tuple(DTYPES), help="analyse in this type (default float32, exact); "
                       "16-bit results say their precision")  # fmt: skip
    group.add_argument("--offload-folder", metavar="DIR", help="where offloaded layers' converted weights are written "
                       "(default: the system's temporary folder; removed at exit)")  # fmt: skip


def window_arguments(argv: list[str]) -> tuple[list[str], MemoryOptions] | None:
    """``FOLDER [--max-memory SIZE] [--dtype TYPE] [--offload-folder DIR]`` for the window: (the model to open, how to
    open Hugging Face folders); None when ``argv`` is anything else (a command, for the command line to read)."""
    if not argv or argv[0].startswith("-") or not any(item.startswith("--") for item in argv[1:]):
        return None
    parser = argparse.ArgumentParser(prog="transformer-explorer", add_help=False)
    parser.add_argument("model")
    memory_arguments(parser)
    args, rest = parser.parse_known_args(argv)
    if rest:
        return None
    return [args.model], MemoryOptions.parse(args.max_memory, args.dtype, args.offload_folder)
