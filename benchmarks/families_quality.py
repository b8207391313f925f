"""Quality of the shipped models of the seeds' other families, measured in one run beside the default Transformer.

- Translation: the RNN with Bahdanau attention (rnn-bahdanau) and the default Transformer on the same fresh
  toy-fr pairs: exact match, BLEU, and the AER of each one's best cross-attention head and of its layer mean.
- Tagging: the shipped tagger's word accuracy, macro-F1 and per-tag F1 on fresh toy-fr-tags sentences, also on
  those whose sentence never occurs in its training split.

    python benchmarks/families_quality.py [--pairs 500] [--sentences 2000] [--seed 12345]
"""

from __future__ import annotations

import argparse
import time

import common  # noqa: F401 - puts the project first on the path
import torch

from model.data.corpora import generate_builtin, load_corpus
from model.inspection.alignment import READINGS, cross_attention_aer
from model.io.models import open_model
from model.training.evaluation import score


def translation_row(name: str, pairs) -> dict:
    bundle = open_model(name)
    started = time.perf_counter()
    scores = score(
        bundle.model,
        bundle.source_tokenizer,
        bundle.target_tokenizer,
        pairs,
        torch.device("cpu"),
        decode_limit=len(pairs),
        n_samples=0,
    )
    report = cross_attention_aer(bundle, pairs)
    predicting = report.ranking("predicting")[0]  # the app's best head (report.best)
    layer, head, aer, reading = min(((*report.ranking(rows)[0], rows) for rows in READINGS), key=lambda row: row[2])
    return {
        "model": name,
        "parameters": bundle.model.parameter_count(),
        "exact match": scores.exact_match,
        "BLEU": scores.bleu,
        "best head AER (predicting rows)": f"{predicting[2]:.3f} (layer {predicting[0] + 1}, head {predicting[1] + 1})",
        "best head AER (either reading)": f"{aer:.3f} (layer {layer + 1}, head {head + 1}, {reading})",
        "best layer-mean AER": f"{float(report.layer_aer.min()):.3f}",
        "pairs aligned": report.n_pairs,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=12345, help="generation seed of the fresh pairs (training used 0)")
    args = parser.parse_args()

    pairs = generate_builtin("toy-fr", args.pairs, args.seed)
    trained = open_model("default").corpus
    seen = {p.source for p in load_corpus(trained).train} if trained is not None else set()
    print(f"translation: {args.pairs} fresh toy-fr pairs (seed {args.seed}); {sum(p.source in seen for p in pairs)} of them")
    print("  also occur in the default model's training split (short sentences recur in a grammar's output)")
    for name in ("default", "rnn-bahdanau"):
        row = translation_row(name, pairs)
        print(
            "  " + "; ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}" for key, value in row.items())
        )

    tagger = open_model("tagger")
    sentences = generate_builtin("toy-fr-tags", args.sentences, args.seed)
    seen = {p.source for p in load_corpus(tagger.corpus).train} if tagger.corpus is not None else set()
    unseen = [p for p in sentences if p.source not in seen]
    for what, subset in (("fresh", sentences), ("fresh and not in its training split", unseen)):
        scores = score(tagger.model, tagger.source_tokenizer, tagger.target_tokenizer, subset, torch.device("cpu"))
        print(
            f"tagger on {len(subset)} {what} toy-fr-tags sentences: word accuracy {scores.token_accuracy:.4f}, "
            f"macro-F1 {scores.macro_f1:.4f}, every word right {scores.exact_match:.3f}"
        )
        print("  F1 per tag: " + ", ".join(f"{tag} {f1:.3f}" for tag, f1 in sorted(scores.per_class_f1.items())))


if __name__ == "__main__":
    main()
