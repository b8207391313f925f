"""``transformer-explorer train``: prepare a corpus and tokenizers, train, and save one model file.

Nothing slow starts before the options and the output are checked; a run that learned nothing (or
only NaN) writes nothing; the timeline recorded meanwhile (``--timeline N``, ``--no-timeline``) is written beside the
model file (model/io/timeline.py); the first Ctrl-C stops at the next step and saves what was learned, a
second quits without writing, and once the save has begun it completes.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

from model.cli.options import CommandError, corpus_arguments, corpus_spec, positive
from model.data.corpora import CorpusSpec, Splits, load_corpus
from model.device import resolve_device
from model.family import ModelOption, families, trainable_family_names
from model.files import check_output
from model.io import checkpoint
from model.io.timeline import STORAGES, timeline_path
from model.kinds import StopReason
from model.nn.registry import family_named
from model.training.pipeline import TokenizerOptions, check_family_fits
from model.training.presets import Preset, preset_for
from model.training.recording import DEFAULT_SNAPSHOTS, TimelineOptions
from model.training.run import Prepared, TrainingCallbacks, TrainingRequest, train
from model.training.trainer import Progress, TrainingControl, TrainingOptions, Validation, format_duration


def add_train_arguments(train: argparse.ArgumentParser) -> None:
    """The options of ``train``: corpus, output, tokenizer, model (of any family) and training."""
    corpus_arguments(train, task_option=True)
    train.add_argument("--out", required=True, metavar="FILE", help="model file to write (any name)")
    train.add_argument("--corpus-size", type=int, help="pairs to generate for a built-in corpus")
    train.add_argument("--corpus-seed", type=int, default=0, help="generation seed of a built-in corpus")
    train.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    tokens = train.add_argument_group("tokenizer (unset options come from the corpus's preset)")
    tokens.add_argument("--vocab-size", type=int)
    tokens.add_argument("--target-vocab-size", type=int, help="with --separate-vocab")
    tokens.add_argument("--separate-vocab", action="store_true", help="one tokenizer per language")
    tokens.add_argument("--tokenizer-type", default="auto", choices=["auto", "unigram", "bpe", "word", "char"])
    model = train.add_argument_group("model (unset options come from the corpus's preset)")
    model.add_argument(
        "--family",
        choices=list(trainable_family_names()),
        help="transformer (the paper's) or rnn (seed 002's, with attention) for translation; classifier (seed 004's "
        "encoder-only Transformer) for a tagging or labelled-sentence corpus (default: what the corpus is for)",
    )
    model.add_argument(
        "--task",
        choices=["translation", "tagging", "classification"],
        help="what a corpus FILE holds: source TAB target pairs, word/TAG lines, or text TAB label lines",
    )
    for option in all_model_options():
        _add_model_option(model, option)
    options = train.add_argument_group(
        "training (unset options come from the corpus's preset; --epochs or --max-steps replace its time budget)"
    )
    options.add_argument("--epochs", type=int)
    options.add_argument("--max-minutes", type=float, help="time budget; stops cleanly at a step boundary")
    options.add_argument("--max-steps", type=int, help="stop after this many steps")
    options.add_argument("--batch-size", type=int, help="pairs per batch (a cap with --batch-tokens)")
    options.add_argument("--batch-tokens", type=int, help="pieces per batch instead of a pair count")
    options.add_argument("--warmup", type=int, help="warm-up steps")
    options.add_argument("--lr-factor", type=float, help="scales the learning rate")
    options.add_argument(
        "--lr-decay", choices=["rsqrt", "linear"], help="after warm-up: 1/sqrt(step) (the paper) or linear to 0 at the end"
    )
    options.add_argument("--average-steps", type=int, help="keep an average of the weights over ~N steps (0: off)")
    options.add_argument("--valid-every", type=int, help="steps between validations (default: the preset's)")
    options.add_argument("--patience", type=int, help="stop after N validations without a better BLEU")
    options.add_argument(
        "--no-keep-best", action="store_true", help="end with the last weights, not those of the best validation BLEU"
    )
    options.add_argument("--label-smoothing", type=float, default=0.1)
    options.add_argument("--clip-norm", type=float, default=1.0)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--valid-decode", type=int, default=200, help="validation pairs decoded per validation")
    timeline = train.add_argument_group("timeline (snapshots of the weights over training, beside the model file)")
    timeline.add_argument(
        "--timeline",
        type=int,
        default=DEFAULT_SNAPSHOTS,
        metavar="N",
        help="record at most N snapshots, log-spaced and at each validation, the final model included "
        f"(default {DEFAULT_SNAPSHOTS}); written to NAME.timeline.safetensors beside the model",
    )
    timeline.add_argument("--no-timeline", action="store_true", help="record no timeline")
    timeline.add_argument(
        "--timeline-storage",
        choices=list(STORAGES),
        default="float16",
        help="float16 (default), or int8 rows with float16 scales: half the size, for models that are shipped",
    )


def _check_train_numbers(args) -> None:
    """Refuse, before anything slow, numbers that cannot train: NaN, infinite, zero or negative sizes."""
    for name in ("max_minutes", "lr_factor", "label_smoothing", "clip_norm", "dropout"):
        if getattr(args, name) is not None and not math.isfinite(getattr(args, name)):
            raise CommandError(f"--{name.replace('_', '-')} must be a finite number, got {getattr(args, name)}")
    for name in (
        "epochs",
        "batch_size",
        "warmup",
        "max_steps",
        "max_minutes",
        "corpus_size",
        "vocab_size",
        "target_vocab_size",
        "layers",
        "encoder_layers",
        "decoder_layers",
        "d_model",
        "heads",
        "d_ff",
        "max_len",
        "d_embed",
        "hidden",
        "lr_factor",
        "batch_tokens",
        "valid_every",
        "patience",
    ):
        positive(name.replace("_", "-"), getattr(args, name))
    if args.average_steps is not None and args.average_steps < 0:
        raise CommandError(f"--average-steps must be 0 (no averaging) or positive, got {args.average_steps}")
    if not 0 <= args.label_smoothing < 1:
        raise CommandError(f"--label-smoothing must be in [0, 1), got {args.label_smoothing}")
    if args.clip_norm < 0:
        raise CommandError(f"--clip-norm must be 0 (no clipping) or positive, got {args.clip_norm}")
    if args.local_window is not None and args.local_window < 0:
        raise CommandError(f"--local-window must be 0 (global attention) or positive, got {args.local_window}")
    if args.dropout is not None and not 0 <= args.dropout < 1:
        raise CommandError(f"--dropout must be in [0, 1), got {args.dropout}")
    if not args.no_timeline and args.timeline < 2:
        raise CommandError(
            f"--timeline must be at least 2 (the first and the final model), got {args.timeline}; --no-timeline records none"
        )


def describe_length(training: TrainingOptions) -> str:
    if training.max_minutes:
        return f"for {training.max_minutes:g} min" + (f" or {training.max_steps} steps" if training.max_steps else "")
    return f"{training.max_steps} steps" if training.max_steps else f"{training.epochs} epochs"


def _given(values: dict) -> dict:
    """The options the user gave (those left unset come from the preset)."""
    return {name: value for name, value in values.items() if value is not None}


def settings_from(args, preset: Preset) -> tuple[dict, TokenizerOptions, TrainingOptions]:
    """The preset, with every option given on the command line in its place. --epochs or --max-steps
    replace the preset's time budget (a run of that length was asked for)."""
    model_options = {**preset.model, **_model_arguments(args, preset.family)}
    tokenizer = {**preset.tokenizer, **_given(dict(vocab_size=args.vocab_size))}
    tokenizer_options = TokenizerOptions(
        tokenizer["vocab_size"], args.target_vocab_size, not args.separate_vocab, args.tokenizer_type
    )
    training = dict(preset.training)
    if args.epochs is not None or args.max_steps is not None:
        training.pop("max_minutes", None)
    training.update(
        _given(
            dict(
                epochs=args.epochs,
                max_minutes=args.max_minutes,
                max_steps=args.max_steps,
                batch_size=args.batch_size,
                batch_tokens=args.batch_tokens,
                warmup_steps=args.warmup,
                lr_factor=args.lr_factor,
                lr_decay=args.lr_decay,
                average_steps=args.average_steps,
                valid_every=args.valid_every,
                patience=args.patience,
            )
        )
    )
    training.update(
        label_smoothing=args.label_smoothing,
        clip_norm=args.clip_norm,
        seed=args.seed,
        valid_decode_limit=args.valid_decode,
        keep_best=not args.no_keep_best,
    )
    return model_options, tokenizer_options, TrainingOptions.from_dict(training)


