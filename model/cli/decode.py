"""``translate``, ``evaluate`` and ``trace``: decode with a model of any family, score it on a test set, write a
sentence's full attention trace."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from model.cli.labels import print_labels, report_label_scores
from model.cli.options import (
    CommandError,
    aer_arguments,
    alpha,
    check_aer_pairs,
    corpus_arguments,
    corpus_spec,
    forces,
    language_arguments,
    load_bundle,
    mask_heads_argument,
    positive,
    with_languages,
)
from model.data.corpora import BUILTIN_CORPORA, CorpusSpec, evaluation_pairs, generate_builtin
from model.data.token_labels import display_mask_candidate
from model.data.tokenizer import unknown_note
from model.decoding.beam import BeamTree, beam_search
from model.decoding.greedy import greedy_decode
from model.decoding.stepper import DecodingOptions, Stepper
from model.decoding.trace import Trace
from model.family import Architecture, Bundle
from model.files import check_output
from model.inspection.alignment import aer_corpus, aer_where, measured_aer
from model.inspection.heads import all_head_statistics
from model.io.models import model_source
from model.network import DecodingNetwork
from model.nn.masking import masked_model, parse_heads
from model.training.evaluation import score


def add_translate_arguments(translate: argparse.ArgumentParser) -> None:
    translate.add_argument("--model", required=True, help="model file, or a shipped model's name (default)")
    language_arguments(translate)
    translate.add_argument("--beam", type=int, default=1, help="beam width (1 = greedy)")
    translate.add_argument("--alpha", type=float, default=0.6, help="beam length penalty")
    translate.add_argument("--device", default="cpu")
    mask_heads_argument(translate)
    translate.add_argument("text", nargs="+", help="the sentence")


def add_evaluate_arguments(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument("--model", required=True)
    language_arguments(evaluate)
    corpus_arguments(evaluate)
    evaluate.add_argument("--n", type=int, help="score N freshly generated pairs of a built-in corpus")
    evaluate.add_argument("--seed", type=int, default=12345, help="generation seed for --n")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.add_argument("--device", default="cpu")
    aer_arguments(evaluate, none=True)


def add_trace_arguments(trace: argparse.ArgumentParser) -> None:
    trace.add_argument("--model", required=True)
    language_arguments(trace)
    trace.add_argument("--text", required=True, help="the source sentence")
    strategy = trace.add_mutually_exclusive_group()
    strategy.add_argument("--beam", type=int, help="beam search of this width (the best hypothesis is traced)")
    strategy.add_argument("--sample", action="store_true", help="sample instead of greedy")
    trace.add_argument("--temperature", type=float, default=1.0)
    trace.add_argument("--top-k", type=int, default=0)
    trace.add_argument("--top-p", type=float, default=1.0)
    trace.add_argument("--seed", type=int, default=0)
    trace.add_argument("--alpha", type=float, default=0.6, help="beam length penalty")
    trace.add_argument(
        "--force",
        action="append",
        default=[],
        metavar="STEP:TOKEN",
        help="what-if: make step STEP (1-based) produce TOKEN (a target piece or word); repeatable",
    )
    trace.add_argument("--max-steps", type=int, help="stop after this many target tokens")
    trace.add_argument("--word-level", action="store_true", help="also store word-level matrices (word_*)")
    trace.add_argument("--out", required=True, metavar="FILE.npz")
    trace.add_argument("--device", default="cpu")
    mask_heads_argument(trace)


def _print_encoder_predictions(trace) -> None:
    """What an encoder-only model's head says: each mask's candidates, or the class probabilities."""
    for position, tokens, probabilities in zip(
        trace.mask_positions, trace.mask_candidate_tokens, trace.mask_candidate_probabilities
    ):
        shown = ", ".join(f"{display_mask_candidate(t)} {p:.3f}" for t, p in zip(tokens[:5], probabilities[:5]))
        print(f"mask at piece {int(position) + 1}: {shown}")
    if trace.class_probabilities.ndim == 1 and trace.class_probabilities.size:
        for name, probability in sorted(zip(trace.class_names, trace.class_probabilities), key=lambda item: -item[1]):
            print(f"{name}\t{probability:.4f}")
    if not trace.mask_positions.size and not trace.class_probabilities.size:
        print("this encoder-only model has no head to read; `trace` and `export` show its attention")


def run_translate(args) -> int:
    positive("beam", args.beam)
    alpha(args.alpha)
    heads = parse_heads(args.mask_heads)
    bundle = with_languages(load_bundle(args.model, args.device), args)
    text = " ".join(args.text)
    if not text.strip():
        raise CommandError("nothing to translate: the sentence is empty")
    can = bundle.family.capabilities
    if can.labels:
        print_labels(bundle, [text])
        return 0
    if can.architecture is not Architecture.ENCODER_DECODER:  # a prompt to continue, or a text the head reads
        stepper = Stepper(bundle, text)
        stepper.run()
        for message in stepper.messages:
            print(f"note: {message}", file=sys.stderr)
        if can.architecture.has_decoder:
            print(stepper.translation())
        else:
            _print_encoder_predictions(stepper.trace())
        return 0
    ids, n_pieces, kept = bundle.source_ids(text)
    if n_pieces > kept:
        print(f"note: the sentence has {n_pieces} pieces; only the first {kept} fit this model", file=sys.stderr)
    unknown = unknown_note(bundle.source_tokenizer, ids, kept)
    if unknown:
        print(f"note: {unknown}", file=sys.stderr)
    source = torch.tensor([ids], device=next(bundle.model.parameters()).device)
    model = cast(DecodingNetwork, masked_model(bundle.model, heads))  # an encoder-only model has returned above
    if args.beam > 1:
        output = beam_search(model, source, args.beam, args.alpha).best
    else:
        output = greedy_decode(model, source)[0]
    print(bundle.target_tokenizer.decode(output))
    return 0


def _alignment_fields(bundle: Bundle, args, evaluated: CorpusSpec | None) -> dict[str, Any]:
    """The best cross-attention head's AER on ``--aer-pairs`` held-out pairs drawn with ``--aer-seed`` (the app's one
    definition, model/inspection/alignment.py), with what it was measured on; nothing without gold alignments."""
    if not args.aer_pairs:
        return {}
    report = measured_aer(bundle, args.aer_pairs, args.aer_seed, aer_corpus(bundle, evaluated))
    if report is None or not report.n_pairs:
        return {}
    aer, layer, head, reading = report.best
    return dict(
        aer=round(aer, 6),
        aer_head={"layer": layer + 1, "head": head + 1, "rows": reading},
        aer_layer_average=round(report.best_layer[0], 6),  # the best layer's mean over heads (model/inspection/alignment.py)
        aer_pairs=report.n_pairs,
        aer_seed=report.seed,
        aer_corpus=report.corpus,
        aer_split="test",
    )


def run_evaluate(args) -> int:
    positive("n", args.n)
    check_aer_pairs(args, none=True)
    evaluated = CorpusSpec(args.corpus) if args.target is None and args.corpus in BUILTIN_CORPORA else None
    bundle = with_languages(load_bundle(args.model, args.device), args)
    can = bundle.family.capabilities
    labelled = can.labels
    if can.architecture is not Architecture.ENCODER_DECODER and not labelled:
        raise CommandError(f"evaluate scores translations, and {bundle.describe()} is not an encoder-decoder model")
    if args.n is not None:
        if args.target is not None or args.corpus not in BUILTIN_CORPORA:
            raise CommandError(f"--n generates fresh pairs and needs a built-in corpus ({', '.join(BUILTIN_CORPORA)})")
        pairs = generate_builtin(args.corpus, args.n, args.seed)
        what = f"{args.n} fresh {args.corpus} pairs (seed {args.seed})"
    else:
        spec = corpus_spec(args)
        pairs, what = evaluation_pairs(spec, bundle.corpus)
        if not pairs:
            raise CommandError(f"{spec.describe()}: the test split is empty; the corpus is too small")
    scores = score(
        bundle.model,
        bundle.source_tokenizer,
        bundle.target_tokenizer,
        pairs,
        next(bundle.model.parameters()).device,
        encode=lambda text: bundle.source_ids(text)[0],
    )
    if labelled:
        return report_label_scores(scores, what, args.json)
    result: dict[str, Any] = {
        "exact_match": round(scores.exact_match, 6),
        "bleu": round(scores.bleu, 4),
        "token_accuracy": None if math.isnan(scores.token_accuracy) else round(scores.token_accuracy, 6),
        "n": scores.n,
    }
    result.update(_alignment_fields(bundle, args, evaluated))
    if args.json:
        print(json.dumps(result))
    else:
        accuracy = (
            "n/a (a pretrained model is scored on its translations)"
            if math.isnan(scores.token_accuracy)
            else f"{scores.token_accuracy:.4f}"
        )
        line = f"{what}: exact match {scores.exact_match:.4f}, BLEU {scores.bleu:.2f}, token accuracy {accuracy}"
        if "aer" in result:
            head = result["aer_head"]
            where = aer_where(result["aer_corpus"], result["aer_pairs"], result["aer_seed"])
            line += f"; best cross-attention head layer {head['layer']} head {head['head']}: AER {result['aer']:.3f} on {where}"
        print(line)
    return 0


def _trace_extras(trace: Trace, word_level: bool) -> dict[str, np.ndarray]:
    """The head statistics (roles, entropy) of every kind, and the word-level matrices when asked."""
    extra: dict[str, np.ndarray] = {}
    for kind, table in all_head_statistics(trace).items():
        extra[f"{kind.field}_roles"] = np.array([[s.role for s in layer] for layer in table], dtype=str)
        extra[f"{kind.field}_entropy"] = np.array([[s.entropy for s in layer] for layer in table], dtype=np.float32)
    if word_level:
        words = trace.word_level()
        for kind in words.kinds:
            extra[f"word_{kind.field}"] = words.matrix(kind)
        extra.update(
            word_source_tokens=np.array(words.source_tokens, dtype=str),
            word_target_tokens=np.array(words.target_tokens, dtype=str),
            word_decoder_input_tokens=np.array(words.decoder_input_tokens, dtype=str),
        )
    return extra


def _beam_fields(beam: BeamTree, alpha: float) -> dict[str, np.ndarray]:
    """The beam's tree and hypotheses as arrays, with how its scores were computed."""
    nodes = beam.nodes
    return dict(
        beam_token_ids=np.array([n.token_id for n in nodes], dtype=np.int64),
        beam_parents=np.array([n.parent for n in nodes], dtype=np.int64),
        beam_steps=np.array([n.step for n in nodes], dtype=np.int64),
        beam_scores=np.array([n.score for n in nodes], dtype=np.float32),
        beam_log_probabilities=np.array([n.log_probability for n in nodes], dtype=np.float32),
        beam_length_penalty_alpha=np.array(alpha, dtype=np.float64),
        beam_score_note=np.array(
            "score = log p / ((5 + length) / 6) ** alpha (GNMT length "
            "normalisation); log p is the hypothesis' summed log probability"
        ),
        beam_hypotheses=np.array(beam.hypotheses, dtype=np.int64),
    )


