"""Every plot's axis titles fit their axes: a title longer than its axis is cut with "…" and centred again.

pyqtgraph draws an axis title centred on its axis whatever its length, so a long title on a short axis (the
report card's "mean p(reference)" on a 79 px axis, a heatmap's 29 px rows at 1280x720) was cut at both ends with no
sign; and it centres a title only when the axis is resized, so a title changed on a resized axis sat off centre (the
focus' colour bar's "difference of attention weight" after a phase change, 27 px past its axis' end).
``install`` wraps pyqtgraph's ``AxisItem.setLabel`` and ``resizeEvent`` once for the whole app (explorer/widgets/
__init__.py): the whole title is kept (``full_title``) and what is shown is that title cut to the axis' length, fitted
again at every resize. A title with units is left as pyqtgraph draws it (the app gives none).
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF

_set_label = pg.AxisItem.setLabel
_resize = pg.AxisItem.resizeEvent


def full_title(axis: pg.AxisItem) -> str:
    """The title ``axis`` was given, whole (what it shows may be cut with "…")."""
    return str(getattr(axis, "_full_title", None) or axis.labelText or "")


def fit_title(axis: pg.AxisItem) -> None:
    """Show ``axis``'s whole title cut with "…" to the axis' length (the text item's own margins left), centred."""
    text = full_title(axis)
    if axis.label is None or not text or axis.labelUnits:
        return
    length = axis.geometry().height() if axis.orientation in ("left", "right") else axis.geometry().width()
    if length <= 0:
        return
    margins = 2 * axis.label.document().documentMargin() + 2
    shown = QFontMetricsF(axis.label.font()).elidedText(text, Qt.TextElideMode.ElideRight, max(length - margins, 0.0))
    if axis.labelText != shown:
        _set_label(axis, shown)
        _resize(axis, None)  # pyqtgraph places the title only on a resize: the new one centred


def _fitted_set_label(axis: pg.AxisItem, text: str | None = None, *args: Any, **kwargs: Any) -> None:
    if text is not None:
        axis._full_title = text
    _set_label(axis, text, *args, **kwargs)
    fit_title(axis)
    if axis.label is not None:
        _resize(axis, None)  # centred on its axis now, whether it was cut or not (pyqtgraph waits for a resize)


def _fitted_resize(axis: pg.AxisItem, event: Any = None) -> None:
    _resize(axis, event)
    fit_title(axis)


def install() -> None:
    """Every axis of the app fits its title (idempotent)."""
    pg.AxisItem.setLabel = _fitted_set_label
    pg.AxisItem.resizeEvent = _fitted_resize
