"""Opening any model the app can show, from one name: a model file of the app's own (a path, or the name of
a shipped model), a pretrained model's ``save_pretrained`` folder, a folder of Hugging Face Trainer checkpoints (its
newest checkpoint; its timeline is every checkpoint, model/io/checkpoint_folders.py), or a pretrained model's id in the
local Hugging Face cache. The command line, the window and drag-and-drop all open models through ``open_model``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from model.device import resolve_device
from model.io import checkpoint
from model.io.checkpoint_folders import checkpoint_folders
from model.io.shipped import ModelNotFoundError, resolve_model, shipped_models
from model.pretrained.hub import MODEL_ID, cached_models, fetch_command, is_pretrained_folder
from model.pretrained.loading import load_pretrained


def is_pretrained_name(name: str) -> bool:
    """Whether ``name`` means a pretrained model: a save_pretrained folder, an "owner/name" id (not a file), or a
    bare id ("t5-small") that is in the local cache and names no shipped model."""
    path = Path(name).expanduser()
    if path.is_dir():
        return is_pretrained_folder(path) or bool(checkpoint_folders(path))
    if path.exists() or name in shipped_models() or not MODEL_ID.match(name) or name.endswith(".safetensors"):
        return False
    return "/" in name or any(model.model_id == name for model in cached_models())


def model_source(name: str) -> Path | None:
    """The file or folder a model name opens (for checks that an output does not overwrite it); None for an id
    that is resolved later."""
    if is_pretrained_name(name):
        path = Path(name).expanduser()
        return path if path.is_dir() else None
    return resolve_model(name)


def open_model(name: str, device: Any = "cpu") -> Any:
    """A ModelBundle (the app's own model file) or a PretrainedBundle; a UserError saying why otherwise."""
    if is_pretrained_name(name):
        folder = Path(name).expanduser()
        checkpoints = checkpoint_folders(folder) if folder.is_dir() and not is_pretrained_folder(folder) else []
        opened = str(checkpoints[-1][1]) if checkpoints else name  # a folder of checkpoints: its newest
        return load_pretrained(opened, resolve_device(device) if isinstance(device, str) else device)
    try:
        path = resolve_model(name)
    except ModelNotFoundError as error:
        if MODEL_ID.match(name) and not Path(name).suffix:  # perhaps a pretrained model's id, not downloaded
            raise ModelNotFoundError(
                f"{error}; nor a pretrained model in the Hugging Face cache ({fetch_command(name)} fetches one)"
            ) from None
        raise
    return checkpoint.load(path, resolve_device(device) if isinstance(device, str) else device)
