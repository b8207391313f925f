"""A safetensors file's header, read and checked before anything else is: its size and JSON, its tensor entries, and
that the file is exactly as long as it says. The model file's loader (model/io/checkpoint.py) and the timeline's
(model/io/timeline.py) both use it."""

from __future__ import annotations

import json
import struct

from model.errors import UserError


def tensor_entries(header: dict, name: str, error: type[UserError], what: str) -> dict[str, dict]:
    """The entries of ``header`` other than ``__metadata__``, each with a dtype, a shape and two ordered data offsets
    (non-negative integers); ``error`` "NAME: damaged WHAT (the entry of tensor K is malformed)" otherwise."""
    entries = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("dtype"), str)
            and isinstance(entry.get("shape"), list)
            and isinstance(entry.get("data_offsets"), list)
            and len(entry["data_offsets"]) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry["shape"] + entry["data_offsets"])
            and entry["data_offsets"][0] <= entry["data_offsets"][1]
        )
        if not ok:
            raise error(f"{name}: damaged {what} (the entry of tensor {key[:60]!r} is malformed)")
        entries[key] = entry
    return entries


MAX_HEADER_BYTES = 100 * 1024 * 1024  # a header larger than this is not one the app wrote


def json_header(head: bytes, file_size: int, name: str, error: type[UserError], unlike: str) -> tuple[dict, dict | None, int]:
    """(the header, its ``__metadata__`` or None, the header's size) from the first bytes of a file of ``file_size``
    bytes; ``error`` "NAME: UNLIKE (why)" when they are too short, truncated or not JSON."""
    if file_size < 8 or len(head) < 8:
        raise error(f"{name}: {unlike} (file too short)")
    (header_size,) = struct.unpack("<Q", head[:8])
    if header_size > min(MAX_HEADER_BYTES, file_size - 8) or len(head) < 8 + header_size:
        raise error(f"{name}: {unlike} (or the file is truncated)")
    try:
        header = json.loads(head[8 : 8 + header_size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise error(f"{name}: {unlike} (unreadable header)") from None
    if not isinstance(header, dict):
        return {}, None, header_size
    metadata = header.get("__metadata__")
    return header, metadata if isinstance(metadata, dict) else None, header_size


def check_length(entries: dict[str, dict], header_size: int, file_size: int, name: str, error: type[UserError], what: str) -> None:
    """The file must be exactly as long as its header says: ``error`` "NAME: damaged WHAT (truncated: ...)" otherwise."""
    expected = 8 + header_size + max((entry["data_offsets"][1] for entry in entries.values()), default=0)
    if file_size != expected:
        how = "truncated" if file_size < expected else "longer than its header describes"
        raise error(f"{name}: damaged {what} ({how}: {file_size:,} bytes, the header describes {expected:,})")
