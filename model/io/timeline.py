"""The timeline file: a model's weights at moments of its training, beside its model file (``NAME.timeline.safetensors``
next to ``NAME.safetensors``), and reading it back as a ``Timeline`` (model/io/snapshots.py).

The file is one safetensors file (a JSON header, then raw tensor bytes; reading it unpickles and runs nothing):

- tensors ``snapshot.{i}.{param}``: the weights of snapshot ``i``, float16 (storage "float16"), or for a matrix int8
  with float16 per-row scales in ``scale.{i}.{param}`` (storage "int8", model/io/quantized.py). A snapshot whose weights
  are the model file's own (the last one, the final model, and the best validation's when training kept it) has none:
  it is read from the model, so the final weights are exact and never stored twice;
- metadata (strings): ``format`` ("transformer-explorer-timeline/1"), ``family`` and ``config`` (JSON), ``storage``,
  ``snapshots`` (JSON records: step, elapsed_seconds, train_loss, validation, final, kept_step, weights "snapshot" or
  "model"), ``model_sha256`` (the model file's tensor digest, model/io/digest.py: a timeline of another model is
  refused) and ``tensor_sha256`` (the digest of this file's tensors and other metadata: a flipped byte or a truncation
  is refused).

It is written with its model file as a pair, both or neither (``timeline_to_save`` says what goes beside the model;
model/io/pair.py writes the two). Every failure to read one is a ``TimelineError`` of one line; the model itself opens
without its timeline (opening a model never reads it). A folder of Hugging Face Trainer checkpoints is a timeline too
(model/io/checkpoint_folders.py).
"""

from __future__ import annotations

import copy
import json
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from model.files import OutputError, atomic_output, check_output, open_input
from model.io.bundle import ModelBundle
from model.io.checkpoint_folders import checkpoints_folder_of, checkpoints_timeline
from model.io.digest import model_digest, raw_bytes, tensor_digest
from model.io.header import MAX_HEADER_BYTES, check_length, json_header, tensor_entries
from model.io.pair import REMOVE, settle
from model.io.quantized import dequantize_rows, is_quantized, quantize_rows, rows_of
from model.io.shipped import TIMELINE_SUFFIX
from model.io.snapshots import Recording, Snapshot, Timeline, TimelineError, snapshots_from_records

FORMAT_NAME = "transformer-explorer-timeline"
FORMAT_VERSION = 1
FORMAT = f"{FORMAT_NAME}/{FORMAT_VERSION}"
STORAGES = ("float16", "int8")  # how intermediate snapshots are kept: half precision, or int8 rows with float16 scales
DIGEST_KEY = "tensor_sha256"
MODEL_DIGEST_KEY = "model_sha256"
Weights = dict[str, torch.Tensor]  # a snapshot's stored tensors by parameter name


def timeline_path(model_path: str | os.PathLike) -> Path:
    """Where the timeline of the model file ``model_path`` is: ``NAME.timeline.safetensors`` beside ``NAME.safetensors``
    (or beside ``NAME.model``, or ``NAME``)."""
    path = Path(model_path)
    return path.with_name(path.stem + TIMELINE_SUFFIX)


def find_timeline(model_path: str | os.PathLike) -> Path | None:
    """The timeline of a model, if it has one: the file beside a model file, or the folder of Hugging Face checkpoints
    a model folder belongs to (or is). One or two file-system looks; nothing is read."""
    folder = checkpoints_folder_of(model_path)
    if folder is not None:
        return folder
    settle(model_path)  # a save stopped between its two renames is finished first (model/io/pair.py)
    path = timeline_path(model_path)
    return path if path.is_file() else None


def load_timeline(model_path: str | os.PathLike, bundle: ModelBundle | None = None) -> Timeline:
    """The timeline of the model at ``model_path`` (opened as ``bundle``, whose weights are the final snapshot's), or
    of a folder of Hugging Face checkpoints (``bundle`` unused). A TimelineError of one line when there is none or it
    cannot be used (damaged, truncated, of another model, of a newer format)."""
    folder = checkpoints_folder_of(model_path)
    if folder is not None:
        return checkpoints_timeline(folder)
    if Path(model_path).is_dir():  # a pretrained model's folder with no checkpoint-N/ folders in or beside it
        raise TimelineError(
            f"{model_path}: a pretrained model's folder has no timeline; a folder of Hugging Face Trainer checkpoints "
            "(checkpoint-500/, ...) has one"
        )
    if bundle is None:
        raise ValueError("a model file's timeline needs the model's bundle (its final weights and tokenizers)")
    settle(model_path)  # a save stopped between its two renames is finished first (model/io/pair.py)
    path = timeline_path(model_path)
    if not path.exists():
        raise TimelineError(
            f"{model_path}: has no timeline ({path.name} is not beside it; training records one unless --no-timeline)"
        )
    return read_timeline(path, bundle)


