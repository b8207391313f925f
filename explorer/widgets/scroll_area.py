"""A widget in a frameless scroll area that resizes it (issue 39): it fills the area and never gets smaller than its
minimum; when the area is smaller than that, scroll bars show what is beyond its edges instead of cutting it off
with nothing saying so. The main window's tabs, and the panes of the curves over training, sit in one."""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


def scrolled(widget: QWidget) -> QScrollArea:
    """``widget`` in a scroll area (no frame, resizing it; a scroll bar only when it is cut)."""
    area = QScrollArea()
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidgetResizable(True)
    area.setWidget(widget)
    return area