def run_trace(args) -> int:
    # Every option and the output are checked before the model loads and decoding starts.
    positive("beam", args.beam)
    positive("max-steps", args.max_steps)
    alpha(args.alpha)
    strategy = "beam" if args.beam is not None else "sample" if args.sample else "greedy"
    options = DecodingOptions(
        strategy=strategy,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
        beam_width=args.beam or 4,
        length_penalty=args.alpha,
        max_steps=args.max_steps,
        masked_heads=parse_heads(args.mask_heads),
    )
    options.validate()  # its messages name the option: temperature, top-p, top-k, seed
    forced = forces(args.force)
    model_path = model_source(args.model)
    if Path(args.out).suffix.lower() != ".npz" and str(args.out).strip() and not Path(args.out).is_dir():
        raise CommandError(f"--out must end in .npz, not {Path(args.out).name!r}")
    check_output(args.out, (model_path,) if model_path else ())
    bundle = with_languages(load_bundle(args.model, args.device), args)
    stepper = Stepper(bundle, args.text, options)
    for message in stepper.messages:
        print(f"note: {message}", file=sys.stderr)
    for step_number, token in forced:
        stepper.force(step_number - 1, stepper.token_id(token))
    stepper.run()
    trace = stepper.trace()
    extra = _trace_extras(trace, args.word_level)
    if stepper.beam is not None:
        extra.update(_beam_fields(stepper.beam, args.alpha))
    trace.save_npz(args.out, extra)
    print(f"{trace.n_steps} steps: {stepper.translation()}")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0
