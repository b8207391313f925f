"""A guard against a PySide6 6.12 reference-count bug on Python before 3.12.

There, each call of a Qt method that returns nothing (``setText``, ``QPainterPath.moveTo``, ...)
gives up one reference to ``None`` that it never took, and some calls through Python overrides do
the same to ``True`` and ``False``. From Python 3.12 these objects are immortal and nothing happens;
on 3.11 their counts reach zero after some thousands of calls and the interpreter aborts ("Fatal
Python error: none_dealloc" or "bool_dealloc"). The guard measures the leak once and, only where it
exists, adds a large reserve to the counts of None, True, False and the cached small integers
(objects that are never freed, so the reserve is safe).
"""

from __future__ import annotations

import ctypes
import platform
import sys

RESERVE = 1 << 40  # about 10^12 leaked references before it runs out: years of clicking
LOW_WATER = 1 << 39


def leaks_none() -> bool:
    from PySide6.QtGui import QColor

    colour = QColor(0, 0, 0)
    before = sys.getrefcount(None)
    for _ in range(100):
        colour.setAlphaF(0.5)
    return sys.getrefcount(None) < before - 50


def protect_none() -> bool:
    """Top up None's reference count where the bug is present; True when the guard is active."""
    if sys.version_info >= (3, 12) or platform.python_implementation() != "CPython":
        return False
    if sys.getrefcount(None) > LOW_WATER:
        return True
    if not leaks_none():
        return False
    for immortal in (None, True, False, *range(-5, 257)):
        ctypes.c_ssize_t.from_address(id(immortal)).value += RESERVE  # ob_refcnt is the first field
    return True
