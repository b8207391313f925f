"""Sizes, fonts and text for publication figures: how large each part of a figure must be so that
every label fits without overlapping, measured from the font itself rather than guessed.

Everything here is in points (1/72 inch) unless a name says inches. Used by every module of ``model.figures``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from matplotlib.typing import RcKeyType

from model.errors import UserError

POINTS_PER_INCH = 72.0
WIDTH_PRESETS = {"column": 3.3, "one-column": 3.3, "page": 6.9, "two-column": 6.9}  # inches, common journal widths
DEFAULT_WIDTH = 6.9  # two columns: room for 80 labelled tokens
MIN_FONT_SIZE = 4.0  # pt: the smallest label we print; 80 tokens fit across a two-column figure at this size
LINE = 1.25  # a label needs this many times its font size across its row or column (glyphs plus a gap)
MAX_CELL = 26.0  # pt: cells of short sentences stop growing here (about 0.36 in)
FIGURE_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # SVG text stays text (searchable, editable), in a sans-serif font list
    "pdf.fonttype": 42,  # PDF embeds TrueType fonts: vector text that pdftotext reads
    "font.family": "sans-serif",
    "svg.hashsalt": "transformer-explorer",  # the same figure gives the same SVG ids every time
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.5,
    "ytick.major.width": 0.5,
    "xtick.major.size": 2.0,
    "ytick.major.size": 2.0,
    "xtick.major.pad": 1.5,
    "ytick.major.pad": 1.5,
    "image.interpolation": "none",  # one crisp rectangle per cell in every format
}
_measurer = TextToPath()


class FigureError(UserError):
    """Figure settings that cannot be drawn (a width, a font size, a colour map)."""


def parse_width(text: str | float | None, name: str = "width") -> float:
    """'column' (3.3 in), 'page' (6.9 in), or a number of inches ('5', '5in', '12cm'); ``name`` is what
    error messages call it (width or height)."""
    if text is None or text == "":
        return DEFAULT_WIDTH
    if isinstance(text, (int, float)):
        inches = float(text)
    else:
        value = str(text).strip().lower()
        if value in WIDTH_PRESETS:
            return WIDTH_PRESETS[value]
        scale = 1 / 2.54 if value.endswith("cm") else 1 / 25.4 if value.endswith("mm") else 1.0
        number = value.removesuffix("cm").removesuffix("mm").removesuffix("in").strip()
        try:
            inches = float(number) * scale
        except ValueError:
            raise FigureError(
                f"{name} must be column (3.3 in), page (6.9 in) or a size such as 5in or 12cm, not {text!r}"
            ) from None
    if not math.isfinite(inches) or not 1.0 <= inches <= 40.0:
        raise FigureError(f"{name} must be between 1 and 40 inches, not {text!r}")
    return inches


def check_font_size(size: float) -> float:
    if not math.isfinite(size) or not MIN_FONT_SIZE <= size <= 36:
        raise FigureError(f"font size must be between {MIN_FONT_SIZE:g} and 36 points, not {size:g}")
    return float(size)


@lru_cache(maxsize=65536)
def text_width(text: str, size: float, bold: bool = False) -> float:
    """Width in points of one line of text at a font size (the font matplotlib draws with)."""
    if not text:
        return 0.0
    width, _height, _descent = _measurer.get_text_width_height_descent(
        text, FontProperties(family="sans-serif", size=size, weight="bold" if bold else "normal"), ismath=False
    )
    return float(width) * 1.04  # renderers hint glyphs a little wider than the outline metrics


def widest(texts: list[str], size: float) -> float:
    return max((text_width(text, size) for text in texts), default=0.0)


def wrap(text: str, size: float, width: float, bold: bool = False) -> list[str]:
    """Lines of ``text`` no wider than ``width`` points, broken at spaces (a longer word gets its own line)."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and text_width(candidate, size, bold) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines


@dataclass
class AxisFit:
    """How the labels of one axis are drawn: their font size, every how many are shown, rotated or not."""

    font_size: float
    every: int = 1
    rotated: bool = False
    cell: float = 0.0  # pt per token along this axis

    @property
    def thinned(self) -> bool:
        return self.every > 1


def fit_axis(labels: list[str], cell: float, font_size: float, across: bool = False) -> AxisFit:
    """Font size and spacing so that labels placed ``cell`` points apart do not overlap.

    Rows (``across`` False) need LINE x font size per label. Columns (``across`` True) first try the
    labels horizontally (each as wide as a cell), then rotated a quarter turn (LINE x font size each).
    The font shrinks to MIN_FONT_SIZE before any label is dropped; past that only every n-th is shown.
    """
    if across and widest(labels, font_size) + 2 <= cell:
        return AxisFit(font_size, 1, False, cell)
    size = min(font_size, cell / LINE)
    if size >= MIN_FONT_SIZE:
        return AxisFit(size, 1, across, cell)
    every = math.ceil(LINE * MIN_FONT_SIZE / max(cell, 1e-6))
    return AxisFit(MIN_FONT_SIZE, every, across, cell)


@dataclass
class Caption:
    """The text above a figure: a title line, then details (sentence, model, step), wrapped to the width."""

    title: str
    details: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # always printed (e.g. "every 2nd label shown")

    def lines(self, font_size: float, width: float, with_details: bool) -> list[tuple[str, float, bool]]:
        """(text, size, bold) lines; the title is printed even without details."""
        result = [(line, font_size, True) for line in wrap(self.title, font_size, width, bold=True)]
        small = max(MIN_FONT_SIZE, font_size * 0.85)
        for detail in (self.details if with_details else []) + self.notes:
            result += [(line, small, False) for line in wrap(detail, small, width)]
        return result

    def height(self, font_size: float, width: float, with_details: bool) -> float:
        return sum(size * LINE for _text, size, _bold in self.lines(font_size, width, with_details))


def draw_caption(figure, caption: Caption, font_size: float, left: float, top: float, width: float, with_details: bool) -> list:
    """Caption lines from ``top`` (points from the figure's bottom) downwards, starting at ``left``;
    returns the Text objects (the first is the title's first line)."""
    height = figure.get_figheight() * POINTS_PER_INCH
    figure_width = figure.get_figwidth() * POINTS_PER_INCH
    y = top
    texts = []
    for text, size, bold in caption.lines(font_size, width, with_details):
        y -= size * LINE
        texts.append(
            figure.text(
                left / figure_width,
                (y + size * 0.25) / height,
                text,
                fontsize=size,
                fontweight="bold" if bold else "normal",
                ha="left",
                va="baseline",
            )
        )
    return texts


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def thinning_note(axis_name: str, fit: AxisFit, count: int) -> str:
    return (
        f"Only every {ordinal(fit.every)} {axis_name} label is shown ({count} tokens do not fit at "
        f"{MIN_FONT_SIZE:g} pt); widen the figure to label them all."
    )
