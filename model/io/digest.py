"""What a model file's tensors are and their SHA-256 digest, shared by the model file (model/io/checkpoint.py)
and its timeline (model/io/timeline.py), which names the model it belongs to by this digest (and a corpus index, which
names any model it was built with: ``bundle_digest``).

The digest covers every tensor's name and raw bytes in name order, so it is the same for a bundle in memory and
for the file it is saved to (whatever order safetensors lays the tensors out in), and it needs no file to compute.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import torch

from model.family import Bundle
from model.io.bundle import ModelBundle, own_bundle
from model.pretrained.offload import parameters_with_values as network_values


def tensor_digest(named_bytes: Iterable[tuple[str, object]]) -> str:
    """SHA-256 over every tensor's name and raw bytes (anything ``hashlib`` takes: bytes, a memoryview, a uint8
    array), in name order."""
    digest = hashlib.sha256()
    for key, raw in sorted(named_bytes, key=lambda item: item[0]):
        digest.update(key.encode("utf-8") + b"\0")
        digest.update(raw)  # type: ignore[arg-type]
    return digest.hexdigest()


def raw_bytes(tensor: torch.Tensor):
    """A contiguous CPU tensor's bytes as a uint8 array, without a copy."""
    return tensor.reshape(-1).view(torch.uint8).numpy()


def joint_tokenizer(bundle: ModelBundle) -> bool:
    """Whether source and target share one tokenizer (then the file stores it once)."""
    return bundle.source_tokenizer is bundle.target_tokenizer or (
        bundle.source_tokenizer.model_proto == bundle.target_tokenizer.model_proto
    )


def file_tensors(bundle: ModelBundle) -> dict[str, torch.Tensor]:
    """The tensors of the bundle's model file: ``model.NAME`` (every weight) and ``tokenizer.source``/``.target``."""
    # Copies: the parameters of a model being trained are views into one buffer, which safetensors refuses.
    tensors = {
        f"model.{name}": tensor.detach().to("cpu", copy=True).contiguous() for name, tensor in bundle.model.state_dict().items()
    }
    tensors["tokenizer.source"] = torch.frombuffer(bytearray(bundle.source_tokenizer.model_proto), dtype=torch.uint8)
    if not joint_tokenizer(bundle):
        tensors["tokenizer.target"] = torch.frombuffer(bytearray(bundle.target_tokenizer.model_proto), dtype=torch.uint8)
    return tensors


def model_digest(bundle: ModelBundle) -> str:
    """The digest the bundle's model file carries (``tensor_sha256``), computed from the bundle itself."""
    return tensor_digest((key, raw_bytes(tensor)) for key, tensor in file_tensors(bundle).items())


def bundle_digest(bundle: Bundle) -> str:
    """What names the model a corpus index was built with: an own model's file digest (``model_digest``); for any other
    network (a pretrained folder), the digest of its parameters' bytes in the network's own order."""
    own = own_bundle(bundle)
    if own is not None:
        return model_digest(own)
    parameters = (param.detach().to("cpu").contiguous() for param in network_values(bundle.model))
    return tensor_digest((f"{index:08d}", raw_bytes(param)) for index, param in enumerate(parameters))