def all_model_options() -> list[ModelOption]:
    """Every trainable family's model options, each ``dest`` once (families that share one share its meaning)."""
    seen: dict[str, ModelOption] = {}
    for family in families():
        if family.capabilities.trainable:
            for option in family.options:
                seen.setdefault(option.dest, option)
    return list(seen.values())


def _add_model_option(group, option: ModelOption) -> None:
    """One family option as a flag; unset (None) unless given, so the preset's value stands."""
    if option.type is bool:
        flag = "--no-" + option.dest.replace("_", "-") if option.flag_inverts else option.flag
        group.add_argument(flag, dest=option.dest, action="store_const", const=True, default=None, help=option.help)
        return
    choices = list(option.choices) or None
    group.add_argument(option.flag, dest=option.dest, type=option.type, choices=choices, help=option.help or None)


def _model_arguments(args, family: str) -> dict:
    """The model options given on the command line, named as the family's config names them."""
    spec = family_named(family)
    return spec.config_fields({dest: getattr(args, dest) for dest in spec.option_dests()})


def _check_family_options(args, family: str) -> None:
    """Options of another family are refused rather than silently ignored."""
    own = set(family_named(family).option_dests())
    foreign = [option for option in all_model_options() if option.dest not in own and getattr(args, option.dest) is not None]
    if foreign:
        flags = [("--no-" + o.dest.replace("_", "-")) if o.flag_inverts else o.flag for o in foreign]
        raise CommandError(f"{', '.join(flags)} {'is' if len(flags) == 1 else 'are'} not an option of the {family} family")


