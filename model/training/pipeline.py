"""From a corpus to a trainable bundle: split it, train tokenizers on its training split, size the model of
the chosen family (model/nn/registry.py): the Transformer or an RNN with attention on translation pairs, the
encoder-only classifier on a tagging or sentence-classification corpus.

This is the one path the command line, the GUI's training tab and the tests take, so a model
trained anywhere is built the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from model.data.corpora import CorpusError, CorpusSpec, Splits, label_names, load_corpus
from model.data.corpora.symbolic import TASKS as SYMBOLIC_TASKS
from model.data.tokenizer import Tokenizer
from model.family import families, family_named
from model.io.checkpoint import ModelBundle
from model.nn.registry import build_network


@dataclass
class TokenizerOptions:
    vocab_size: int = 2000  # SentencePiece pieces (a soft limit: small corpora may give fewer)
    target_vocab_size: int | None = None  # only with joint=False; defaults to vocab_size
    joint: bool = True  # one tokenizer for both languages, which lets all embeddings be shared
    model_type: str = "auto"  # unigram, bpe, word, char; auto = word for symbol tasks, else unigram

    def to_dict(self) -> dict:
        return asdict(self)


def train_tokenizers(splits: Splits, options: TokenizerOptions, corpus: CorpusSpec | None = None, labelled: bool = False):
    """A joint tokenizer, or one per side; a classifier's reads only the texts (its labels are classes)."""
    model_type = options.model_type
    if model_type == "auto":
        model_type = "word" if corpus is not None and corpus.is_builtin and corpus.name in SYMBOLIC_TASKS else "unigram"
    sources = [p.source for p in splits.train]
    targets = [p.target for p in splits.train]
    if labelled:
        tokenizer = Tokenizer.train(sources, options.vocab_size, model_type)
        return tokenizer, tokenizer
    if options.joint:
        tokenizer = Tokenizer.train(sources + targets, options.vocab_size, model_type)
        return tokenizer, tokenizer
    return (
        Tokenizer.train(sources, options.vocab_size, model_type),
        Tokenizer.train(targets, options.target_vocab_size or options.vocab_size, model_type),
    )


def prepare(
    corpus: CorpusSpec,
    tokenizer_options: TokenizerOptions,
    model_options: dict,
    seed: int = 0,
    splits: Splits | None = None,
    report=None,
    family: str = "transformer",
) -> tuple[ModelBundle, Splits]:
    """Load and split the corpus (unless ``splits`` holds it already), train tokenizers, and build an
    untrained model of ``family``. ``model_options`` holds its config's fields other than the vocabulary
    sizes (and a classifier's classes and task, which the corpus gives). ``report(text)`` hears each stage
    as it begins (the Train tab shows them).
    """
    report = report or (lambda text: None)
    check_family_fits(family, corpus)
    if splits is None:
        size = f"{corpus.size:,} " if corpus.is_builtin and corpus.size else ""
        report(f"{'Generating' if corpus.is_builtin else 'Reading'} {size}{corpus.describe()} pairs…")
        splits = load_corpus(corpus)
    report(f"Training the tokenizer ({tokenizer_options.vocab_size:,} pieces at most) on {len(splits.train):,} pairs…")
    labelled = family_named(family).capabilities.labels
    source_tokenizer, target_tokenizer = train_tokenizers(splits, tokenizer_options, corpus, labelled)
    report("Building the model…")
    config = model_config(
        family, model_options, source_tokenizer.vocab_size, target_tokenizer.vocab_size, tokenizer_options.joint, corpus, splits
    )
    torch.manual_seed(seed)
    model = build_network(config)
    bundle = ModelBundle(
        model,
        source_tokenizer,
        target_tokenizer,
        corpus,
        history={"steps": [], "validations": [], "tokenizer": tokenizer_options.to_dict()},
    )
    return bundle, splits


def check_family_fits(family: str, corpus: CorpusSpec) -> None:
    """A translation corpus trains an encoder-decoder; a tagging or classification corpus, the classifier."""
    if corpus.task not in family_named(family).tasks:  # (an unknown family's FamilyError first)
        wanted = " or ".join(f.name for f in families() if f.capabilities.trainable and corpus.task in f.tasks)
        raise CorpusError(
            f"{corpus.describe()} is a {corpus.task} corpus, which the {family} family cannot learn; train a {wanted} model on it"
        )


def model_config(family: str, options: dict, source_vocab: int, target_vocab: int, joint: bool, corpus: CorpusSpec, splits: Splits):
    """The family's config from the user's options and what the corpus and tokenizers fix."""
    spec = family_named(family)
    labels = None
    if spec.capabilities.labels:  # a tag per word, or a class per sentence: the corpus names them
        labels = ("tagging" if corpus.task == "tagging" else "sentence", label_names(splits.train, corpus.task))
    return spec.build_config(options, source_vocab, target_vocab, joint, labels)
