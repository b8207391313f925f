"""Self-contained model files: config, weights, tokenizers, corpus description and training history.

The file is a safetensors file: a JSON header (with our metadata as strings) followed by raw
tensor bytes. Loading parses that header and copies numbers; it never unpickles and so never
executes anything from the file. Saving writes a temporary file beside the target, syncs it and
renames it over the target, so an interrupted save leaves the previous file intact; the model's timeline is written
with it as a pair, both or neither (model/io/pair.py).

A file is checked whole before its model is accepted: only regular files are opened; the header must
describe exactly the file's size; the config must be within sane limits and fit the stored tensors'
shapes (all before any weight is read or any model built); a SHA-256 of the tensors (stored on save;
older files have none) must match; weights must be finite; tokenizers must fit the vocabulary; corpus,
history and training records must have the right types. Each failure is one CheckpointError line.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch.overrides import TorchFunctionMode

from model.data.corpora import CorpusSpec
from model.data.tokenizer import Tokenizer, TokenizerError
from model.errors import UserError
from model.family import trainable_family_names
from model.files import OutputError, check_output, open_input
from model.io.bundle import ModelBundle
from model.io.digest import file_tensors, joint_tokenizer, raw_bytes, tensor_digest
from model.io.header import MAX_HEADER_BYTES, check_length, json_header, tensor_entries
from model.io.pair import write_pair
from model.io.snapshots import TimelineError
from model.io.timeline import timeline_path, timeline_to_save
from model.network import NetworkConfig, TrainableConfig
from model.nn.config import ConfigError
from model.nn.registry import FamilyError, build_network, config_from_dict

FORMAT = "transformer-explorer/1"
DIGEST_KEY = "tensor_sha256"  # SHA-256 of the tensors (model/io/digest.py); files saved before it have none
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
# Far beyond any model this app trains or shows, far below what would exhaust memory before failing.
LIMITS = {
    "n_encoder_layers": 64,
    "n_decoder_layers": 64,
    "d_model": 8192,
    "n_heads": 1024,
    "d_ff": 65536,
    "max_len": 16384,
    "source_vocab_size": 1_000_000,
    "target_vocab_size": 1_000_000,
    "vocab_size": 1_000_000,
    "d_embed": 8192,
    "d_hidden": 16384,
    "n_layers": 64,
    "class_names": 100_000,  # a labelling family's classes
}
MAX_POSITION_TABLE = 2**24  # max_len x d_model of a sinusoidal table, which the file does not store


class CheckpointError(UserError):
    """A model file that cannot be read or written; the message says why."""


def _metadata(bundle: ModelBundle) -> dict[str, str]:
    joint = joint_tokenizer(bundle)
    return {
        "format": FORMAT,
        "family": bundle.family.name,
        "config": json.dumps(bundle.config.to_dict()),
        "corpus": json.dumps(bundle.corpus.to_dict() if bundle.corpus else None),
        "history": json.dumps(bundle.history),
        "training": json.dumps(bundle.training),
        "joint_tokenizer": json.dumps(joint),
    }


def _encode(bundle: ModelBundle) -> tuple[bytes, str]:
    """The model file's bytes and the digest of its tensors (model/io/digest.py)."""
    tensors = file_tensors(bundle)
    metadata = _metadata(bundle)
    metadata[DIGEST_KEY] = tensor_digest((key, raw_bytes(tensor)) for key, tensor in tensors.items())
    return save_tensors(tensors, metadata=metadata), metadata[DIGEST_KEY]


def to_bytes(bundle: ModelBundle) -> bytes:
    return _encode(bundle)[0]


