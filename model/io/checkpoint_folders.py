"""A folder of Hugging Face Trainer checkpoints as a timeline: ``checkpoint-500/``, ``checkpoint-1000/``, … each a
``save_pretrained`` folder the app opens (model/pretrained/), ordered by step.

Each snapshot's training loss and validation scores come from the ``log_history`` of its checkpoint's
``trainer_state.json`` (the loss logged last at or before its step, the ``eval_*`` values logged at its step), or of
the newest checkpoint's when its own has none; a missing or unreadable state only leaves them empty. The Trainer
records no elapsed time per step, so ``elapsed_seconds`` is None. ``bundle_at(i)`` opens checkpoint ``i`` with every
check of model/pretrained/loading.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from model.files import InputError, read_input
from model.io.snapshots import Snapshot, Timeline
from model.pretrained.hub import is_pretrained_folder

CHECKPOINT = re.compile(r"checkpoint-(\d{1,12})")
STATE_FILE = "trainer_state.json"
MAX_STATE_BYTES = 64 * 1024 * 1024  # far beyond any real log history


def checkpoint_folders(folder: str | os.PathLike) -> list[tuple[int, Path]]:
    """(step, folder) of every ``checkpoint-STEP`` sub-folder that is a save_pretrained folder, by step."""
    try:
        children = list(Path(folder).expanduser().iterdir())
    except OSError:
        return []
    found = []
    for child in children:
        match = CHECKPOINT.fullmatch(child.name)
        if match and is_pretrained_folder(child):
            found.append((int(match.group(1)), child))
    return sorted(found)


def checkpoints_folder_of(path: str | os.PathLike) -> Path | None:
    """The folder of checkpoints that ``path`` is, or that the checkpoint folder ``path`` is in; None otherwise (a
    model file is one look: it is not a folder)."""
    path = Path(path).expanduser()
    if not path.is_dir():
        return None
    if checkpoint_folders(path):
        return path
    if CHECKPOINT.fullmatch(path.name) and checkpoint_folders(path.parent):
        return path.parent
    return None


def checkpoints_timeline(folder: str | os.PathLike) -> Timeline:
    """The timeline of a folder of checkpoints: one snapshot per checkpoint, the newest the final one."""
    folder = Path(folder).expanduser()
    found = checkpoint_folders(folder)
    newest_history = _log_history(found[-1][1]) if found else []
    snapshots = []
    for index, (step, checkpoint) in enumerate(found):
        history = _log_history(checkpoint) or newest_history
        train_loss, validation = _scores_at(step, history)
        snapshots.append(Snapshot(index, step, None, train_loss, validation, final=index == len(found) - 1))

    def restore(index: int) -> Any:
        # deferred: model files' saving and loading (model/io/checkpoint.py, which imports this) need none of it
        from model.pretrained.loading import load_pretrained

        return load_pretrained(str(found[index][1]))

    notes = [f"{len(found)} Hugging Face Trainer checkpoints in {folder.name}"]
    return Timeline(folder, snapshots, restore, "checkpoints", notes)


def _log_history(checkpoint: Path) -> list[dict]:
    """The ``log_history`` records of a checkpoint's trainer_state.json ([] when it has none or cannot be read)."""
    path = checkpoint / STATE_FILE
    try:
        if not path.is_file() or path.stat().st_size > MAX_STATE_BYTES:
            return []
        state = json.loads(read_input(path, "trainer state"))
    except (InputError, OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return []
    history = state.get("log_history") if isinstance(state, dict) else None
    return [entry for entry in history if isinstance(entry, dict)] if isinstance(history, list) else []


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scores_at(step: int, history: list[dict]) -> tuple[float | None, dict | None]:
    """(the training loss logged last at or before ``step``, the evaluation logged at ``step`` without its prefix)."""
    before = [entry for entry in history if _number(entry.get("step")) and entry["step"] <= step]
    losses = [entry["loss"] for entry in before if _number(entry.get("loss"))]
    evaluations = [entry for entry in before if entry["step"] == step and any(key.startswith("eval_") for key in entry)]
    validation = None
    if evaluations:
        logged = evaluations[-1].items()
        validation = {key.removeprefix("eval_"): value for key, value in logged if key.startswith("eval_") and _number(value)}
    return (float(losses[-1]) if losses else None), validation
