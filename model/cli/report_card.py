"""``transformer-explorer report-card``: grade every attribution reading of a model (model/grading/).

    transformer-explorer report-card --model default --n 100 --out card.pdf
    transformer-explorer report-card --model copy --corpus copy --n 100 --out card.csv --train-shuffled 300

The sentences are N held-out pairs of ``--corpus`` (default: the model's own; a built-in corpus gives pairs with gold
alignments), each graded on its reference at every step (a decoder-only model's: each sentence's second half, continued from
its first). ``--out`` takes a CSV (one row per method) or the one-page
figure (PDF, PNG, SVG); the card is printed as text as well. Progress goes to stderr (not with ``--quiet``).
Data randomisation needs a model trained on shuffled targets: ``--shuffled-model FILE`` (one trained before), or
``--train-shuffled STEPS`` trains one now with the app's trainer.
"""

from __future__ import annotations

import argparse
import sys
import time

from model.cli.export import model_name
from model.cli.options import CommandError, corpus_arguments, corpus_spec, positive, stage_progress
from model.cli.recorded import CardRequest, report_card_record
from model.family import Bundle
from model.figures.report_card import CARD_SUFFIXES, check_card_path, save_card
from model.files import check_output
from model.grading.cases import grading_pairs
from model.grading.grader import PAIRS, CardSettings, grade
from model.grading.methods import CARD_IG_POINTS, METHODS, MethodSettings, method_names
from model.grading.sanity import shuffled_targets_model
from model.io.bundle import own_bundle
from model.io.models import model_source, open_model


