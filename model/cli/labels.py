"""``transformer-explorer classify`` and a classifier's ``evaluate`` report: what an encoder-only tagger or
sentence classifier (model/nn/classifier.py) says about texts, and how right it is on a labelled corpus.

    transformer-explorer classify --model tagger "The small cat sleeps."
    The/DET small/ADJ cat/NOUN sleeps/VERB ./PUNCT
    transformer-explorer classify --model negation --file sentences.txt --json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import cast

from model.cli.options import CommandError, load_bundle
from model.data.corpora.files import CorpusError
from model.data.corpora.files import _read_lines as read_lines
from model.family import Bundle
from model.nn.classifier import EncoderClassifier
from model.training.labelling import predict


def add_classify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a classifier's model file, or a shipped model's name (tagger)")
    parser.add_argument("--file", metavar="PATH", help="classify every non-empty line of a UTF-8 text file")
    parser.add_argument("--json", action="store_true", help="one JSON object per text")
    parser.add_argument("--probabilities", action="store_true", help="each label's probability too")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("text", nargs="*", help="the sentence (or give --file)")


def _texts(args) -> list[str]:
    text = " ".join(args.text).strip()
    if args.file and text:
        raise CommandError("give a sentence or --file, not both")
    if args.file:
        try:
            texts = [line.strip() for line in read_lines(Path(args.file)) if line.strip()]
        except CorpusError as error:
            raise CommandError(str(error)) from None
        if not texts:
            raise CommandError(f"{args.file}: no text to classify")
        return texts
    if not text:
        raise CommandError("nothing to classify: give a sentence or --file")
    return [text]


def print_labels(bundle: Bundle, texts: list[str], as_json: bool = False, probabilities: bool = False) -> None:
    """Each text's labels: ``word/TAG`` for a tagger, ``class<TAB>probability`` for a sentence classifier."""
    device = next(bundle.model.parameters()).device
    classifier = cast(EncoderClassifier, bundle.model)  # its callers asked for the labels capability
    for text, labelled in zip(texts, predict(classifier, bundle.source_tokenizer, texts, device)):
        if as_json:
            print(
                json.dumps(
                    {
                        "text": text,
                        "words": labelled.words,
                        "labels": labelled.labels,
                        "probabilities": [round(p, 6) for p in labelled.probabilities],
                    },
                    ensure_ascii=False,
                )
            )
        elif bundle.config.task == "tagging":
            shown = (
                f"{word}/{label}" + (f"({p:.2f})" if probabilities else "")
                for word, label, p in zip(labelled.words, labelled.labels, labelled.probabilities)
            )
            print(" ".join(shown))
        else:
            print(f"{labelled.labels[0]}\t{labelled.probabilities[0]:.4f}" + (f"\t{text}" if len(texts) > 1 else ""))


def run_classify(args) -> int:
    texts = _texts(args)  # before the model loads
    bundle = load_bundle(args.model, args.device)
    if not bundle.family.capabilities.labels:
        raise CommandError(
            f"{bundle.describe()} is not a classifier; classify reads a tagger or sentence classifier (translate translates)"
        )
    print_labels(bundle, texts, args.json, args.probabilities)
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
