"""The save dialog of the exports: the file type chosen in it is the one of the name it proposes.

Qt's save dialog starts on the first filter of the list unless it is told another one, so a dialog proposing
``over-training.pdf`` under "PNG image (*.png);;…;;PDF document (*.pdf)" showed the PNG filter beside a PDF name.
``matching_filter`` picks the filter of the proposed suffix, and ``ask_save_path`` opens the dialog with it chosen.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget


def matching_filter(name: str | Path, filters: str) -> str:
    """The filter of ``filters`` ("PNG image (*.png);;PDF document (*.pdf)") whose patterns take ``name``'s suffix;
    the first one when none does."""
    choices = [choice for choice in filters.split(";;") if choice.strip()]
    suffix = Path(name).suffix.lower()
    for choice in choices:
        patterns = choice[choice.find("(") + 1 : choice.rfind(")")].split() if "(" in choice else []
        if suffix and any(pattern.lower().endswith(suffix) for pattern in patterns):
            return choice
    return choices[0] if choices else ""


def ask_save_path(parent: QWidget | None, title: str, proposed: str | Path, filters: str) -> str:
    """The path the user chose in a save dialog proposing ``proposed``, its file type's filter chosen ("" when cancelled)."""
    path, _chosen = QFileDialog.getSaveFileName(parent, title, str(proposed), filters, matching_filter(proposed, filters))
    return path