def save(bundle: ModelBundle, path: str | os.PathLike) -> Path:
    """Write the model file and its timeline (the one recorded while training, ``bundle.recording``, or the one beside
    the file the model came from) as a pair, each atomically: both are written, or neither and the earlier files stay
    as they were (model/io/pair.py). The timeline of the file the model came from is never written over."""
    earlier = bundle.path
    try:
        path = check_output(path, (timeline_path(earlier),) if earlier else ())
        data, digest = _encode(bundle)
        write_pair(path, data, digest, timeline_to_save(bundle, path, digest, earlier))
    except (OutputError, TimelineError) as error:
        raise CheckpointError(str(error)) from None
    bundle.path = str(path)
    return path


def _entries(header: dict, name: str) -> dict[str, dict]:
    """The header's tensor entries, checked to be well formed (model/io/header.py)."""
    return tensor_entries(header, name, CheckpointError, "model file")


def _read_header(head: bytes, file_size: int, name: str) -> tuple[dict[str, dict], dict[str, str], int]:
    """Tensor entries, our metadata and where the tensor data starts, from the first bytes of a file of
    ``file_size`` bytes. The file must be exactly as long as its header says: nothing more is read."""
    header, metadata, header_size = json_header(head, file_size, name, CheckpointError, "not a Transformer Explorer model")
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise CheckpointError(f"{name}: a safetensors file, but not a Transformer Explorer model")
    if not all(isinstance(value, str) for value in metadata.values()):
        raise CheckpointError(f"{name}: damaged model file (its metadata must be text)")
    family = metadata.get("family", "transformer")  # files written before families were named
    known = trainable_family_names()
    if family not in known:
        raise CheckpointError(
            f"{name}: a model of the family {family!r}, which this version cannot open (it opens: {', '.join(known)})"
        )
    entries = _entries(header, name)
    check_length(entries, header_size, file_size, name, CheckpointError, "model file")
    return entries, metadata, 8 + header_size


def _json_field(metadata: dict[str, str], key: str, default: str, name: str):
    try:
        return json.loads(metadata.get(key, default))
    except (json.JSONDecodeError, RecursionError):
        raise CheckpointError(f"{name}: damaged model file (its {key} is not valid JSON)") from None


def _sizes(config: TrainableConfig) -> dict[str, int]:
    """The sizes a config gives, by name: its family's saved fields (a list by its length: ``class_names``) and the
    sizes every family's config answers to (``NetworkConfig``: an RNN's d_model is its state's width)."""
    sizes = {key: len(value) if isinstance(value, list) else value for key, value in config.to_dict().items()}
    sizes.update(
        n_encoder_layers=config.n_encoder_layers,
        n_decoder_layers=config.n_decoder_layers,
        d_model=config.d_model,
        n_heads=config.n_heads,
        max_len=config.max_len,
        source_vocab_size=config.source_vocab_size,
        target_vocab_size=config.target_vocab_size,
    )
    return sizes


