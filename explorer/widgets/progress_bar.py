"""A progress bar's two states, busy (an unknown amount of work) and counted, switched without the style's busy
animation outliving the busy state.

Fusion, Qt's default style on Linux, animates a busy bar at 60 frames a second and stops the animation only when it
draws a chunk of progress; a bar that leaves busy mode at its minimum (a training run's first thousandth, a job's 0 of N)
kept animating until the first chunk, repainting itself and every widget behind it 60 times a second. Beside niced
background jobs those repaints (Python on the window's thread, taking the interpreter lock from the training thread)
cost the Train tab a fifth of its speed (benchmarks/train_under_load.py).
"""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar


def show_busy(bar: QProgressBar) -> None:
    """An amount of work not known yet: the style's busy animation."""
    bar.setRange(0, 0)


def show_counted(bar: QProgressBar, done: int, total: int) -> None:
    """``done`` of ``total`` (at least 1); leaving busy mode, one frame drawn with a chunk ends the busy animation."""
    if bar.maximum() == 0 and bar.minimum() == 0 and bar.isVisible():
        bar.setRange(0, 1)
        bar.setValue(1)
        bar.repaint()  # drawn now, with progress: the style stops the animation it ran while busy
    bar.setRange(0, max(total, 1))
    bar.setValue(min(max(done, 0), max(total, 1)))
