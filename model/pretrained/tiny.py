"""Tiny pretrained-layout models of every family, built here with random weights and tokenizers trained on
a few hundred sentences of the built-in toy-fr corpus: for tests, benchmarks and trying the feature on a
machine that has no downloaded model. Nothing touches the network.

    python -m model.pretrained.tiny OUT_FOLDER [--family LAYOUT ...]    (LAYOUTS below: t5, marian, ..., llama, mistral, qwen2)

Each family's folder is written by ``save_pretrained`` (model and tokenizer) and opens like any
downloaded model: ``transformer-explorer OUT_FOLDER/t5``. Sizes are tiny unless ``size="base"`` (t5-base's
dimensions, the tiny vocabulary), or ``--published NAME``: a published model's dimensions and vocabulary size
(OPUS-MT, T5-base, BART-large, NLLB-600M; the tokenizer's trained pieces padded with fillers no text is split into),
for the real-size benchmarks (benchmarks/real_sizes.py). The tokenizers are trained by model/pretrained/tiny_tokenizers.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from model.data.corpora import generate_builtin
from model.pretrained.hub import require_transformers
from model.pretrained.tiny_tokenizers import VOCAB, byte_level, fillers, padded_byte_level, sentencepiece, unigram_fast, wordpiece

LAYOUTS = (
    "t5",
    "marian",
    "bart",
    "mbart",
    "m2m100",
    "nllb",
    "pegasus",
    "bert-mlm",
    "bert-classifier",
    "bert-tagger",
    "roberta",
    "distilbert",
    "gpt2",
    "llama",
    "mistral",
    "qwen2",
)
LLAMA_LIKE = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2"}  # layout -> the library's class prefix
NLLB_LANGUAGES = ("eng_Latn", "fra_Latn", "deu_Latn")  # the tiny NLLB's language codes (NLLB-200 has 202)
# Encoder-decoder layouts built with BART's byte-level tokenizer: their configs name the sizes as BART's does.
BART_LIKE = {
    "bart": ("BartConfig", "BartForConditionalGeneration"),
    "mbart": ("MBartConfig", "MBartForConditionalGeneration"),
    "m2m100": ("M2M100Config", "M2M100ForConditionalGeneration"),
    "pegasus": ("PegasusConfig", "PegasusForConditionalGeneration"),
}
TINY = {"d_model": 32, "d_ff": 64, "layers": 2, "heads": 4, "positions": 128}
LABELS = ["negative", "neutral", "positive"]
TAGS = ["DET", "NOUN", "VERB", "ADJ", "OTHER"]  # the tiny token-classification head's ("bert-tagger")


@dataclass(frozen=True)
class Size:
    """A model's dimensions; ``vocab``: the pieces its embeddings hold (the tokenizer's trained pieces, then fillers
    that no text produces, so that a published model's embedding and output layer are its real size), or None for the
    tokenizer's own."""

    d_model: int
    layers: int  # of each stack
    heads: int
    d_ff: int
    positions: int
    vocab: int | None = None
    init_std: float | None = 0.3  # a tiny random model's weights are spread wide (else it repeats one token)
    kv_heads: int | None = None  # a grouped-query model's key and value heads (None: half its query heads)


SIZES = {
    "tiny": Size(TINY["d_model"], TINY["layers"], TINY["heads"], TINY["d_ff"], TINY["positions"]),
    "base": Size(768, 12, 12, 3072, 512, init_std=None),  # T5-base's dimensions with the tiny vocabulary
}
# Published models' sizes, random weights (their layout, their size): what the real-size benchmarks open.
PUBLISHED = {
    # Helsinki-NLP/opus-mt-*, ~75 M; weights spread enough that two sentences translate differently (patching's need)
    "opus-mt": ("marian", Size(512, 6, 8, 2048, 512, vocab=58101, init_std=0.1)),
    "t5-base": ("t5", Size(768, 12, 12, 3072, 512, vocab=32128, init_std=None)),  # ~220 M
    "bart-large": ("bart", Size(1024, 12, 16, 4096, 1024, vocab=50265, init_std=None)),  # ~406 M
    "nllb-600m": ("nllb", Size(1024, 12, 16, 4096, 1024, vocab=256206, init_std=None)),  # NLLB-200-distilled-600M
    "nllb-3.3b": ("nllb", Size(2048, 24, 16, 8192, 1024, vocab=256206, init_std=None)),  # NLLB-200-3.3B (streamed.py)
    "llama-1b": ("llama", Size(2048, 16, 32, 8192, 2048, vocab=128256, init_std=None, kv_heads=8)),  # Llama 3.2 1B
}


