"""Models shipped with the app under resources/models/, found by name ("default", "copy", ...)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from model.errors import UserError
from model.files import TIMELINE_SUFFIX  # a model's training snapshots, beside it (model/io/timeline.py)

MODEL_SUFFIX = ".safetensors"
__all__ = ["MODEL_SUFFIX", "TIMELINE_SUFFIX", "ModelNotFoundError", "models_folder", "resolve_model", "shipped_models"]


class ModelNotFoundError(UserError):
    """Neither a model file nor the name of a shipped model."""


def models_folder() -> Path:
    try:
        return Path(str(files("resources") / "models"))
    except (ModuleNotFoundError, TypeError):
        return Path(__file__).resolve().parents[2] / "resources" / "models"


def shipped_models() -> dict[str, Path]:
    folder = models_folder()
    if not folder.is_dir():
        return {}
    models = sorted(folder.glob(f"*{MODEL_SUFFIX}"))
    return {path.stem: path for path in models if not path.name.endswith(TIMELINE_SUFFIX)}


def resolve_model(name_or_path: str) -> Path:
    """A path that exists wins; otherwise the name of a shipped model. Raises ModelNotFoundError."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return path
    shipped = shipped_models()
    if name_or_path in shipped:
        return shipped[name_or_path]
    names = ", ".join(shipped) or "none"
    raise ModelNotFoundError(f"{name_or_path}: no such file, and no shipped model of that name (shipped: {names})")
