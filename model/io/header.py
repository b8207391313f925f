"""A safetensors header's tensor entries, checked to be well formed before anything is read from them: the model
file's loader (model/io/checkpoint.py) and the timeline's (model/io/timeline.py) both refuse a malformed one."""

from __future__ import annotations

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