def bart_sizes(size: Size) -> dict[str, int]:
    """The size under the names Marian's and BART's configs give it (mBART, M2M100 and Pegasus name them alike)."""
    return {
        "d_model": size.d_model,
        "encoder_layers": size.layers,
        "decoder_layers": size.layers,
        "encoder_attention_heads": size.heads,
        "decoder_attention_heads": size.heads,
        "encoder_ffn_dim": size.d_ff,
        "decoder_ffn_dim": size.d_ff,
        "max_position_embeddings": size.positions,
    }


def _init(size: Size) -> dict[str, float]:
    return {} if size.init_std is None else {"init_std": size.init_std}


def sentences(n: int = 300, seed: int = 7) -> list[str]:
    """English and French sentences of the toy-fr corpus (both sides, so one vocabulary serves)."""
    pairs = generate_builtin("toy-fr", n, seed)
    return [p.source for p in pairs] + [p.target for p in pairs]


def _t5(folder: Path, texts: list[str], work: Path, size: Size) -> None:
    transformers = require_transformers()
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import processors

    model_file = sentencepiece(texts, work, VOCAB, {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1})
    fast = unigram_fast(model_file, 2, size.vocab)
    fast.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)])
    tokenizer = transformers.T5TokenizerFast(
        tokenizer_object=fast, eos_token="</s>", unk_token="<unk>", pad_token="<pad>", extra_ids=0
    )
    large = size.d_model >= 256
    config = transformers.T5Config(
        vocab_size=len(tokenizer),
        d_model=size.d_model,
        d_ff=size.d_ff,
        num_layers=size.layers,
        num_heads=size.heads,
        d_kv=size.d_model // size.heads,
        relative_attention_num_buckets=32 if large else 8,
        relative_attention_max_distance=128 if large else 20,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
        initializer_factor=1.0 if size.init_std is None else 2.0,  # tiny random models otherwise repeat one token
        task_specific_params={"translation_en_to_fr": {"prefix": "translate English to French: "}},
    )
    _save(transformers.T5ForConditionalGeneration(config), tokenizer, folder)


def _marian(folder: Path, texts: list[str], work: Path, size: Size) -> None:
    transformers = require_transformers()
    model_file = sentencepiece(texts, work, VOCAB, {"pad_id": -1, "eos_id": 0, "unk_id": 1, "bos_id": -1})
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    pieces += fillers(len(pieces) + 1, size.vocab)  # the pad comes last, as in OPUS-MT's vocabularies
    vocab = {piece: index for index, piece in enumerate(pieces)}
    vocab["<pad>"] = len(vocab)
    (work / "vocab.json").write_text(json.dumps(vocab))
    tokenizer = transformers.MarianTokenizer(
        str(model_file), str(model_file), str(work / "vocab.json"), source_lang="en", target_lang="fr"
    )
    pad = vocab["<pad>"]
    config = transformers.MarianConfig(
        vocab_size=len(vocab),
        **bart_sizes(size),
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=None,
        bad_words_ids=[[pad]],
        **_init(size),
    )
    _save(transformers.MarianMTModel(config), tokenizer, folder)


def _bart_config(config_class: Any, vocab_size: int, size: Size) -> Any:
    """A config of BART's naming (BART, mBART, M2M100, Pegasus): <s> 0, <pad> 1, </s> 2 (the decoder's start)."""
    return config_class(
        vocab_size=vocab_size,
        **bart_sizes(size),
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=None,
        **_init(size),
    )


