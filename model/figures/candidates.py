"""The next-token candidates as a figure: a bar per candidate, the chosen one highlighted, the probability
printed beside each bar, and the mass of every token not listed in one grey bar."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from model.data.token_labels import display_candidate
from model.decoding.candidates import format_probability
from model.figures.attention import HEAD_COLOURS, MARGIN, FigureOptions, new_figure, place_axes, trace_details
from model.figures.layout import LINE, POINTS_PER_INCH, Caption, draw_caption, text_width, widest


def candidates_figure(
    step_index: int,
    tokens: list[str],
    probabilities,
    chosen: int | None,
    trace,
    options: FigureOptions | None = None,
    other: float | None = None,
) -> Figure:
    """A bar per candidate (the chosen one orange), its probability printed, and ``other``: the mass
    of every token not listed (grey)."""
    options = options or FigureOptions()
    probabilities = np.asarray(probabilities, dtype=np.float64)  # [k]
    labels = [display_candidate(token) for token in tokens]  # candidates are pieces, also at word level
    if other is not None:
        labels.append("all other tokens")
        probabilities = np.append(probabilities, other)
    size = options.font_size
    width = options.width * POINTS_PER_INCH
    caption = Caption(f"Candidates for step {step_index + 1}", trace_details(trace, options, pieces_shown=False))
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    row = size * LINE * 1.3
    top = MARGIN + caption_height + 6
    bottom_axis = size * LINE * 2 + 4
    height = top + row * max(len(labels), 1) + bottom_axis + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    left = MARGIN + widest(labels, size) + 6
    axes = place_axes(
        figure, left, MARGIN + bottom_axis, width - left - MARGIN - text_width("0.0000e-00", size) - 6, row * max(len(labels), 1)
    )
    colours = [
        HEAD_COLOURS[1] if i == chosen else "#bab0ac" if other is not None and i == len(labels) - 1 else HEAD_COLOURS[0]
        for i in range(len(labels))
    ]
    axes.barh(np.arange(len(labels)), probabilities, height=0.7, color=colours)
    axes.set_yticks(np.arange(len(labels)), labels, fontsize=size)
    axes.set_ylim(len(labels) - 0.5, -0.5)
    axes.set_xlim(0, 1)
    axes.set_xlabel("probability", fontsize=size)
    axes.tick_params(labelsize=size)
    for index, value in enumerate(probabilities):
        axes.text(value + 0.01, index, format_probability(value), va="center", fontsize=size * 0.9)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    return figure
