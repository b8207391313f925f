"""From a corpus to a trainable bundle: split it, train tokenizers on its training split, size the model.

This is the one path the command line, the GUI's training tab and the tests take, so a model
trained anywhere is built the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from model.data.corpora import CorpusSpec, Splits, load_corpus
from model.data.corpora.symbolic import TASKS as SYMBOLIC_TASKS
from model.data.tokenizer import Tokenizer
from model.io.checkpoint import ModelBundle
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer


@dataclass
class TokenizerOptions:
    vocab_size: int = 2000  # SentencePiece pieces (a soft limit: small corpora may give fewer)
    target_vocab_size: int | None = None  # only with joint=False; defaults to vocab_size
    joint: bool = True  # one tokenizer for both languages, which lets all embeddings be shared
    model_type: str = "auto"  # unigram, bpe, word, char; auto = word for symbol tasks, else unigram

    def to_dict(self) -> dict:
        return asdict(self)


def train_tokenizers(splits: Splits, options: TokenizerOptions, corpus: CorpusSpec | None = None):
    model_type = options.model_type
    if model_type == "auto":
        model_type = "word" if corpus is not None and corpus.is_builtin and corpus.name in SYMBOLIC_TASKS else "unigram"
    sources = [p.source for p in splits.train]
    targets = [p.target for p in splits.train]
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
) -> tuple[ModelBundle, Splits]:
    """Load and split the corpus (unless ``splits`` holds it already), train tokenizers, and build an
    untrained model. ``model_options`` holds TransformerConfig fields other than the vocabulary sizes.
    ``report(text)`` hears each stage as it begins (the Train tab shows them).
    """
    import torch

    report = report or (lambda text: None)
    if splits is None:
        size = f"{corpus.size:,} " if corpus.is_builtin and corpus.size else ""
        report(f"{'Generating' if corpus.is_builtin else 'Reading'} {size}{corpus.describe()} pairs…")
        splits = load_corpus(corpus)
    report(f"Training the tokenizer ({tokenizer_options.vocab_size:,} pieces at most) on {len(splits.train):,} pairs…")
    source_tokenizer, target_tokenizer = train_tokenizers(splits, tokenizer_options, corpus)
    report("Building the model…")
    config = TransformerConfig(
        source_vocab_size=source_tokenizer.vocab_size,
        target_vocab_size=target_tokenizer.vocab_size,
        joint_vocab=tokenizer_options.joint,
        **model_options,
    )
    torch.manual_seed(seed)
    model = Transformer(config)
    bundle = ModelBundle(
        model,
        source_tokenizer,
        target_tokenizer,
        corpus,
        history={"steps": [], "validations": [], "tokenizer": tokenizer_options.to_dict()},
    )
    return bundle, splits