def timeline_from_recording(recording: Recording, bundle: ModelBundle) -> Timeline:
    """The timeline of a model just trained and not saved yet (its recording in memory, half precision)."""
    shapes = _parameter_shapes(bundle.model)
    weights = [recording.named_weights(i, shapes) for i in range(len(recording.snapshots))]
    where = timeline_path(bundle.path) if bundle.path else Path("unsaved.timeline.safetensors")
    return Timeline(where, list(recording.snapshots), _restorer(bundle, weights, [{} for _ in weights]), "float16")


# --- writing -------------------------------------------------------------------------------------------------------
def timeline_to_save(
    bundle: ModelBundle, model_path: str | os.PathLike, digest: str, earlier: str | os.PathLike | None = None
) -> bytes | Path | str | None:
    """What is written beside the model file ``model_path`` (tensor digest ``digest``) as its timeline, with it as a pair
    (model/io/pair.py): the bundle's recording (its bytes); with none, the timeline beside the file it was loaded from
    (``earlier``: "Save as" keeps it; its path, to copy); ``REMOVE`` for a timeline there that belongs to another model
    (the one the file held before); None when the one there (or none) stays."""
    if bundle.recording is not None:
        try:
            return timeline_bytes(bundle.recording, bundle, digest)
        except TimelineError as error:
            raise TimelineError(f"{model_path} was not saved: its timeline cannot be written ({error})") from None
    path = timeline_path(model_path)
    if earlier is not None and Path(earlier).resolve() != Path(model_path).resolve():
        source = timeline_path(earlier)
        if source.is_file() and _model_digest_of(source) == digest:
            return source
    if path.is_file() and _model_digest_of(path) not in (None, digest):
        return REMOVE
    return None


def save_timeline(recording: Recording, bundle: ModelBundle, path: str | os.PathLike, digest: str | None = None) -> Path:
    """Write ``recording`` (of ``bundle``'s training; ``digest``: its model file's, computed when not given) atomically
    to ``path``, alone (a model saved with its timeline goes through checkpoint.save); a TimelineError when it cannot be
    written (an earlier file is then left as it was)."""
    try:
        path = check_output(path)
        data = timeline_bytes(recording, bundle, digest or model_digest(bundle))
        with atomic_output(path) as temporary, open(temporary, "wb") as handle:
            handle.write(data)
    except OutputError as error:
        raise TimelineError(str(error)) from None
    return path


def timeline_bytes(recording: Recording, bundle: ModelBundle, digest: str) -> bytes:
    """The timeline file's bytes: the recorded snapshots' weights (the model's own left out) and their records."""
    if recording.storage not in STORAGES:
        raise TimelineError(f"timeline storage must be one of {', '.join(STORAGES)}, got {recording.storage!r}")
    shapes = _parameter_shapes(bundle.model)
    if list(shapes) != recording.names:
        raise TimelineError("the recorded snapshots do not fit the model's parameters")
    tensors: dict[str, torch.Tensor] = {}
    for index in range(len(recording.snapshots)):
        named = recording.named_weights(index, shapes)
        if named is not None:
            tensors.update(_encoded(index, named, recording.storage))
    records = [snapshot.to_dict() for snapshot in recording.snapshots]
    metadata = {
        "format": FORMAT,
        "family": bundle.family.name,
        "config": json.dumps(bundle.config.to_dict()),
        "storage": recording.storage,
        "snapshots": json.dumps(records, allow_nan=False),
        MODEL_DIGEST_KEY: digest,
    }
    metadata[DIGEST_KEY] = _digest([(key, raw_bytes(tensor)) for key, tensor in tensors.items()], metadata)
    return save_tensors(tensors, metadata=metadata)


def _encoded(index: int, named: Weights, storage: str) -> dict[str, torch.Tensor]:
    """Snapshot ``index``'s tensors as the file stores them (copies: safetensors refuses views of one buffer)."""
    tensors = {}
    for name, weights in named.items():
        key = f"snapshot.{index}.{name}"
        if storage == "int8" and is_quantized(weights.shape):
            tensors[key], tensors[f"scale.{index}.{name}"] = quantize_rows(weights)  # [*shape] int8, [rows] float16
        else:
            tensors[key] = weights.to(torch.float16).contiguous().clone()  # [*shape]
    return tensors


