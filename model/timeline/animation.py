"""An animated GIF of a view over training: one frame per snapshot, each titled with its snapshot, drawn with
matplotlib's Agg renderer (no window) and written by Pillow, atomically."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from model.figures.attention import FigureOptions
from model.figures.layout import FIGURE_RC, FigureError
from model.files import atomic_output
from model.timeline.figures import frame_figure
from model.timeline.traces import SnapshotTrace
from model.timeline.views import ViewSpec

FRAME_WIDTH = 5.0  # inches: 500 pixels at the default 100 dpi
FRAME_SECONDS = 0.8  # each snapshot on screen; the last one stays three times as long


def figure_pixels(figure: Figure, dpi: float) -> np.ndarray:
    """[height, width, 3] uint8: the figure rendered on white."""
    figure.set_dpi(dpi)
    canvas = FigureCanvasAgg(figure)
    with matplotlib.rc_context(FIGURE_RC):
        canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()  # [H, W, 3]


def _padded(frames: list[np.ndarray]) -> list[np.ndarray]:
    """Frames of different sizes (own decodings) padded with white to the largest, at the top left."""
    height, width = max(f.shape[0] for f in frames), max(f.shape[1] for f in frames)
    result = []
    for frame in frames:
        canvas = np.full((height, width, 3), 255, np.uint8)  # [H, W, 3]
        canvas[: frame.shape[0], : frame.shape[1]] = frame
        result.append(canvas)
    return result


def save_gif(
    traces: Sequence[SnapshotTrace],
    view: ViewSpec,
    path: str | Path,
    options: FigureOptions | None = None,
    dpi: float = 100,
    seconds: float = FRAME_SECONDS,
) -> Path:
    """One frame per snapshot of ``view``, looping; written atomically to ``path`` (.gif)."""
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise FigureError(f"an animation is saved as .gif, not {path.suffix or 'no extension'}")
    if not traces:
        raise FigureError("an animation needs at least one snapshot")
    if not 20 <= dpi <= 300 or not 0.02 <= seconds <= 60:
        raise FigureError("a GIF's dpi must be 20-300 and its frames last 0.02-60 seconds")
    options = options or FigureOptions(width=FRAME_WIDTH)
    frames = _padded([figure_pixels(frame_figure(item, view, options), dpi) for item in traces])
    images = [Image.fromarray(frame).convert("P", palette=Image.Palette.ADAPTIVE, colors=255) for frame in frames]
    durations = [int(seconds * 1000)] * len(images)
    durations[-1] *= 3
    with atomic_output(path) as temporary:
        images[0].save(temporary, format="GIF", save_all=True, append_images=images[1:], duration=durations, loop=0, optimize=False)
    return path
