"""Reading a weight file's header before anything is built: what tensors it holds, and whether it is whole.

A safetensors file is an 8-byte little-endian header length, a JSON object naming each tensor's dtype,
shape and byte range (``data_offsets``, from the end of the header), then the bytes themselves. A file
that was cut short, edited or forged can say anything there; ``read_safetensors`` checks every claim
against the file (an object of objects, known dtypes, shapes of whole numbers, ranges that are as long as
dtype × shape, lie inside the file, do not overlap and cover it) and raises one ``PretrainedError`` that
names the file and what is wrong, so the library never meets it. ``layer_stacks`` reads from the tensors'
names how many layers each stack (encoder, decoder) holds, to compare with what the config asks for.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from model.pretrained.hub import PretrainedError

HEADER_LIMIT = 100 * 1024 * 1024  # bytes: the largest real headers (thousands of tensors) are a few MB
BITS = {  # bits per value of each dtype safetensors knows
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16, "F16": 16,
    "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
LAYER_WORDS = ("block", "layer", "layers", "h")  # what a stack of layers is called in the families here
STACK = re.compile(r"^(.*?)\.(\d+)\.")  # "encoder.block.3.layer.0..." -> ("encoder.block", "3")


@dataclass(frozen=True)
class TensorEntry:
    dtype: str
    shape: tuple[int, ...]
    begin: int  # byte range in the data part
    end: int

    @property
    def values(self) -> int:
        count = 1
        for dimension in self.shape:
            count *= dimension
        return count


def _refuse(path: Path, problem: str) -> PretrainedError:
    return PretrainedError(f"{path.name}: {problem} (in {path.parent}); the file is damaged or not a safetensors file")


def _header(path: Path) -> tuple[dict, int]:
    """(the header's JSON object, the number of data bytes after it)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        start = handle.read(8)
        if len(start) < 8:
            raise _refuse(path, f"the file holds {len(start)} bytes, too few for a header")
        (length,) = struct.unpack("<Q", start)
        if length > HEADER_LIMIT or length > size - 8:
            raise _refuse(path, f"its header claims {length:,} bytes, and the file holds {size:,}")
        text = handle.read(length)
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise _refuse(path, f"the header is not JSON ({str(error)[:120]})") from None
    if not isinstance(header, dict):
        raise _refuse(path, f"the header is not a JSON object (a {type(header).__name__})")
    return header, size - 8 - length


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(path: Path, name: str, entry: object) -> TensorEntry:
    if not isinstance(entry, dict):
        raise _refuse(path, f"the header entry for {name!r} is not an object (a {type(entry).__name__})")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in BITS:
        raise _refuse(path, f"tensor {name!r} has an unknown dtype {str(dtype)[:40]!r}")
    if not isinstance(shape, list) or not all(_whole(d) for d in shape):
        raise _refuse(path, f"tensor {name!r} has a shape that is not a list of whole numbers ({str(shape)[:60]})")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_whole(o) for o in offsets) or offsets[0] > offsets[1]:
        raise _refuse(path, f"tensor {name!r} has data_offsets that are not [begin, end] ({str(offsets)[:60]})")
    tensor = TensorEntry(str(dtype), tuple(shape), offsets[0], offsets[1])
    length = tensor.end - tensor.begin
    if length != (tensor.values * BITS[tensor.dtype] + 7) // 8:
        raise _refuse(path, f"tensor {name!r} is {tensor.dtype} {list(tensor.shape)}, its data_offsets give it {length:,} bytes")
    return tensor


def read_safetensors(path: Path) -> dict[str, TensorEntry]:
    """Every tensor a safetensors file holds, each claim checked against the file; a PretrainedError naming the
    file and the problem otherwise. No weight is read."""
    header, data_bytes = _header(path)
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not isinstance(metadata, dict):
        raise _refuse(path, "its __metadata__ is not an object")
    tensors = {str(name): _entry(path, str(name), entry) for name, entry in header.items()}
    ordered = sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end))
    described = ordered[-1][1].end if ordered else 0
    if described > data_bytes and all(a[1].end == b[1].begin for a, b in zip(ordered, ordered[1:])):
        raise _refuse(path, f"the file is cut short: its header describes {described:,} bytes of weights, {data_bytes:,} are there")
    for name, tensor in ordered:
        if tensor.end > data_bytes:
            raise _refuse(path, f"the data_offsets of tensor {name!r} point past the end of its {data_bytes:,} bytes of data")
    position = 0
    for name, tensor in ordered:
        if tensor.begin != position:
            problem = "overlaps the tensor before it" if tensor.begin < position else "leaves a gap before it"
            raise _refuse(path, f"the data_offsets of tensor {name!r} are wrong: its data {problem}")
        position = tensor.end
    if position < data_bytes:
        raise _refuse(path, f"the file holds {data_bytes - position:,} bytes more than its header describes")
    return tensors


def layer_stacks(names: list[str]) -> dict[str, int]:
    """Layers per stack, read from tensor names: {"encoder.block": 6, "decoder.block": 6}, {"transformer.h": 12}.
    Only stacks called as the families here call them (block, layer, layers, h) are counted."""
    stacks: dict[str, int] = {}
    for name in names:
        match = STACK.match(name)
        if match and match.group(1).rsplit(".", 1)[-1] in LAYER_WORDS:
            stacks[match.group(1)] = max(stacks.get(match.group(1), 0), int(match.group(2)) + 1)
    return stacks