def _bart(folder: Path, texts: list[str], work: Path, size: Size, layout: str = "bart") -> None:
    """BART, or a layout whose config names its sizes as BART's does (mBART, M2M100, Pegasus), with a byte-level
    tokenizer (its vocabulary padded with fillers to the size's)."""
    transformers = require_transformers()
    padded_byte_level(texts, work, size.vocab)
    tokenizer = transformers.BartTokenizerFast(vocab_file=str(work / "vocab.json"), merges_file=str(work / "merges.txt"))
    config_class, model_class = (getattr(transformers, name) for name in BART_LIKE[layout])
    _save(model_class(_bart_config(config_class, len(tokenizer), size)), tokenizer, folder)


def nllb_parts(texts: list[str], work: Path, size: Size) -> tuple[Any, Any, int]:
    """(the M2M100 config, NLLB's tokenizer, the forced first token) of NLLB's layout at ``size``: the source language's
    code before the text, the target language's forced first by the generation config (English to French)."""
    transformers = require_transformers()
    # deferred: the "hf" extra's libraries, loaded only by the builder that needs them
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = padded_byte_level(texts, work, size.vocab)
    lines = (work / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]
    bpe = Tokenizer(models.BPE(vocab, [tuple(line.split()) for line in lines if line.strip()]))
    bpe.pre_tokenizer, bpe.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    source, target = NLLB_LANGUAGES[:2]
    tokenizer = transformers.NllbTokenizerFast(
        tokenizer_object=bpe, src_lang=source, tgt_lang=target, additional_special_tokens=list(NLLB_LANGUAGES)
    )
    config = _bart_config(transformers.M2M100Config, len(tokenizer), size)
    return config, tokenizer, tokenizer.convert_tokens_to_ids(target)


def _nllb(folder: Path, texts: list[str], work: Path, size: Size) -> None:
    """NLLB's layout (M2M100's modules) with its tokenizer (``nllb_parts``)."""
    config, tokenizer, forced = nllb_parts(texts, work, size)
    network = require_transformers().M2M100ForConditionalGeneration(config)
    network.generation_config.forced_bos_token_id = forced
    _save(network, tokenizer, folder)


def _bert_like(folder: Path, texts: list[str], work: Path, layout: str) -> None:
    """RoBERTa's and DistilBERT's layouts (a masked-LM head), with a WordPiece tokenizer: what the app reads of them is
    their modules, laid out as the library lays them out."""
    transformers = require_transformers()
    tokenizer = wordpiece(texts, work)
    sizes = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id, "initializer_range": 0.3}
    if layout == "roberta":  # its positions start after the padding id's: two more rows
        config = transformers.RobertaConfig(
            hidden_size=TINY["d_model"],
            num_hidden_layers=TINY["layers"],
            num_attention_heads=TINY["heads"],
            intermediate_size=TINY["d_ff"],
            max_position_embeddings=TINY["positions"] + tokenizer.pad_token_id + 1,
            **sizes,
        )
        network = transformers.RobertaForMaskedLM(config)
    else:
        config = transformers.DistilBertConfig(
            dim=TINY["d_model"], n_layers=TINY["layers"], n_heads=TINY["heads"], hidden_dim=TINY["d_ff"],
            max_position_embeddings=TINY["positions"], **sizes,
        )  # fmt: skip
        network = transformers.DistilBertForMaskedLM(config)
    _save(network, tokenizer, folder)