def _checked_request(args) -> tuple[CorpusSpec, Splits | None, Preset, dict, TokenizerOptions, TrainingOptions]:
    """Everything ``train`` will use, checked before anything slow: the corpus, its preset for the family, the model,
    tokenizer and training options (a run must not fail at its end, so the output is checked here too)."""
    _check_train_numbers(args)
    resolve_device(args.device)  # a missing device is refused before anything slow
    spec = corpus_spec(args, size=args.corpus_size, seed=args.corpus_seed)
    inputs = (None if spec.is_builtin else args.corpus, args.target)
    check_output(args.out, inputs)  # before the corpus and tokenizers: a run must not be lost at its end
    if not args.no_timeline:
        check_output(timeline_path(args.out), inputs)  # (never args.out itself: another name)
    splits = None
    if not spec.is_builtin:
        splits = load_corpus(spec)  # a file's preset is sized from what it holds
    preset = preset_for(spec.name, splits, args.family, spec.task)
    if spec.is_builtin and spec.size is None:
        spec.size = preset.corpus_size
    _check_family_options(args, preset.family)
    check_family_fits(preset.family, spec)
    model_options, tokenizer_options, training = settings_from(args, preset)
    training.validate()
    vocab = tokenizer_options.vocab_size  # the config's own checks (heads, even d_model) before anything slow:
    family_named(preset.family).build_config(
        model_options, vocab, tokenizer_options.target_vocab_size or vocab, tokenizer_options.joint
    )
    return spec, splits, preset, model_options, tokenizer_options, training


def _progress_bar(quiet: bool) -> tuple[Any, Callable[[Progress], None]]:
    """A tqdm bar on stderr (None when quiet) and the callback that moves it."""
    bar = None if quiet else tqdm(total=1000, file=sys.stderr, bar_format="{percentage:3.0f}%|{bar:24}| {desc}", leave=True)

    def on_progress(progress: Progress) -> None:
        if bar is not None and (progress.step % 5 == 0 or progress.fraction >= 1):
            bar.n = int(progress.fraction * 1000)
            eta = progress.eta_seconds
            bar.set_description_str(
                f"epoch {progress.epoch} step {progress.step} loss {progress.train_loss:.3f} "
                f"acc {progress.token_accuracy:.3f} lr {progress.learning_rate:.2e} "
                f"{progress.tokens_per_second:,.0f} tok/s ETA {format_duration(eta)}"
            )

    return bar, on_progress


