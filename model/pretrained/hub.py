"""Finding pretrained models on disk, never on the network.

A model is either a folder in the ``save_pretrained`` layout (a ``config.json`` beside the weights and
the tokenizer files) or the id of a model already in the local Hugging Face cache
(``~/.cache/huggingface/hub``, or wherever ``HF_HUB_CACHE`` / ``HF_HOME`` point). An id that is not
there gets a message with the command that fetches it on a connected machine.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from model.errors import UserError

INSTALL_HINT = (
    'pretrained models need the optional extra: pip install "transformer-explorer[hf]" (or pip install ".[hf]" in a checkout)'
)
MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")  # "t5-small", "Helsinki-NLP/opus-mt-en-fr"


class PretrainedError(UserError):
    """A pretrained model that cannot be found, read or run; the message says why and what to do."""


def go_offline() -> None:
    """Make sure nothing reaches the network: set before transformers / huggingface_hub are imported."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # a forked worker must not deadlock


def require_transformers():
    """The transformers module, offline; a PretrainedError saying how to install it when it is missing."""
    go_offline()
    try:
        # deferred: the optional "hf" extra: its absence is a clear message, not an ImportError at start
        import transformers
    except ImportError:
        raise PretrainedError(INSTALL_HINT) from None
    transformers.logging.set_verbosity_error()  # its warnings are for developers, not for the app's users
    return transformers


def transformers_available() -> bool:
    try:
        # deferred: only asked when a pretrained model is opened
        import importlib.util

        return importlib.util.find_spec("transformers") is not None
    except (ImportError, ValueError):
        return False


def is_pretrained_folder(path: str | os.PathLike) -> bool:
    """A folder holding a ``config.json`` (the save_pretrained layout)."""
    path = Path(path).expanduser()
    return path.is_dir() and (path / "config.json").is_file()


def hub_cache() -> Path:
    """The Hugging Face hub cache folder, as huggingface_hub finds it (without importing it)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


@dataclass
class CachedModel:
    model_id: str  # "Helsinki-NLP/opus-mt-en-fr"
    folder: Path  # the snapshot folder holding config.json
    architecture: str  # from config.json, "" when it names none
    size_bytes: int  # of its weight files


def _snapshot(repo_folder: Path) -> Path | None:
    """The snapshot a cache entry's ``refs/main`` points to, else the newest one with a config.json."""
    snapshots = repo_folder / "snapshots"
    ref = repo_folder / "refs" / "main"
    if ref.is_file():
        folder = snapshots / ref.read_text().strip()
        if (folder / "config.json").is_file():
            return folder
    found = [p for p in snapshots.glob("*") if (p / "config.json").is_file()] if snapshots.is_dir() else []
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def weight_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())


def cached_models(cache: Path | None = None) -> list[CachedModel]:
    """Every model in the local hub cache that has a config.json and weights, sorted by id."""
    cache = cache or hub_cache()
    models = []
    for repo in sorted(cache.glob("models--*")) if cache.is_dir() else []:
        folder = _snapshot(repo)
        if folder is None or not weight_files(folder):
            continue
        try:
            architectures = json.loads((folder / "config.json").read_text()).get("architectures") or [""]
        except (OSError, ValueError, AttributeError):
            continue
        size = sum(p.stat().st_size for p in weight_files(folder))
        models.append(CachedModel(repo.name[len("models--") :].replace("--", "/"), folder, str(architectures[0]), size))
    return models


def fetch_command(model_id: str) -> str:
    return f"hf download {model_id}"


def resolve_pretrained(name_or_path: str) -> Path:
    """The folder of a pretrained model: a save_pretrained folder, or a cached id. PretrainedError otherwise."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if is_pretrained_folder(path):
            return path
        raise PretrainedError(f"{name_or_path}: a folder without a config.json, so not a saved pretrained model")
    for model in cached_models():
        if model.model_id == name_or_path:
            return model.folder
    if MODEL_ID.match(name_or_path):
        raise PretrainedError(
            f"{name_or_path}: not on this computer (no such folder, and not in the Hugging Face cache at {hub_cache()}). "
            f"The app never downloads: on a connected machine run `{fetch_command(name_or_path)}` "
            "(pip install huggingface_hub), then copy its cache folder here, or open a folder saved with save_pretrained."
        )
    raise PretrainedError(f"{name_or_path}: no such folder or model id")