def _digest(named_bytes: Sequence[tuple[str, object]], metadata: dict[str, str]) -> str:
    """The file's own digest: its tensors and every metadata field but the digest itself."""
    header = json.dumps({key: value for key, value in metadata.items() if key != DIGEST_KEY}, sort_keys=True)
    return tensor_digest([*named_bytes, ("__metadata__", header.encode("utf-8"))])


def _parameter_shapes(model: Any) -> dict[str, torch.Size]:
    """The trainable parameters, by name in the model's order (the order of the trainer's flat buffer)."""
    return {name: parameter.shape for name, parameter in model.named_parameters() if parameter.requires_grad}


# --- reading -------------------------------------------------------------------------------------------------------
def read_timeline(path: str | os.PathLike, bundle: ModelBundle) -> Timeline:
    """The timeline file at ``path`` of the model ``bundle``: checked whole (format, size, its digest, that it belongs
    to this model, every record and tensor) before it is accepted."""
    path = Path(path)
    with open_input(path, "timeline file", TimelineError) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8)
            if len(head) == 8:
                (header_size,) = struct.unpack("<Q", head)
                head += handle.read(min(header_size, MAX_HEADER_BYTES, max(size - 8, 0)))
            entries, metadata, data_start = _read_header(head, size, str(path))
            handle.seek(0)
            data = handle.read(size)
            if len(data) != size:
                raise TimelineError(f"{path}: damaged timeline file (it changed while being read)")
        except OSError as error:
            raise TimelineError(f"{path}: cannot be read ({error.strerror or error})") from None
    return _timeline_from(data, entries, metadata, data_start, path, bundle)


def _read_header(head: bytes, file_size: int, name: str) -> tuple[dict[str, dict], dict[str, str], int]:
    """Tensor entries, metadata and where the tensor data starts; the file must be exactly as long as its header says."""
    if file_size == 0:
        raise TimelineError(f"{name}: not a timeline file (it is empty)")
    header, metadata, header_size = json_header(head, file_size, name, TimelineError, "not a timeline file")
    if metadata is None:
        raise TimelineError(f"{name}: a safetensors file, but not a Transformer Explorer timeline")
    _check_format(metadata.get("format"), name)
    if not all(isinstance(value, str) for value in metadata.values()):
        raise TimelineError(f"{name}: damaged timeline file (its metadata must be text)")
    entries = _entries(header, name)
    check_length(entries, header_size, file_size, name, TimelineError, "timeline file")
    return entries, metadata, 8 + header_size


def _check_format(found: object, name: str) -> None:
    if found == FORMAT:
        return
    if isinstance(found, str) and found.startswith(FORMAT_NAME + "/"):
        version = found.split("/", 1)[1]
        if version.isdigit() and int(version) > FORMAT_VERSION:
            raise TimelineError(
                f"{name}: a timeline of format {version}, written by a newer version of the app (this one reads format "
                f"{FORMAT_VERSION}); update the app to open it"
            )
        raise TimelineError(f"{name}: an unknown timeline format ({found[:40]!r}; this version reads {FORMAT!r})")
    if isinstance(found, str) and found.startswith("transformer-explorer/"):
        raise TimelineError(f"{name}: a model file, not a timeline")
    raise TimelineError(f"{name}: a safetensors file, but not a Transformer Explorer timeline")


def _entries(header: dict, name: str) -> dict[str, dict]:
    """The header's tensor entries, checked to be well formed (model/io/header.py)."""
    return tensor_entries(header, name, TimelineError, "timeline file")


def _model_digest_of(path: Path) -> str | None:
    """The ``model_sha256`` of the timeline file at ``path`` from its header alone; None when it is not readable."""
    try:
        with open_input(path, "timeline file", TimelineError) as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8)
            (header_size,) = struct.unpack("<Q", head) if len(head) == 8 else (0,)
            head += handle.read(min(header_size, MAX_HEADER_BYTES))
        return _read_header(head, size, str(path))[1].get(MODEL_DIGEST_KEY)
    except (TimelineError, OSError):
        return None


