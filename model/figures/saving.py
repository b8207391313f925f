"""Writing a figure: PNG, SVG or PDF by the suffix, atomically, with crisp heatmap cells in every viewer;
and a PNG in memory for the clipboard."""

from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from model.figures.layout import FIGURE_RC, FigureError
from model.files import atomic_output
from model.provenance.embed import figure_metadata
from model.provenance.record import Record

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def save_figure(figure: Figure, path: str | Path, dpi: float = 300, record: Record | None = None) -> Path:
    """PNG (at ``dpi``), SVG or PDF by the suffix, written atomically; with ``record`` (what drew it,
    model/provenance/) kept in the file's own metadata."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        raise FigureError(f"figures are saved as {', '.join(FIGURE_SUFFIXES)}, not {suffix or 'no extension'}")
    if not 50 <= dpi <= 1200:
        raise FigureError(f"dpi must be between 50 and 1200, not {dpi:g}")
    metadata: dict[str, str | None] = {"Creator": "Transformer Explorer"}
    if suffix == ".svg":
        metadata["Date"] = None
    if suffix == ".pdf":
        metadata["CreationDate"] = None  # the same figure gives the same file
    metadata |= figure_metadata(suffix, record)
    with matplotlib.rc_context(FIGURE_RC), atomic_output(path) as temporary, _sharp_cells(figure, suffix):
        figure.savefig(temporary, format=suffix[1:], dpi=dpi, facecolor="white", metadata=metadata)
    return path


SVG_CELL_PIXELS = 16  # pixels per cell in an SVG's embedded heatmap (fewer when the image would pass 4096)


@contextmanager
def _sharp_cells(figure: Figure, suffix: str):
    """SVG viewers smooth embedded images when they scale them up (librsvg, and so ImageMagick, ignore
    ``image-rendering: pixelated``), which blurs a heatmap's cells into blobs. For SVG each cell is
    embedded as a block of identical pixels, so smoothing can only touch a sliver at its edges; the
    image keeps its place and size. PNG and PDF draw cells crisp as they are."""
    images = [image for axes in figure.axes for image in axes.get_images()] if suffix == ".svg" else []
    originals = [image.get_array() for image in images]
    for image, data in zip(images, originals):
        assert data is not None  # every heatmap has its values
        repeat = max(1, min(SVG_CELL_PIXELS, 4096 // max(data.shape[:2])))
        image.set_data(np.repeat(np.repeat(data, repeat, axis=0), repeat, axis=1))
    try:
        yield
    finally:
        for image, data in zip(images, originals):
            image.set_data(data)


def figure_png(figure: Figure, dpi: float = 150) -> bytes:
    """The figure as PNG bytes (the clipboard's copy)."""
    buffer = io.BytesIO()
    with matplotlib.rc_context(FIGURE_RC):
        figure.savefig(buffer, format="png", dpi=dpi, facecolor="white")
    return buffer.getvalue()
