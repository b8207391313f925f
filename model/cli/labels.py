"""``transformer-explorer classify`` and a classifier's ``evaluate`` report: what an encoder-only tagger or
sentence classifier (model/nn/classifier.py) says about texts, and how right it is on a labelled corpus.

    transformer-explorer classify --model tagger "The small cat sleeps."
    The/DET small/ADJ cat/NOUN sleeps/VERB ./PUNCT
    transformer-explorer classify --model negation --file sentences.txt --json

A file's lines are read as they are classified (model/data/lines.py), a batch at a time, and each batch's results
are printed at once: a long file shows its first results within seconds, with a progress bar on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import cast

from tqdm import tqdm

from model.cli.options import CommandError, load_bundle
from model.data.lines import TextLines
from model.family import Bundle
from model.network import LabellingNetwork
from model.training.labelling import Labelled, predict

BATCH = 32  # texts classified in one forward pass, and printed together


def add_classify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a classifier's model file, or a shipped model's name (tagger)")
    parser.add_argument(
        "--file", metavar="PATH", help="classify every non-empty line of a UTF-8 text file (each result printed as it is ready)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per text")
    parser.add_argument("--probabilities", action="store_true", help="each label's probability too")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (--file)")
    parser.add_argument("text", nargs="*", help="the sentence (or give --file)")


def _file_texts(lines: TextLines) -> Iterator[str]:
    """The file's non-blank lines, stripped, as they are read."""
    for line in lines:
        if line.strip():
            yield line.strip()
    if not lines.saw_text:
        raise CommandError(f"{lines.path}: the file is empty")


def _texts(args) -> tuple[list[str], Iterator[str], TextLines | None]:
    """(the first two texts, the rest as they are read, the file's lines when --file): the file is checked and its
    first lines read before the model loads, the rest only as the results are printed."""
    text = " ".join(args.text).strip()
    if args.file and text:
        raise CommandError("give a sentence or --file, not both")
    if not args.file:
        if not text:
            raise CommandError("nothing to classify: give a sentence or --file")
        return [text], iter(()), None
    lines = TextLines(args.file, "text file", CommandError)
    rest = _file_texts(lines)
    first = list(islice(rest, 2))
    if not first:
        raise CommandError(f"{args.file}: no text to classify")
    return first, rest, lines


def _line(bundle: Bundle, text: str, labelled: Labelled, as_json: bool, probabilities: bool, many: bool) -> str:
    """One text's labels: ``word/TAG`` for a tagger, ``class<TAB>probability`` for a sentence classifier."""
    if as_json:
        return json.dumps(
            {
                "text": text,
                "words": labelled.words,
                "labels": labelled.labels,
                "probabilities": [round(p, 6) for p in labelled.probabilities],
            },
            ensure_ascii=False,
        )
    if labelled.tagging:
        return " ".join(
            f"{word}/{label}" + (f"({p:.2f})" if probabilities else "")
            for word, label, p in zip(labelled.words, labelled.labels, labelled.probabilities)
        )
    return f"{labelled.labels[0]}\t{labelled.probabilities[0]:.4f}" + (f"\t{text}" if many else "")


def print_labels(
    bundle: Bundle,
    texts: Iterable[str],
    as_json: bool = False,
    probabilities: bool = False,
    many: bool | None = None,
    on_printed: Callable[[int], None] | None = None,
) -> None:
    """Each text's labels, printed (and flushed) a batch at a time as they are ready, so a long input shows its first
    results at once; ``many``: a sentence class is followed by its text (default: when there is more than one text).
    ``on_printed(n)`` after each batch of n printed texts."""
    if many is None:
        texts = list(texts)
        many = len(texts) > 1
    device = next(bundle.model.parameters()).device
    classifier = cast(LabellingNetwork, bundle.model)  # its callers asked for the labels capability
    iterator = iter(texts)
    while batch := list(islice(iterator, BATCH)):
        results = predict(classifier, bundle.source_tokenizer, batch, device)  # one forward pass
        lines = [_line(bundle, text, labelled, as_json, probabilities, many) for text, labelled in zip(batch, results)]
        tqdm.write("\n".join(lines), file=sys.stdout)  # a progress bar on stderr is cleared, then drawn again below
        sys.stdout.flush()
        if on_printed is not None:
            on_printed(len(batch))


def run_classify(args) -> int:
    first, rest, lines = _texts(args)  # the file checked, and its first lines read, before the model loads
    try:
        bundle = load_bundle(args.model, args.device)
        if not bundle.family.capabilities.labels:
            raise CommandError(
                f"{bundle.describe()} is not a classifier; classify reads a tagger or sentence classifier (translate translates)"
            )
        quiet = lines is None or args.quiet
        size = lines.size if lines is not None else 0
        with tqdm(total=size, file=sys.stderr, unit="B", unit_scale=True, desc="classify", leave=False, disable=quiet) as bar:

            def progress(_printed: int) -> None:
                if lines is not None:
                    bar.update(lines.consumed - bar.n)  # the bytes of the lines read so far

            print_labels(bundle, chain(first, rest), args.json, args.probabilities, len(first) > 1, progress)
    finally:
        if lines is not None:
            lines.close()
    return 0


def report_label_scores(scores, what: str, as_json: bool) -> int:
    """A classifier's evaluation: accuracy, exact match, macro-F1 and the F1 of every class."""
    per_class = {name: (None if math.isnan(value) else round(value, 6)) for name, value in scores.per_class_f1.items()}
    if as_json:
        print(
            json.dumps(
                {
                    "accuracy": round(scores.token_accuracy, 6),
                    "exact_match": round(scores.exact_match, 6),
                    "macro_f1": round(scores.macro_f1, 6),
                    "per_class_f1": per_class,
                    "loss": None if math.isnan(scores.loss) else round(scores.loss, 6),
                    "n": scores.n,
                }
            )
        )
        return 0
    print(
        f"{what}: accuracy {scores.token_accuracy:.4f}, macro-F1 {scores.macro_f1:.4f}, "
        f"sentences with every label right {scores.exact_match:.4f}"
    )
    width = max((len(name) for name in per_class), default=5)
    for name, value in per_class.items():
        print(f"  {name:<{width}}  F1 {'n/a (absent)' if value is None else f'{value:.4f}'}", file=sys.stdout)
    return 0
