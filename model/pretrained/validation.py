"""Checking a pretrained folder's files before the library reads them: one reader per kind of file.

A folder can be damaged or edited by hand, and the library then fails deep inside with a traceback, or
builds what a forged config asks for (a million layers: a hang). Each check here names the folder's
file and what is wrong with it in one line (a ``PretrainedError``):

- ``read_json_files``: every JSON file the loader or the library reads is a JSON object;
- ``check_config``: the sizes are whole numbers in a sane range, the token ids are inside the vocabulary,
  the task prefixes are text; ``config_parameters`` estimates what the config would build;
- ``check_layers``: the config's layer counts are the layers the weights hold;
- ``check_tokenizer_files`` / ``check_tokenizer``: tokenizer.json and SentencePiece models parse, and the
  opened tokenizer reads a word outside its vocabulary (a WordPiece vocabulary needs its unknown piece).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeGuard

from model.family import Architecture
from model.pretrained.hub import PretrainedError

JSON_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "model.safetensors.index.json",
)
MAX_LAYERS = 1000  # the deepest published models have about 120 layers
ENCODER_LAYERS = ("encoder_layers", "num_layers", "num_hidden_layers", "n_layer")
DECODER_LAYERS = ("decoder_layers", "num_decoder_layers", "num_hidden_layers", "n_layer")
SIZES = (  # (field, smallest value) of the sizes the app and the library build from
    *((name, 0) for name in sorted(set(ENCODER_LAYERS + DECODER_LAYERS))),
    *((name, 1) for name in ("encoder_attention_heads", "decoder_attention_heads", "num_heads", "num_attention_heads")),
    *((name, 1) for name in ("n_head", "d_model", "hidden_size", "n_embd", "d_kv", "vocab_size")),
    *((name, 1) for name in ("d_ff", "encoder_ffn_dim", "decoder_ffn_dim", "intermediate_size", "n_inner")),
    *((name, 1) for name in ("max_position_embeddings", "n_positions")),
)
TOKEN_IDS = (  # the ids generation and the app feed to the model or compare its output with
    "decoder_start_token_id",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "sep_token_id",
)
UNKNOWN_TEXT = "\u2603\u2604 qzxj"  # characters no small vocabulary holds


def _kind(value: object) -> str:
    kinds: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return kinds.get(type(value), type(value).__name__)


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file that must hold one object; a PretrainedError naming the file otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PretrainedError(f"{path.name}: not UTF-8 text, so not JSON (in {path.parent})") from None
    if not text.strip():
        raise PretrainedError(f"{path.name}: the file is empty (in {path.parent})")
    try:
        value = json.loads(text)
    except ValueError as error:
        raise PretrainedError(f"{path.name}: not valid JSON ({str(error)[:120]}) (in {path.parent})") from None
    if not isinstance(value, dict):
        raise PretrainedError(f"{path.name}: holds {_kind(value)}, where a JSON object is expected (in {path.parent})")
    return value


def read_json_files(folder: Path) -> dict[str, dict[str, Any]]:
    """Every JSON file of the folder the loader or the library reads, by name, each checked to be an object."""
    return {name: read_json_object(folder / name) for name in JSON_FILES if (folder / name).is_file()}


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _first(config: dict[str, Any], names: tuple[str, ...]) -> tuple[str, int | None]:
    """(the field, its value) of the first of names the config sets."""
    for name in names:
        if config.get(name) is not None:
            return name, config[name]
    return names[0], None


def _check_sizes(config: dict[str, Any]) -> None:
    for name, smallest in SIZES:
        value = config.get(name)
        if value is None:
            continue
        if not _is_count(value) or value < smallest:
            raise PretrainedError(f"config.json: {name} is {str(value)[:40]}, not a whole number of at least {smallest}")
    for name in dict.fromkeys(ENCODER_LAYERS + DECODER_LAYERS):
        layers = config.get(name)
        if layers is not None and layers > MAX_LAYERS:
            raise PretrainedError(
                f"config.json: {name} asks for {layers:,} layers; the app refuses more than {MAX_LAYERS:,} "
                "(no real model has as many)"
            )


def _check_ids(config: dict[str, Any], file: str, vocab_size: int) -> None:
    """Every token id the file sets (one id, a list of ids for eos, bad_words_ids' lists) is in [0, vocab_size)."""
    fields: list[tuple[str, object]] = [(name, config.get(name)) for name in TOKEN_IDS]
    banned = config.get("bad_words_ids")
    if banned is not None:
        if not isinstance(banned, list) or not all(isinstance(ids, list) for ids in banned):
            raise PretrainedError(f"{file}: bad_words_ids is {str(banned)[:40]}, not a list of lists of token ids")
        fields += [("bad_words_ids", i) for ids in banned for i in ids]
    for name, value in fields:
        for token in value if isinstance(value, list) else [value]:
            if token is None:
                continue
            if not _is_count(token) or not 0 <= token < vocab_size:
                raise PretrainedError(
                    f"{file}: {name} is {str(token)[:40]}, not a token id of the model's vocabulary (0 to {vocab_size - 1:,})"
                )


def _check_prefixes(config: dict[str, Any]) -> None:
    tasks = config.get("task_specific_params")
    if tasks is None:
        return
    if not isinstance(tasks, dict):
        raise PretrainedError(f"config.json: task_specific_params holds {_kind(tasks)}, where an object of tasks is expected")
    for task, params in tasks.items():
        prefix = params.get("prefix") if isinstance(params, dict) else None
        if prefix is not None and not isinstance(prefix, str):
            raise PretrainedError(f"config.json: task_specific_params → {task} → prefix is {str(prefix)[:40]}, not text")


def _check_names(config: dict[str, Any]) -> None:
    architectures = config.get("architectures")
    if architectures is not None and not (isinstance(architectures, list) and all(isinstance(a, str) for a in architectures)):
        raise PretrainedError(f"config.json: architectures is {str(architectures)[:40]}, not a list of class names")


def check_config(files: dict[str, dict[str, Any]], hf_config: Any) -> None:
    """The config's class names, sizes, token ids (in config.json and generation_config.json) and task prefixes."""
    config = files["config.json"]
    _check_names(config)
    _check_sizes(config)
    vocab_size = getattr(hf_config, "vocab_size", None)
    if _is_count(vocab_size) and vocab_size > 0:
        for name in ("config.json", "generation_config.json"):
            if name in files:
                _check_ids(files[name], name, vocab_size)
    _check_prefixes(config)


def _int(config: Any, names: tuple[str, ...], default: int = 0) -> int:
    for name in names:
        value = getattr(config, name, None)
        if _is_count(value):
            return value
    return default


def config_parameters(hf_config: Any, shape: Architecture) -> int:
    """About how many values the config would build (at least: the attention and feed-forward matrices and
    the embeddings), from its sizes alone."""
    d_model = _int(hf_config, ("d_model", "hidden_size", "n_embd"))
    d_ff = _int(hf_config, ("d_ff", "encoder_ffn_dim", "intermediate_size", "n_inner"), 4 * d_model)
    encoder = 0 if shape == Architecture.DECODER_ONLY else _int(hf_config, ENCODER_LAYERS)
    decoder = 0 if shape == Architecture.ENCODER_ONLY else _int(hf_config, DECODER_LAYERS)
    cross = 4 * d_model * d_model if shape == Architecture.ENCODER_DECODER else 0
    layer = 4 * d_model * d_model + 2 * d_model * d_ff
    return encoder * layer + decoder * (layer + cross) + _int(hf_config, ("vocab_size",)) * d_model


def check_layers(hf_config: Any, shape: Architecture, stacks: dict[str, int], weights: str) -> None:
    """The layers the config asks for are the layers the weights hold (stacks from weights.layer_stacks)."""
    saved = hf_config.to_dict()  # the fields under their own names (GPT-2's n_layer, not its alias num_hidden_layers)
    config = {name: saved.get(name) for name in set(ENCODER_LAYERS + DECODER_LAYERS)}
    for stack, held in sorted(stacks.items()):
        decoder = "decoder" in stack or ("encoder" not in stack and shape == Architecture.DECODER_ONLY)
        name, asked = _first(config, DECODER_LAYERS if decoder else ENCODER_LAYERS)
        if _is_count(asked) and asked != held:
            raise PretrainedError(
                f"config.json: {name} is {asked:,}, and {weights} holds {held:,} {'decoder' if decoder else 'encoder'} "
                f"layers ({stack}.0 to {stack}.{held - 1}): the config and the weights disagree"
            )


def check_tokenizer_files(folder: Path) -> None:
    """tokenizer.json is a tokenizer the tokenizers library reads; without it, the SentencePiece models parse."""
    path = folder / "tokenizer.json"
    if path.is_file():
        # deferred: the "hf" extra's libraries, loaded when a pretrained model is opened
        from tokenizers import Tokenizer

        try:
            Tokenizer.from_file(str(path))
        except Exception as error:  # the tokenizers library raises bare Exception for every malformed file
            raise PretrainedError(f"tokenizer.json: not a tokenizer ({str(error)[:160]}) (in {folder})") from None
        return
    models = sorted(p for p in folder.iterdir() if p.is_file() and (p.suffix == ".spm" or p.name.endswith("piece.model")))
    models += [p for p in (folder / "sentencepiece.bpe.model",) if p.is_file()]
    for model in models:
        import sentencepiece  # deferred: as above

        try:
            sentencepiece.SentencePieceProcessor(model_file=str(model))
        except (RuntimeError, OSError) as error:
            raise PretrainedError(f"{model.name}: not a SentencePiece model ({str(error)[:120]}) (in {folder})") from None


def check_tokenizer(tokenizer: Any, folder: Path, vocab_size: int) -> None:
    """The opened tokenizer reads a word outside its vocabulary, and its special tokens are in the model's."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    model = getattr(backend, "model", None)
    unk = getattr(model, "unk_token", None)
    if model is not None and type(model).__name__ == "WordPiece" and unk and model.token_to_id(unk) is None:  # its own vocabulary
        file = "tokenizer.json" if (folder / "tokenizer.json").is_file() else "vocab.txt"
        raise PretrainedError(f"{file}: the WordPiece vocabulary has no {unk} piece, so it cannot read an unknown word")
    try:
        tokenizer(UNKNOWN_TEXT, add_special_tokens=True)
    except Exception as error:  # the tokenizers library raises bare Exception
        problem = str(error)[:160]
        raise PretrainedError(f"the tokenizer cannot read a word outside its vocabulary ({problem}) (in {folder})") from None
    for token, token_id in zip(tokenizer.all_special_tokens, tokenizer.all_special_ids):
        if token_id is None or not 0 <= int(token_id) < vocab_size:
            raise PretrainedError(
                f"the tokenizer's {token} has id {token_id}, outside the model's vocabulary (0 to {vocab_size - 1:,}) (in {folder})"
            )
