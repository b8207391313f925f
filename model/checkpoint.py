"""Self-contained model files: config, weights, tokenizers, corpus description and training history.

The file is a safetensors file: a JSON header (with our metadata as strings) followed by raw
tensor bytes. Loading parses that header and copies numbers; it never unpickles and so never
executes anything from the file. Saving writes a temporary file beside the target, syncs it and
renames it over the target, so an interrupted save leaves the previous file intact.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from .config import ConfigError, TransformerConfig
from .corpora import CorpusSpec
from .files import OutputError, atomic_output, check_output
from .tokenizer import Tokenizer, TokenizerError
from .transformer import Transformer

FORMAT = "transformer-explorer/1"
MAX_HEADER_BYTES = 100 * 1024 * 1024


class CheckpointError(ValueError):
    """A model file that cannot be read or written; the message says why."""


@dataclass
class ModelBundle:
    """A model with everything needed to use it: tokenizers, what it was trained on, how it went."""

    model: Transformer
    source_tokenizer: Tokenizer
    target_tokenizer: Tokenizer
    corpus: CorpusSpec | None = None
    history: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)  # the TrainingOptions used, as a dict
    path: str | None = None  # where it was loaded from or last saved to

    @property
    def config(self) -> TransformerConfig:
        return self.model.config

    def describe(self) -> str:
        corpus = self.corpus.describe() if self.corpus else "unknown corpus"
        return f"{corpus}: {self.config.describe()}, {self.model.parameter_count():,} parameters"


def _metadata(bundle: ModelBundle) -> dict[str, str]:
    joint = bundle.source_tokenizer is bundle.target_tokenizer or (
        bundle.source_tokenizer.model_proto == bundle.target_tokenizer.model_proto)
    return {
        "format": FORMAT,
        "config": json.dumps(bundle.config.to_dict()),
        "corpus": json.dumps(bundle.corpus.to_dict() if bundle.corpus else None),
        "history": json.dumps(bundle.history),
        "training": json.dumps(bundle.training),
        "joint_tokenizer": json.dumps(joint),
    }


def to_bytes(bundle: ModelBundle) -> bytes:
    # Copies: the parameters of a model being trained are views into one buffer, which safetensors refuses.
    tensors = {f"model.{name}": tensor.detach().to("cpu", copy=True).contiguous()
               for name, tensor in bundle.model.state_dict().items()}
    tensors["tokenizer.source"] = torch.frombuffer(bytearray(bundle.source_tokenizer.model_proto), dtype=torch.uint8)
    metadata = _metadata(bundle)
    if metadata["joint_tokenizer"] != "true":
        tensors["tokenizer.target"] = torch.frombuffer(bytearray(bundle.target_tokenizer.model_proto),
                                                       dtype=torch.uint8)
    return save_tensors(tensors, metadata=metadata)


def save(bundle: ModelBundle, path: str | os.PathLike) -> Path:
    """Write atomically (model.files.atomic_output): a failure leaves an earlier file as it was."""
    try:
        path = check_output(path)
        data = to_bytes(bundle)
        with atomic_output(path) as temporary, open(temporary, "wb") as handle:
            handle.write(data)
    except OutputError as error:
        raise CheckpointError(str(error)) from None
    bundle.path = str(path)
    return path


def _read_metadata(data: bytes, name: str) -> dict[str, str]:
    if len(data) < 8:
        raise CheckpointError(f"{name}: not a Transformer Explorer model (file too short)")
    (header_size,) = struct.unpack("<Q", data[:8])
    if header_size > min(MAX_HEADER_BYTES, len(data) - 8):
        raise CheckpointError(f"{name}: not a Transformer Explorer model (or the file is truncated)")
    try:
        header = json.loads(data[8:8 + header_size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CheckpointError(f"{name}: not a Transformer Explorer model (unreadable header)") from None
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise CheckpointError(f"{name}: a safetensors file, but not a Transformer Explorer model")
    return metadata


def from_bytes(data: bytes, name: str = "model file", device: str | torch.device = "cpu") -> ModelBundle:
    metadata = _read_metadata(data, name)
    try:
        tensors = load_tensors(data)
    except Exception as error:  # safetensors raises its own error type on any inconsistency
        raise CheckpointError(f"{name}: damaged or truncated model file ({error})") from None
    try:
        config = TransformerConfig.from_dict(json.loads(metadata["config"]))
        corpus_data = json.loads(metadata.get("corpus", "null"))
        corpus = CorpusSpec.from_dict(corpus_data) if corpus_data else None
        history = json.loads(metadata.get("history", "{}"))
        training = json.loads(metadata.get("training", "{}"))
        source_tokenizer = Tokenizer(tensors.pop("tokenizer.source").numpy().tobytes())
        if "tokenizer.target" in tensors:
            target_tokenizer = Tokenizer(tensors.pop("tokenizer.target").numpy().tobytes())
        else:
            target_tokenizer = source_tokenizer
    except (KeyError, TypeError, ValueError, ConfigError, TokenizerError) as error:
        raise CheckpointError(f"{name}: damaged model file ({error})") from None
    model = Transformer(config)
    state = {key.removeprefix("model."): tensor for key, tensor in tensors.items() if key.startswith("model.")}
    expected = model.state_dict()
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    wrong_shape = sorted(k for k in set(expected) & set(state) if expected[k].shape != state[k].shape)
    if missing or unexpected or wrong_shape:
        details = "; ".join(f"{what}: {', '.join(keys[:3])}{' ...' if len(keys) > 3 else ''}"
                            for what, keys in (("missing", missing), ("unexpected", unexpected),
                                               ("wrong shape", wrong_shape)) if keys)
        raise CheckpointError(f"{name}: the weights do not fit the model's config, perhaps a file from another "
                              f"version ({details})")
    model.load_state_dict(state, strict=True)
    model.to(device).eval()
    return ModelBundle(model, source_tokenizer, target_tokenizer, corpus, history, training)


def load(path: str | os.PathLike, device: str | torch.device = "cpu") -> ModelBundle:
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such file")
    if path.is_dir():
        raise CheckpointError(f"{path}: is a folder, not a model file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CheckpointError(f"{path}: cannot be read ({error.strerror or error})") from None
    bundle = from_bytes(data, str(path), device)
    bundle.path = str(path)
    return bundle
