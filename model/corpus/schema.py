"""The corpus index's ``manifest.json`` read strictly: a JSON object of bounded size and depth whose every field has
its type (a whole number is never a float, a bool or Infinity), its range, and, for the names that make file names
(layers, heads), a safe pattern checked against the model's layers and heads. A manifest that is anything else is
one line naming the field, never a traceback, and nothing in it names a file outside the index.
"""

from __future__ import annotations

import json
import re
from typing import Any

FORMAT = 1  # the index layout this code writes and reads
SIDES = ("encoder", "decoder")
KINDS = ("encoder", "decoder", "cross")  # the kinds of attention, by the names heads are written with
KIND_SIDES = {"encoder": ("encoder",), "decoder": ("decoder",), "cross": SIDES}  # the stacks each kind reads
MAX_MANIFEST_BYTES = 1 << 20  # a manifest is a few kilobytes; a larger file is not one
MAX_COUNT = 1 << 40  # sentences, tokens
MAX_LAYERS, MAX_HEADS, MAX_WIDTH = 1000, 1024, 1 << 16
HEAD = re.compile(r"(encoder|decoder|cross):([1-9][0-9]{0,3}):([1-9][0-9]{0,3})")
DIGEST = re.compile(r"[0-9a-f]{64}")
COUNTS = ("sentences", "encoder_tokens", "decoder_tokens")


class ManifestInvalid(ValueError):
    """One field that is not as the schema says (the message names it)."""


def _refuse_constant(text: str) -> Any:
    raise ManifestInvalid(f"{text} is not a number an index holds")


def parse_manifest(raw: bytes) -> dict:
    """The manifest's fields, checked (a ValueError, ``ManifestInvalid`` or another, says what is wrong)."""
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestInvalid(f"{len(raw):,} bytes, larger than any manifest")
    try:
        values = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except RecursionError:
        raise ManifestInvalid("nested too deeply") from None
    if not isinstance(values, dict):
        raise ManifestInvalid(f"a JSON {type(values).__name__} where a manifest is an object")
    _check(values)
    return values


def _integer(values: dict, name: str, low: int, high: int) -> int:
    value = values.get(name)
    if type(value) is not int or not low <= value <= high:
        raise ManifestInvalid(f"{name} must be a whole number from {low:,} to {high:,}, not {_shown(value)}")
    return value


def _text(values: dict, name: str, pattern: re.Pattern | None = None, optional: bool = False) -> None:
    value = values.get(name)
    if optional and value is None:
        return
    if not isinstance(value, str) or "\x00" in value or len(value) > 4096 or (pattern and not pattern.fullmatch(value)):
        raise ManifestInvalid(f"{name} must be {'a valid ' + name if pattern else 'text'}, not {_shown(value)}")


def _shown(value: Any) -> str:
    text = json.dumps(value)[:40] if not isinstance(value, (dict, list)) else f"a JSON {type(value).__name__}"
    return text


def _check(values: dict) -> None:
    if values.get("format") != FORMAT or type(values.get("format")) is not int:
        raise ManifestInvalid(f"an index of format {_shown(values.get('format'))}; this version reads format {FORMAT}")
    for name in ("model", "model_description"):
        _text(values, name)
    _text(values, "model_digest", DIGEST)
    d_model = _integer(values, "d_model", 1, MAX_WIDTH)
    n_heads = _integer(values, "n_heads", 1, MAX_HEADS)
    if _integer(values, "d_head", 1, d_model) * n_heads != d_model:
        raise ManifestInvalid(f"d_head × n_heads must be d_model ({d_model})")
    _integer(values, "dims", 1, d_model)
    layers = {side: _integer(values, f"n_{side}_layers", 0, MAX_LAYERS) for side in SIDES}  # 0: no such stack
    if not any(layers.values()):
        raise ManifestInvalid("a model has an encoder or a decoder: n_encoder_layers and n_decoder_layers are both 0")
    kinds = _kinds(values.get("kinds", list(KINDS)), layers)
    n_sentences = _integer(values, "n_sentences", 0, MAX_COUNT)
    _integer(values, "chunk_size", 1, MAX_COUNT)
    _integer(values, "pca_sentences", 0, n_sentences)
    _check_layers(values.get("layers"), layers)
    _check_heads(values.get("heads"), layers, n_heads, kinds)
    _check_corpus(values.get("corpus"))
    if type(values.get("complete")) is not bool:
        raise ManifestInvalid(f"complete must be true or false, not {_shown(values.get('complete'))}")
    counts = values.get("counts")
    if not isinstance(counts, dict) or (values["complete"] and set(counts) != set(COUNTS)):
        raise ManifestInvalid(f"counts must be an object with {', '.join(COUNTS)}")
    for name in counts:
        _integer(counts, name, 0, MAX_COUNT)


def _check_layers(layers: Any, counts: dict[str, int]) -> None:
    if not isinstance(layers, list) or not layers:
        raise ManifestInvalid(f"layers must be a list of [side, layer] pairs, not {_shown(layers)}")
    for item in layers:
        if not (isinstance(item, list) and len(item) == 2 and item[0] in SIDES):
            raise ManifestInvalid(f"each of layers must be [side, layer] with side encoder or decoder, not {_shown(item)}")
        if not counts[item[0]]:
            raise ManifestInvalid(f"layers names the {item[0]}, which the model does not have")
        _integer({"layer": item[1]}, "layer", 0, counts[item[0]])
    if len({tuple(item) for item in layers}) != len(layers):
        raise ManifestInvalid("layers names a layer twice")


def _kinds(kinds: Any, layers: dict[str, int]) -> list[str]:
    """The manifest's kinds of attention (an index written before the field: all three), each of a stack it has."""
    names = set(map(str, kinds)) if isinstance(kinds, list) else set()
    if not isinstance(kinds, list) or not kinds or len(names) != len(kinds) or not names <= set(KINDS):
        raise ManifestInvalid(f"kinds must be a list of distinct kinds ({', '.join(KINDS)}), not {_shown(kinds)}")
    for kind in kinds:
        if not all(layers[side] for side in KIND_SIDES[kind]):
            raise ManifestInvalid(f"the kind {kind} needs a stack the model has no layers of")
    return kinds


def _check_heads(heads: Any, layers: dict[str, int], n_heads: int, kinds: list[str]) -> None:
    if not isinstance(heads, list) or len(set(map(str, heads))) != len(heads):
        raise ManifestInvalid(f"heads must be a list of distinct KIND:LAYER:HEAD names, not {_shown(heads)}")
    for head in heads:
        match = HEAD.fullmatch(head) if isinstance(head, str) else None
        if match is None:
            raise ManifestInvalid(f"each of heads must be KIND:LAYER:HEAD (e.g. cross:1:2), not {_shown(head)}")
        kind, layer, number = match.group(1), int(match.group(2)), int(match.group(3))
        if kind not in kinds or layer > layers["encoder" if kind == "encoder" else "decoder"] or number > n_heads:
            raise ManifestInvalid(f"the head {head} is not one of the model's")


def _check_corpus(corpus: Any) -> None:
    if not isinstance(corpus, dict):
        raise ManifestInvalid(f"corpus must be an object, not {_shown(corpus)}")
    _text(corpus, "name")
    _text(corpus, "target_path", optional=True)
    if corpus.get("limit") is not None:
        _integer(corpus, "limit", 1, MAX_COUNT)
    if corpus.get("seed") is not None:
        _integer(corpus, "seed", -(1 << 63), (1 << 63) - 1)
