"""Tiny pretrained-layout models of every family, built here with random weights and tokenizers trained on
a few hundred sentences of the built-in toy-fr corpus: for tests, benchmarks and trying the feature on a
machine that has no downloaded model. Nothing touches the network.

    python -m model.pretrained.tiny OUT_FOLDER [--family t5|marian|bart|mbart|m2m100|bert-mlm|bert-classifier|gpt2 ...]

Each family's folder is written by ``save_pretrained`` (model and tokenizer) and opens like any
downloaded model: ``transformer-explorer OUT_FOLDER/t5``. Sizes are tiny unless ``size="base"`` (T5 only:
t5-base's dimensions, for the latency benchmark).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from model.data.corpora import generate_builtin
from model.pretrained.hub import require_transformers

LAYOUTS = ("t5", "marian", "bart", "mbart", "m2m100", "pegasus", "bert-mlm", "bert-classifier", "gpt2")
# Encoder-decoder layouts built with BART's byte-level tokenizer: their configs name the sizes as BART's does.
BART_LIKE = {
    "bart": ("BartConfig", "BartForConditionalGeneration"),
    "mbart": ("MBartConfig", "MBartForConditionalGeneration"),
    "m2m100": ("M2M100Config", "M2M100ForConditionalGeneration"),
    "pegasus": ("PegasusConfig", "PegasusForConditionalGeneration"),
}
VOCAB = 400  # pieces: enough for the toy-fr corpus's words in both languages
TINY = {"d_model": 32, "d_ff": 64, "layers": 2, "heads": 4, "positions": 128}
LABELS = ["negative", "neutral", "positive"]
BART_SIZES = {  # Marian's and BART's configs name the sizes alike
    "d_model": TINY["d_model"],
    "encoder_layers": TINY["layers"],
    "decoder_layers": TINY["layers"],
    "encoder_attention_heads": TINY["heads"],
    "decoder_attention_heads": TINY["heads"],
    "encoder_ffn_dim": TINY["d_ff"],
    "decoder_ffn_dim": TINY["d_ff"],
    "max_position_embeddings": TINY["positions"],
}


def sentences(n: int = 300, seed: int = 7) -> list[str]:
    """English and French sentences of the toy-fr corpus (both sides, so one vocabulary serves)."""
    pairs = generate_builtin("toy-fr", n, seed)
    return [p.source for p in pairs] + [p.target for p in pairs]


def _sentencepiece(texts: list[str], folder: Path, vocab: int, specials: dict[str, Any]) -> Path:
    """Train a unigram SentencePiece model; returns the .model file."""
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    import sentencepiece as spm

    prefix = folder / "spm"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(prefix),
        vocab_size=vocab,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
        **specials,
    )
    return prefix.with_suffix(".model")


def _unigram_fast(model_file: Path, unk_id: int):
    """A `tokenizers` Unigram tokenizer with the SentencePiece model's pieces and scores (as T5's fast one)."""
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    import sentencepiece as spm

    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    vocab = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size())]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Replace(" {2,}", " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    return tokenizer


def _t5(folder: Path, texts: list[str], work: Path, size: str) -> None:
    transformers = require_transformers()
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import processors

    model_file = _sentencepiece(texts, work, VOCAB, {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1})
    fast = _unigram_fast(model_file, unk_id=2)
    fast.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)])
    tokenizer = transformers.T5TokenizerFast(
        tokenizer_object=fast, eos_token="</s>", unk_token="<unk>", pad_token="<pad>", extra_ids=0
    )
    dims = (
        {"d_model": 768, "d_ff": 3072, "num_layers": 12, "num_heads": 12, "d_kv": 64}
        if size == "base"
        else {"d_model": TINY["d_model"], "d_ff": TINY["d_ff"], "num_layers": TINY["layers"], "num_heads": TINY["heads"], "d_kv": 8}
    )
    config = transformers.T5Config(
        vocab_size=len(tokenizer),
        relative_attention_num_buckets=32 if size == "base" else 8,
        relative_attention_max_distance=128 if size == "base" else 20,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
        initializer_factor=1.0 if size == "base" else 2.0,  # tiny random models otherwise repeat one token
        task_specific_params={"translation_en_to_fr": {"prefix": "translate English to French: "}},
        **dims,
    )
    _save(transformers.T5ForConditionalGeneration(config), tokenizer, folder)


def _marian(folder: Path, texts: list[str], work: Path) -> None:
    transformers = require_transformers()
    model_file = _sentencepiece(texts, work, VOCAB, {"pad_id": -1, "eos_id": 0, "unk_id": 1, "bos_id": -1})
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    vocab = {piece: index for index, piece in enumerate(pieces)}
    vocab["<pad>"] = len(vocab)
    (work / "vocab.json").write_text(json.dumps(vocab))
    tokenizer = transformers.MarianTokenizer(
        str(model_file), str(model_file), str(work / "vocab.json"), source_lang="en", target_lang="fr"
    )
    pad = vocab["<pad>"]
    config = transformers.MarianConfig(
        vocab_size=len(vocab),
        **BART_SIZES,
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=None,
        bad_words_ids=[[pad]],
        init_std=0.3,
    )
    _save(transformers.MarianMTModel(config), tokenizer, folder)


def _byte_level(texts: list[str], specials: list[str]):
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(texts, vocab_size=VOCAB, min_frequency=1, special_tokens=specials, show_progress=False)
    return tokenizer


def _bart(folder: Path, texts: list[str], work: Path, layout: str = "bart") -> None:
    """BART, or a layout whose config names its sizes as BART's does (mBART, M2M100, Pegasus), with a byte-level
    tokenizer."""
    transformers = require_transformers()
    _byte_level(texts, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]).save_model(str(work))
    tokenizer = transformers.BartTokenizerFast(vocab_file=str(work / "vocab.json"), merges_file=str(work / "merges.txt"))
    config_class, model_class = (getattr(transformers, name) for name in BART_LIKE[layout])
    config = config_class(
        vocab_size=len(tokenizer),
        **BART_SIZES,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=None,
        init_std=0.3,
    )
    _save(model_class(config), tokenizer, folder)


def _bert(folder: Path, texts: list[str], work: Path, classifier: bool) -> None:
    transformers = require_transformers()
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(texts, vocab_size=VOCAB, min_frequency=1, show_progress=False)
    wordpiece.save_model(str(work))
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(work / "vocab.txt"), do_lower_case=True)
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=TINY["d_model"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["d_ff"],
        max_position_embeddings=TINY["positions"],
        initializer_range=0.3,
        pad_token_id=tokenizer.pad_token_id,
        id2label=dict(enumerate(LABELS)) if classifier else None,
        label2id={name: i for i, name in enumerate(LABELS)} if classifier else None,
    )
    network = transformers.BertForSequenceClassification(config) if classifier else transformers.BertForMaskedLM(config)
    _save(network, tokenizer, folder)


def _gpt2(folder: Path, texts: list[str], work: Path) -> None:
    transformers = require_transformers()
    _byte_level(texts, ["<|endoftext|>"]).save_model(str(work))
    tokenizer = transformers.GPT2TokenizerFast(vocab_file=str(work / "vocab.json"), merges_file=str(work / "merges.txt"))
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_embd=TINY["d_model"],
        n_layer=TINY["layers"],
        n_head=TINY["heads"],
        n_positions=TINY["positions"],
        initializer_range=0.3,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    _save(transformers.GPT2LMHeadModel(config), tokenizer, folder)


def _save(network, tokenizer, folder: Path) -> None:
    network.eval()
    network.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def build(layout: str, folder: str | Path, seed: int = 0, size: str = "tiny") -> Path:
    """Write a random-weight model of ``layout`` with its tokenizer into ``folder`` (save_pretrained layout)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    texts = sentences()
    with tempfile.TemporaryDirectory() as work:
        if layout == "t5":
            _t5(folder, texts, Path(work), size)
        elif layout == "marian":
            _marian(folder, texts, Path(work))
        elif layout in BART_LIKE:
            _bart(folder, texts, Path(work), layout)
        elif layout == "gpt2":
            _gpt2(folder, texts, Path(work))
        else:
            _bert(folder, texts, Path(work), classifier=layout == "bert-classifier")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.pretrained.tiny", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="folder to write one sub-folder per layout into")
    parser.add_argument("--family", dest="layout", action="append", choices=LAYOUTS, help="only these layouts (default: all)")
    parser.add_argument("--size", choices=("tiny", "base"), default="tiny")
    args = parser.parse_args(argv)
    for layout in args.layout or LAYOUTS:
        print(build(layout, Path(args.out) / layout, size=args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