def _timeline_from(data: bytes, entries: dict, metadata: dict[str, str], data_start: int, path: Path, bundle: ModelBundle):
    name = str(path)
    view = memoryview(data)
    stored = [(key, view[data_start + e["data_offsets"][0] : data_start + e["data_offsets"][1]]) for key, e in entries.items()]
    if metadata.get(DIGEST_KEY) != _digest(stored, metadata):
        raise TimelineError(f"{name}: the timeline is damaged (its contents do not match its checksum)")
    model_name = Path(bundle.path).name if bundle.path else "this model"
    if metadata.get(MODEL_DIGEST_KEY) != model_digest(bundle) or metadata.get("config") != json.dumps(bundle.config.to_dict()):
        raise TimelineError(f"{name}: the timeline of another model, not of {model_name} (their weights differ)")
    storage = metadata.get("storage")
    if storage not in STORAGES:
        raise TimelineError(f"{name}: damaged timeline file (unknown storage {str(storage)[:20]!r})")
    try:
        records = json.loads(metadata.get("snapshots", "null"))
    except (json.JSONDecodeError, RecursionError):
        raise TimelineError(f"{name}: damaged timeline file (its snapshots are not valid JSON)") from None
    snapshots = snapshots_from_records(records, name)
    shapes = _parameter_shapes(bundle.model)
    _check_entries(entries, snapshots, shapes, storage, name)
    try:
        tensors = load_tensors(bytes(data))
    except Exception as error:  # safetensors raises its own error type on any inconsistency
        raise TimelineError(f"{name}: damaged timeline file ({error})") from None
    weights: list[Weights | None] = []
    scales: list[Weights] = []
    for snapshot in snapshots:
        stored_here = not snapshot.from_model
        weights.append({p: tensors[f"snapshot.{snapshot.index}.{p}"] for p in shapes} if stored_here else None)
        scales.append({p: tensors[f"scale.{snapshot.index}.{p}"] for p in shapes if f"scale.{snapshot.index}.{p}" in tensors})
    bad = [key for key, tensor in tensors.items() if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    if bad:
        raise TimelineError(f"{name}: the timeline holds NaN or infinite weights ({', '.join(sorted(bad)[:2])})")
    return Timeline(path, snapshots, _restorer(bundle, weights, scales), storage)


def _check_entries(
    entries: dict[str, dict], snapshots: list[Snapshot], shapes: dict[str, torch.Size], storage: str, name: str
) -> None:
    """Every stored snapshot has exactly one tensor per parameter, of its shape and the storage's type (and scales)."""
    expected: dict[str, tuple[str, list[int]]] = {}
    for snapshot in snapshots:
        if snapshot.from_model:
            continue
        for parameter, shape in shapes.items():
            key = f"snapshot.{snapshot.index}.{parameter}"
            if storage == "int8" and is_quantized(shape):
                expected[key] = ("I8", list(shape))
                expected[f"scale.{snapshot.index}.{parameter}"] = ("F16", [rows_of(shape)])
            else:
                expected[key] = ("F16", list(shape))
    found = {key: (entry["dtype"], entry["shape"]) for key, entry in entries.items()}
    if found != expected:
        missing, unexpected = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        wrong = sorted(key for key in set(found) & set(expected) if found[key] != expected[key])
        details = "; ".join(
            f"{what}: {', '.join(keys[:2])}{' ...' if len(keys) > 2 else ''}"
            for what, keys in (("missing", missing), ("unexpected", unexpected), ("wrong type or shape", wrong))
            if keys
        )
        raise TimelineError(f"{name}: damaged timeline file (its snapshots do not fit the model: {details})")


def _restorer(bundle: ModelBundle, weights: list[Weights | None], scales: list[Weights]) -> Callable[[int], ModelBundle]:
    """index -> a new bundle: the final model copied, with snapshot ``index``'s weights in float32 (none: the model's)."""

    def restore(index: int) -> ModelBundle:
        model: Any = copy.deepcopy(bundle.model)  # a TrainableNetwork: an nn.Module
        named = weights[index]
        if named is not None:
            with torch.no_grad():
                for parameter_name, parameter in model.named_parameters():
                    stored = named.get(parameter_name)
                    if stored is None:
                        continue
                    scale = scales[index].get(parameter_name)
                    parameter.copy_(stored if scale is None else dequantize_rows(stored, scale))  # [*shape] float32
        model.eval()
        return ModelBundle(model, bundle.source_tokenizer, bundle.target_tokenizer, bundle.corpus, bundle.history, bundle.training)

    return restore