def _check_config(metadata: dict[str, str], entries: dict[str, dict], name: str) -> TrainableConfig:
    """The config, within sane limits and fitting the stored tensors' shapes, before any model is built."""
    if "config" not in metadata:
        raise CheckpointError(f"{name}: damaged model file (it has no config)")
    try:
        config: TrainableConfig = config_from_dict(
            metadata.get("family", "transformer"), _json_field(metadata, "config", "null", name)
        )
    except (TypeError, ValueError, ConfigError, FamilyError) as error:
        raise CheckpointError(f"{name}: damaged model file (config: {error})") from None
    sizes = _sizes(config)
    for field_name, limit in LIMITS.items():
        if sizes.get(field_name, 0) > limit:
            raise CheckpointError(
                f"{name}: the config's {field_name} ({sizes[field_name]:,}) is beyond what this app can load ({limit:,})"
            )
    if config.to_dict().get("positional_encoding") == "sinusoidal" and config.max_len * config.d_model > MAX_POSITION_TABLE:
        raise CheckpointError(
            f"{name}: the config's positions table (max_len {config.max_len:,} x d_model "
            f"{config.d_model:,}) is beyond what this app can load"
        )
    with torch.device("meta"), _SkipInitialisation():  # shapes only: nothing is allocated or initialised
        expected = {key: tuple(t.shape) for key, t in build_network(config).state_dict().items()}
    stored = {key.removeprefix("model."): entry for key, entry in entries.items() if key.startswith("model.")}
    missing, unexpected = sorted(set(expected) - set(stored)), sorted(set(stored) - set(expected))
    wrong_shape = sorted(k for k in set(expected) & set(stored) if expected[k] != tuple(stored[k]["shape"]))
    if missing or unexpected or wrong_shape:
        details = "; ".join(
            f"{what}: {', '.join(keys[:3])}{' ...' if len(keys) > 3 else ''}"
            for what, keys in (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong_shape))
            if keys
        )
        raise CheckpointError(f"{name}: the weights do not fit the model's config, perhaps a file from another version ({details})")
    wrong_type = sorted(k for k, entry in stored.items() if entry["dtype"] not in FLOAT_DTYPES)
    wrong_type += sorted(
        k for k, entry in entries.items() if k.startswith("tokenizer.") and (entry["dtype"] != "U8" or len(entry["shape"]) != 1)
    )
    if wrong_type or set(entries) - {f"model.{k}" for k in stored} - {"tokenizer.source", "tokenizer.target"}:
        raise CheckpointError(
            f"{name}: damaged model file (unexpected tensors or types: "
            f"{', '.join(wrong_type[:3]) or ', '.join(sorted(entries)[:3])})"
        )
    return config