def _bert(folder: Path, texts: list[str], work: Path, head: str) -> None:
    """BERT with a masked-LM head ("bert-mlm"), a sentence classifier's ("bert-classifier", LABELS) or a tagger's
    ("bert-tagger": a token-classification head, TAGS)."""
    transformers = require_transformers()
    tokenizer = wordpiece(texts, work)
    names = {"bert-classifier": LABELS, "bert-tagger": TAGS}.get(head)
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=TINY["d_model"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["d_ff"],
        max_position_embeddings=TINY["positions"],
        initializer_range=0.3,
        pad_token_id=tokenizer.pad_token_id,
        id2label=dict(enumerate(names)) if names else None,
        label2id={name: i for i, name in enumerate(names)} if names else None,
    )
    kinds = {"bert-classifier": "BertForSequenceClassification", "bert-tagger": "BertForTokenClassification"}
    network = getattr(transformers, kinds.get(head, "BertForMaskedLM"))(config)
    _save(network, tokenizer, folder)


def _gpt2(folder: Path, texts: list[str], work: Path) -> None:
    transformers = require_transformers()
    byte_level(texts, ["<|endoftext|>"]).save_model(str(work))
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


def _llama(folder: Path, texts: list[str], work: Path, size: Size, layout: str = "llama") -> None:
    """The Llama family's layout (Llama, Mistral, Qwen2: ``layout``): rotary positions, grouped-query attention (half
    as many key and value heads as query heads), RMS norms, a gated feed-forward, an untied output layer."""
    transformers = require_transformers()
    padded_byte_level(texts, work, size.vocab, ("<|endoftext|>",))
    tokenizer = transformers.GPT2TokenizerFast(vocab_file=str(work / "vocab.json"), merges_file=str(work / "merges.txt"))
    prefix = LLAMA_LIKE[layout]
    config = getattr(transformers, f"{prefix}Config")(
        vocab_size=len(tokenizer),
        hidden_size=size.d_model,
        intermediate_size=size.d_ff,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=size.kv_heads or max(1, size.heads // 2),
        max_position_embeddings=size.positions,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **({} if size.init_std is None else {"initializer_range": size.init_std}),
    )
    _save(getattr(transformers, f"{prefix}ForCausalLM")(config), tokenizer, folder)


def _save(network, tokenizer, folder: Path) -> None:
    network.eval()
    network.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def build(layout: str, folder: str | Path, seed: int = 0, size: str | Size = "tiny") -> Path:
    """Write a random-weight model of ``layout`` with its tokenizer into ``folder`` (save_pretrained layout), of the
    size named in SIZES (or given)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    dims = SIZES[size] if isinstance(size, str) else size
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    texts = sentences()
    with tempfile.TemporaryDirectory() as work:
        if layout == "t5":
            _t5(folder, texts, Path(work), dims)
        elif layout == "marian":
            _marian(folder, texts, Path(work), dims)
        elif layout in BART_LIKE:
            _bart(folder, texts, Path(work), dims, layout)
        elif layout == "nllb":
            _nllb(folder, texts, Path(work), dims)
        elif layout == "gpt2":
            _gpt2(folder, texts, Path(work))
        elif layout in LLAMA_LIKE:
            _llama(folder, texts, Path(work), dims, layout)
        elif layout in ("roberta", "distilbert"):
            _bert_like(folder, texts, Path(work), layout)
        else:
            _bert(folder, texts, Path(work), layout)
    return folder


def build_published(name: str, folder: str | Path, seed: int = 0) -> Path:
    """A random-weight model at a published model's size (PUBLISHED: "opus-mt", "t5-base", "bart-large", "nllb-600m",
    "llama-1b")."""
    layout, size = PUBLISHED[name]
    return build(layout, folder, seed, size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.pretrained.tiny", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="folder to write one sub-folder per layout into")
    parser.add_argument("--family", dest="layout", action="append", choices=LAYOUTS, help="only these layouts (default: all)")
    parser.add_argument("--size", choices=tuple(SIZES), default="tiny")
    parser.add_argument("--published", action="append", choices=tuple(PUBLISHED), help="a published model's size instead")
    args = parser.parse_args(argv)
    for name in args.published or ():
        print(build_published(name, Path(args.out) / name))
    if args.published and not args.layout:
        return 0
    for layout in args.layout or LAYOUTS:
        print(build(layout, Path(args.out) / layout, size=args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
