"""The record every exported figure and table carries (issue 44): what drew it, so that a reader can tell which model,
sentence, view and options made it, and the app can draw it again.

A record is one JSON object: the format's name and version, the app's version, the **command** that draws the same
file (the ``transformer-explorer`` arguments, ``--out`` left out: the window's exports write the command of the same
view, so the two carry the same record), the model (how it was named, its tensors' SHA-256, the timeline snapshot
shown), its tokenizers' SHA-256, the input (the sentence, any forced tokens), the view and every option that shaped it,
and the versions of Python, torch, NumPy, matplotlib and transformers. Keys are written sorted and nothing in it
depends on the time, so the same figure gives the same file.
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import torch

from model.errors import UserError
from model.family import Bundle
from model.io.digest import bundle_digest
from model.io.models import is_pretrained_name
from model.io.shipped import resolve_model

FORMAT = "transformer-explorer figure record"
VERSION = 1  # the record's own format; a reader refuses a newer one
LIBRARIES = ("torch", "numpy", "matplotlib", "transformers")
BEYOND = "not on the command line"  # the view's entry naming what the command cannot draw


class RecordError(UserError):
    """A file with no record, a damaged one or one of a newer format; the message says which, in one line."""


def app_version() -> str:
    try:
        return metadata.version("transformer-explorer")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def library_versions() -> dict[str, str]:
    """The versions that can change how a figure is drawn ("absent" for a library not installed)."""
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def tokenizer_digest(bundle: Bundle) -> str:
    """SHA-256 of the pieces of every id of the source and target tokenizers (what maps text to the model's ids)."""
    digest = hashlib.sha256()
    for tokenizer in (bundle.source_tokenizer, bundle.target_tokenizer):
        digest.update("\n".join(tokenizer.pieces(list(range(tokenizer.vocab_size)))).encode("utf-8") + b"\0")
    return digest.hexdigest()


@dataclass
class Record:
    command: list[str]  # the arguments of ``transformer-explorer`` that draw it, without --out
    model: dict[str, Any] = field(default_factory=dict)  # source (as named), sha256, snapshot
    tokenizer: dict[str, Any] = field(default_factory=dict)  # sha256
    input: dict[str, Any] = field(default_factory=dict)  # text, forced tokens
    view: dict[str, Any] = field(default_factory=dict)  # the view and every option that shaped it
    app: str = field(default_factory=app_version)
    versions: dict[str, str] = field(default_factory=library_versions)
    version: int = VERSION

    def beyond_the_command(self, what: str) -> None:
        """Name ``what`` the file shows that its command cannot draw (``reproduce`` then refuses it, saying so)."""
        if what:
            known = self.view.get(BEYOND)
            self.view[BEYOND] = f"{known}; {what}" if known else what

    def to_json(self) -> str:
        data = {"format": FORMAT, "version": self.version, "app": self.app, "command": self.command, "model": self.model,
                "tokenizer": self.tokenizer, "input": self.input, "view": self.view, "versions": self.versions}  # fmt: skip
        return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def describe(self) -> list[str]:
        """The record as people read it, one fact a line."""
        lines = [f"drawn by Transformer Explorer {self.app} (record format {self.version})"]
        model = self.model
        if model:
            analysed = f", analysed in {model['dtype']}" if model.get("dtype") else ""
            lines.append(f"model: {model.get('source', '?')} (tensors SHA-256 {str(model.get('sha256', '?'))[:16]}…{analysed})")
        if model.get("snapshot"):
            lines.append(f"snapshot: {model['snapshot']}")
        if self.input.get("text"):
            lines.append(f"sentence: {self.input['text']!r}")
        if self.input.get("forced"):
            lines.append(f"forced tokens: {self.input['forced']}")
        lines += [f"{key}: {value}" for key, value in sorted(self.view.items()) if value is not None]  # None: not set
        lines.append("versions: " + ", ".join(f"{name} {version}" for name, version in sorted(self.versions.items())))
        lines.append("draw it again: transformer-explorer " + " ".join(_quoted(part) for part in self.command) + " --out FILE")
        return lines


def _quoted(part: str) -> str:
    return part if part and all(c.isalnum() or c in "-_.,/:=" for c in part) else json.dumps(part, ensure_ascii=False)


OBJECTS = ("model", "tokenizer", "input", "view", "versions")  # a record's parts that are JSON objects (or absent)


def parse_record(text: str, where: str = "the file") -> Record:
    """A record from its JSON; a RecordError (one line) for a damaged one (not JSON, or a part of the wrong JSON type)
    or one of a newer format."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        raise RecordError(f"{where}: its record is damaged (not JSON)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("command"), list):
        raise RecordError(f"{where}: its record is damaged (not a {FORMAT})")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RecordError(f"{where}: its record is damaged (its format number is {json.dumps(version)}, not a whole number)")
    if version > VERSION:
        raise RecordError(f"{where}: its record is of format {version}, newer than this app reads ({VERSION}): update the app")
    wrong = [name for name in OBJECTS if not isinstance(data.get(name) or {}, dict)]
    wrong += [] if isinstance(data.get("app", ""), str) else ["app"]
    if wrong:
        raise RecordError(f"{where}: its record is damaged ({', '.join(wrong)} not what a record holds there)")
    parts = {name: dict(data.get(name) or {}) for name in OBJECTS}
    return Record(
        [str(part) for part in data["command"]], parts["model"], parts["tokenizer"], parts["input"], parts["view"],
        str(data.get("app", "unknown")), {str(k): str(v) for k, v in parts["versions"].items()}, version,
    )  # fmt: skip


def record_of(command: list[str], bundle: Bundle | None, source: str, view: dict[str, Any], text: str = "",
              forced: list[Any] | None = None, snapshot: str = "") -> Record:  # fmt: skip
    """The record of a file drawn by ``command`` from ``bundle`` (named ``source``; None: a command that trains its own
    models, as ``lengths``)."""
    inputs = {"text": text, "forced": list(forced or [])}
    if bundle is None:
        return Record(list(command), {}, {}, inputs, dict(view))
    model = {"source": source, "sha256": bundle_digest(bundle), "snapshot": snapshot or None}
    dtype = next(iter(bundle.model.parameters())).dtype  # what every network computes in: 16 bits only if asked (--dtype)
    if dtype != torch.float32:
        model["dtype"] = str(dtype).removeprefix("torch.")
    record = Record(list(command), model, {"sha256": tokenizer_digest(bundle)}, inputs, dict(view))
    if not getattr(bundle, "path", None) and not _opens(source):  # trained here and not saved: nothing to open
        record.beyond_the_command("a model not saved to a file")
    return record


def _opens(source: str) -> bool:
    """Whether the command line can open a model named ``source`` (a file, a folder, a shipped model's name, an id)."""
    try:
        return is_pretrained_name(source) or resolve_model(source).exists()
    except UserError:
        return False