def run_train(args) -> int:
    spec, splits, preset, model_options, tokenizer_options, training = _checked_request(args)
    family = preset.family
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    say(f"preset {preset.name}: {preset.why}; training {describe_length(training)}")

    def on_prepared(prepared: Prepared) -> None:
        if prepared.skipped_lines:
            say(f"skipped {prepared.skipped_lines} malformed lines")
        say(
            f"{spec.describe()}: {prepared.train} training, {prepared.valid} validation, {prepared.test} test "
            f"pairs; {prepared.model}; on {prepared.device}"
        )

    control = TrainingControl()
    interrupts: list[int] = []
    saving: list[bool] = []

    def on_interrupt(signum, frame):
        interrupts.append(signum)
        if saving:  # the save has begun: it completes (atomically), then the command ends
            return
        if len(interrupts) > 1:  # a second Ctrl-C before the save: quit without writing
            raise KeyboardInterrupt
        control.cancel()  # the first: stop at the next step and save what was learned

    bar, on_progress = _progress_bar(args.quiet)

    def on_validation(validation: Validation) -> None:
        line = f"epoch {validation.epoch} step {validation.step}: valid {validation.scores.summary()}" + (
            " (best so far)" if validation.best else ""
        )
        (bar.write if bar is not None else say)(line)

    timeline = TimelineOptions(0 if args.no_timeline else args.timeline, args.timeline_storage)
    request = TrainingRequest(spec, tokenizer_options, model_options, training, args.device, splits, family, timeline)
    callbacks = TrainingCallbacks(on_prepared=on_prepared, on_progress=on_progress, on_validation=on_validation)
    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        try:
            outcome = train(request, callbacks, control)
        finally:
            if bar is not None:
                bar.close()
        bundle = outcome.bundle
        if bundle is None:  # nothing learned (or only NaN): an existing file stays as it was
            why = (
                f"{outcome.detail} (try a lower --lr-factor)"
                if outcome.detail
                else f"{outcome.stopped} before the first training step"
            )
            print(f"transformer-explorer train: {why}; nothing was written to {args.out}", file=sys.stderr)
            return 130 if outcome.stopped is StopReason.CANCELLED else 1
        saving.append(True)  # from here Ctrl-C is deferred: the finished model is not thrown away
        _save(bundle, args.out)
    finally:
        signal.signal(signal.SIGINT, previous)
    if outcome.stopped is StopReason.DIVERGED:
        print(
            f"transformer-explorer train: {outcome.detail} (try a lower --lr-factor); saved the model of step "
            f"{outcome.steps}, the last with a finite loss, to {args.out}",
            file=sys.stderr,
        )
        return 1
    what = "interrupted; saved the model trained so far" if outcome.stopped is StopReason.CANCELLED else "saved"
    if "kept_step" in bundle.history:
        best = family_named(family).quality_measure
        what += (":" if outcome.stopped is StopReason.CANCELLED else "") + (
            f" the weights of step {bundle.history['kept_step']} (the best validation {best})"
        )
    say(f"{outcome.stopped} after {outcome.steps} steps; {what} to {args.out}{_timeline_note(bundle, args.out)}")
    return 0


def _timeline_note(bundle, out: str) -> str:
    """``; its timeline (12 snapshots, 34.1 MB) to NAME.timeline.safetensors``, or nothing without one."""
    path = timeline_path(out)
    if bundle.recording is None or not path.is_file():
        return ""
    return f"; its timeline ({len(bundle.recording.snapshots)} snapshots, {path.stat().st_size / 1e6:.1f} MB) to {path}"


def _save(bundle, out: str) -> None:
    """The model and its timeline, as a pair (model/io/pair.py). When the timeline cannot be written (a full disk, a
    file-size limit) the pair is not written; the trained model is then saved alone (an earlier model's timeline
    there removed, so no model stands beside another's timeline), and the one line says so: training is not lost."""
    try:
        checkpoint.save(bundle, out)
    except checkpoint.CheckpointError as error:
        if bundle.recording is None or "was not saved either" not in str(error):
            raise
        bundle.recording = None
        reason = str(error).split("; so ")[0]
        try:
            checkpoint.save(bundle, out)
        except checkpoint.CheckpointError as alone:
            raise CommandError(f"{reason}; the model alone could not be saved either: {alone}") from None
        raise CommandError(f"{reason}; saved the model without its timeline to {out} (an earlier timeline there removed)") from None