def add_report_card_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        help="a model file, a shipped model's name or a Hugging Face folder (encoder-decoder, decoder-only or encoder-only)",
    )
    corpus_arguments(parser, required=False)  # an encoder-decoder's is a translation corpus (grading_pairs says so)
    parser.add_argument("--n", type=int, default=100, metavar="N", help="held-out pairs to grade (default 100)")
    parser.add_argument("--out", required=True, help=f"FILE ({', '.join(CARD_SUFFIXES)})")
    parser.add_argument(
        "--methods", default="", metavar="M,...", help=f"the methods to grade (default every one): {', '.join(method_names())}"
    )
    parser.add_argument(
        "--sanity-pairs", type=int, default=10, metavar="K", help="pairs the sanity checks read (default 10; 0: none)"
    )
    shuffled = parser.add_mutually_exclusive_group()
    shuffled.add_argument("--shuffled-model", metavar="FILE", help="a model trained on shuffled targets: the data randomisation")
    shuffled.add_argument("--train-shuffled", type=int, metavar="STEPS", help="train one on shuffled targets now, for STEPS steps")
    parser.add_argument(
        "--ig-points",
        type=int,
        default=CARD_IG_POINTS,
        help=f"integrated gradients: points per prediction (default {CARD_IG_POINTS})",
    )
    parser.add_argument("--lime-samples", type=int, default=64, help="LIME's samples per sentence (default 64)")
    parser.add_argument("--shap-samples", type=int, default=64, help="KernelSHAP's coalitions per sentence (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="draws the pairs, LIME's and KernelSHAP's samples, the random order")
    parser.add_argument("--dpi", type=float, default=300, help="a PNG's resolution (default 300)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _methods(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        raise CommandError(f"--methods: {', '.join(unknown)} is not a method; choose from {', '.join(method_names())}")
    return names


def _check(args) -> tuple[str, ...]:
    """Everything that can be checked before the model loads."""
    for name in ("n", "ig_points", "lime_samples", "shap_samples", "train_shuffled"):
        positive(name.replace("_", "-"), getattr(args, name))
    if args.sanity_pairs < 0:
        raise CommandError(f"--sanity-pairs must be 0 or more, got {args.sanity_pairs}")
    try:
        check_card_path(args.out)
    except Exception as error:  # noqa: BLE001 - the figure module's message, as the command's
        raise CommandError(f"--out: {error}") from None
    protected = tuple(path for path in (model_source(args.model), args.corpus, args.target, args.shuffled_model) if path)
    check_output(args.out, protected)
    return _methods(args.methods)


def check_shuffled_model(opened: Bundle, opened_shuffled: Bundle, name: str, graded: str) -> None:
    """The model trained on shuffled targets must be the graded model's twin but for its training: of its family, its
    shape (config) and its tokenizers, or its attributions cannot be compared (nor computed on the same pieces)."""
    prefix = f"--shuffled-model {name}"
    bundle, shuffled = own_bundle(opened), own_bundle(opened_shuffled)  # the app's own, opened from model files
    if bundle is None or shuffled is None:
        raise CommandError(f"{prefix}: not one of the app's own models; give one trained like {graded}, on shuffled targets")
    if shuffled.family.name != bundle.family.name:
        raise CommandError(
            f"{prefix}: a {shuffled.family.name} model, not a {bundle.family.name} like {graded}; "
            "the data randomisation check compares two models that differ only in their training targets"
        )
    ours, theirs = bundle.config.to_dict(), shuffled.config.to_dict()
    differing = [key for key in sorted(set(ours) | set(theirs)) if key != "dropout" and ours.get(key) != theirs.get(key)]
    if differing:
        key = differing[0]
        raise CommandError(
            f"{prefix}: its shape differs from {graded}'s ({key} {theirs.get(key)} instead of {ours.get(key)}); "
            "train it with the same model settings, on shuffled targets"
        )
    for side, ours_tokenizer, theirs_tokenizer in (
        ("source", bundle.source_tokenizer, shuffled.source_tokenizer),
        ("target", bundle.target_tokenizer, shuffled.target_tokenizer),
    ):
        if theirs_tokenizer.model_proto != ours_tokenizer.model_proto:
            raise CommandError(
                f"{prefix}: its {side} vocabulary differs from {graded}'s (it reads other pieces); "
                "train it with the same corpus and tokenizer settings, on shuffled targets"
            )


def run_report_card(args) -> int:
    methods = _check(args)
    bundle = open_model(args.model)
    corpus = corpus_spec(args) if args.corpus else None
    corpus, pairs = grading_pairs(bundle, corpus, args.n, args.seed)
    shuffled, note = None, ""
    if args.shuffled_model:
        shuffled, note = open_model(args.shuffled_model), f"the model {model_name(args.shuffled_model)}"
        check_shuffled_model(bundle, shuffled, args.shuffled_model, args.model)
    settings = MethodSettings(args.ig_points, args.lime_samples, args.shap_samples, args.seed)
    started = time.perf_counter()
    with stage_progress(args.quiet) as progress:
        if args.train_shuffled:
            steps = args.train_shuffled
            shuffled = shuffled_targets_model(bundle, steps, args.seed, on_step=progress("shuffled targets", "step"))
            note = f"{steps} steps on shuffled {corpus.name} targets"
        bars = {PAIRS: progress("sentences", "pair"), "sanity": progress("sanity checks", "model")}
        card = grade(
            bundle,
            pairs,
            CardSettings(methods, settings, args.sanity_pairs, shuffled, note),
            corpus=corpus,
            model_name=model_name(args.model),
            progress=lambda stage, done, total: bars[stage](done, total),
        )
    request = CardRequest(args.corpus, args.n, methods, args.sanity_pairs, args.shuffled_model, args.train_shuffled,
                          args.ig_points, args.lime_samples, args.shap_samples, args.seed, args.target,
                          args.skip_malformed)  # fmt: skip
    save_card(card, args.out, args.dpi, report_card_record(bundle, args.model, request, args.dpi))
    print("\n".join(card.lines()))
    print(card.caption())
    timings = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in card.timings.items())
    print(f"wrote {args.out} in {time.perf_counter() - started:.0f} s ({timings})", file=sys.stderr if args.quiet else sys.stdout)
    return 0