class _SkipInitialisation(TorchFunctionMode):
    """Within it (on this thread only: a mode is thread-local), torch.nn.init's functions leave their tensor as it is.
    Building a network on the meta device for its shapes needs no initial values, and an embedding's normal_ on meta
    tensors imports torch._dynamo, about a second of the app's start-up."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", "") == "torch.nn.init":
            return args[0] if args else kwargs["tensor"]
        return func(*args, **(kwargs or {}))


def _check_digest(data, entries: dict[str, dict], metadata: dict[str, str], data_start: int, name: str) -> None:
    stored = metadata.get(DIGEST_KEY)
    if stored is None:
        return  # files saved before digests (the shipped ones among them) load as they are
    view = memoryview(data)
    actual = tensor_digest(
        (key, view[data_start + entry["data_offsets"][0] : data_start + entry["data_offsets"][1]]) for key, entry in entries.items()
    )
    if stored != actual:
        raise CheckpointError(f"{name}: the file is damaged (its contents do not match its checksum)")


def _check_record(value, key: str, name: str) -> dict:
    if not isinstance(value, dict):
        raise CheckpointError(f"{name}: damaged model file (its {key} must be a JSON object, got {type(value).__name__})")
    return value


def _check_history(history, name: str) -> dict:
    history = _check_record(history, "history", name)
    steps = history.get("steps", [])
    if not isinstance(steps, list) or not all(
        isinstance(row, list) and all(isinstance(x, (int, float)) or x is None for x in row) for row in steps
    ):
        raise CheckpointError(f"{name}: damaged model file (its history's steps must be rows of numbers)")
    validations = history.get("validations", [])
    if not isinstance(validations, list) or not all(
        isinstance(v, dict)
        and isinstance(v.get("samples", []), list)
        and all(isinstance(s, list) and all(isinstance(t, str) for t in s) for s in v.get("samples", []))
        for v in validations
    ):
        raise CheckpointError(
            f"{name}: damaged model file (its history's validations must be records with sample translations as text)"
        )
    return history


def _check_corpus(data, name: str) -> CorpusSpec | None:
    if data is None:
        return None
    data = _check_record(data, "corpus", name)
    types = {
        "name": (str,),
        "target_path": (str, type(None)),
        "size": (int, type(None)),
        "seed": (int,),
        "skip_malformed": (bool,),
        "valid_fraction": (int, float),
        "test_fraction": (int, float),
        "extra": (dict,),
    }
    for key, allowed in types.items():
        if key in data and not isinstance(data[key], allowed):
            raise CheckpointError(f"{name}: damaged model file (its corpus's {key} has the wrong type: {type(data[key]).__name__})")
    if "name" not in data:
        raise CheckpointError(f"{name}: damaged model file (its corpus has no name)")
    return CorpusSpec.from_dict(data)


def _check_tokenizers(source: Tokenizer, target: Tokenizer, config: NetworkConfig, name: str) -> None:
    for side, tokenizer, size in (("source", source, config.source_vocab_size), ("target", target, config.target_vocab_size)):
        if tokenizer.vocab_size > size:
            raise CheckpointError(
                f"{name}: damaged model file (its {side} tokenizer has {tokenizer.vocab_size:,} "
                f"pieces, more than the model's vocabulary of {size:,})"
            )


def _check_finite(state: dict[str, torch.Tensor], name: str) -> None:
    bad = sorted(key for key, tensor in state.items() if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()))
    if bad:
        raise CheckpointError(
            f"{name}: the model holds NaN or infinite weights ({', '.join(bad[:3])}"
            f"{' ...' if len(bad) > 3 else ''}); it cannot be used"
        )


def from_bytes(data: bytes, name: str = "model file", device: str | torch.device = "cpu") -> ModelBundle:
    """A bundle from a whole file's bytes; every part is checked before the model is built."""
    entries, metadata, data_start = _read_header(data, len(data), name)
    config = _check_config(metadata, entries, name)
    _check_digest(data, entries, metadata, data_start, name)
    try:
        tensors = load_tensors(bytes(data))
    except Exception as error:  # safetensors raises its own error type on any inconsistency
        raise CheckpointError(f"{name}: damaged or truncated model file ({error})") from None
    corpus = _check_corpus(_json_field(metadata, "corpus", "null", name), name)
    history = _check_history(_json_field(metadata, "history", "{}", name), name)
    training = _check_record(_json_field(metadata, "training", "{}", name), "training", name)
    try:
        source_tokenizer = Tokenizer(tensors.pop("tokenizer.source").numpy().tobytes())
        if "tokenizer.target" in tensors:
            target_tokenizer = Tokenizer(tensors.pop("tokenizer.target").numpy().tobytes())
        else:
            target_tokenizer = source_tokenizer
    except (KeyError, TypeError, ValueError, TokenizerError) as error:
        raise CheckpointError(f"{name}: damaged model file ({error})") from None
    _check_tokenizers(source_tokenizer, target_tokenizer, config, name)
    state = {key.removeprefix("model."): tensor for key, tensor in tensors.items() if key.startswith("model.")}
    _check_finite(state, name)
    model = build_network(config)
    model.load_state_dict(state, strict=True)
    model.to(device).eval()
    return ModelBundle(model, source_tokenizer, target_tokenizer, corpus, history, training)


def load(path: str | os.PathLike, device: str | torch.device = "cpu") -> ModelBundle:
    """Load a model file. Only a regular file is opened (a FIFO or device would block or never end; model/files.py),
    and its header is checked (size, config, shapes) before the rest is read."""
    path = Path(path)
    with open_input(path, "model file", CheckpointError) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8)
            if len(head) == 8:
                (header_size,) = struct.unpack("<Q", head)
                head += handle.read(min(header_size, MAX_HEADER_BYTES, max(size - 8, 0)))
            entries, metadata, _ = _read_header(head, size, str(path))
            _check_config(metadata, entries, str(path))  # before the weights are read, let alone built
            handle.seek(0)
            data = handle.read(size)  # exactly the size the header describes, in one piece
            if len(data) != size:
                raise CheckpointError(f"{path}: damaged model file (it changed while being read)")
        except OSError as error:
            raise CheckpointError(f"{path}: cannot be read ({error.strerror or error})") from None
    bundle = from_bytes(data, str(path), device)
    bundle.path = str(path)
    return bundle
