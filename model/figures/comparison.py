"""Two models' attention on one sentence as one figure: side by side, one shared colour scale.

Each panel is a model's chosen head (model/inspection/comparison.py) as the focus view draws it: the
source words across the top, that model's own output down the side, the current step's row last. Above
the panels, a caption with the sentence; above each, the model's name, the head shown and its AER. The
figure is laid out in points like every other export (model/figures/layout.py), so labels never overlap.
"""

from __future__ import annotations

import numpy as np

from model.data.token_labels import display_labels
from model.figures.attention import (
    MARGIN,
    AttentionFigure,
    FigureOptions,
    colour_bar,
    colour_bar_width,
    draw_heatmap,
    new_figure,
    place_axes,
    trace_details,
)
from model.figures.layout import (
    LINE,
    MAX_CELL,
    MIN_FONT_SIZE,
    POINTS_PER_INCH,
    Caption,
    FigureError,
    draw_caption,
    fit_axis,
    text_width,
    thinning_note,
    widest,
    wrap,
)
from model.inspection.comparison import Panel, compared_matrix
from model.kinds import AttentionKind

PANEL_GAP = 14.0  # pt between the two panels


def pair_figure(panels: list[Panel], options: FigureOptions | None = None, word_level: bool = True) -> AttentionFigure:
    """The panels' chosen heads side by side (two, or one when only one model is open)."""
    if not 1 <= len(panels) <= 2:
        raise FigureError(f"a comparison shows one or two models, not {len(panels)}")
    options = options or FigureOptions()
    size = options.font_size
    width = options.width * POINTS_PER_INCH
    matrices = [compared_matrix(panel.trace, panel.choice, word_level) for panel in panels]
    labels = [
        (display_labels(matrix.query_labels, shown.level), display_labels(matrix.key_labels, shown.level))
        for matrix, shown in matrices
    ]
    bar = colour_bar_width(size)
    panel_width = (width - 2 * MARGIN - bar - PANEL_GAP * (len(panels) - 1)) / len(panels)
    lefts = [size * LINE + widest(queries, size) + 8 for queries, _ in labels]  # axis name, labels, pads
    cells = [min(MAX_CELL, (panel_width - left) / max(len(keys), 1)) for left, (_, keys) in zip(lefts, labels)]
    if min(cells) <= 2:
        raise FigureError(f"a {options.width:g} in wide figure has no room for two heatmaps; make it wider")
    cell = min(cells)  # one cell size: the two panels compare at the same scale
    columns = [fit_axis(keys, cell, size, across=True) for _, keys in labels]
    # Rows may be taller than the columns are wide, so that a few target rows keep legible labels, and a heatmap
    # is at least as high as its axis name and the colour bar's label, written along it (as the focus figure's).
    least = max(text_width(AttentionKind.CROSS.axis_names[0], size), text_width("attention weight", size)) + 6
    row_cells = [
        max(cell, min(size * LINE, cell * len(keys) / max(len(queries), 1)), least / max(len(queries), 1))
        for queries, keys in labels
    ]
    rows = [fit_axis(queries, row_cell, size) for (queries, _), row_cell in zip(labels, row_cells)]
    key_heights = [
        (widest(keys[:: fit.every], fit.font_size) if fit.rotated else fit.font_size * LINE) + 4
        for (_, keys), fit in zip(labels, columns)
    ]
    small = max(MIN_FONT_SIZE, size * 0.85)
    headings = [
        [(line, size, True) for line in wrap(panel.name, size, panel_width, bold=True)]
        + [(line, small, False) for line in wrap(panel.details(), small, panel_width)]
        for panel in panels
    ]
    heading_height = max(sum(line_size * LINE for _, line_size, _ in lines) for lines in headings) + 2
    first = panels[0].trace
    title = "Cross-attention side by side" if len(panels) == 2 else f"Cross-attention of {panels[0].name}"
    details = trace_details(first, options)[:1]  # the sentence; each panel's output is its rows
    details.append(
        "Each panel: rows are the model's output (its own, unless its heading says whose it was made to write; the "
        "current step last), columns the source" + (" words" if word_level else " pieces") + "; one colour scale."
    )
    for (queries, keys), row_fit, column_fit in zip(labels, rows, columns):  # labels left out are said so
        for name, fit, count in (("source", column_fit, len(keys)), ("target", row_fit, len(queries))):
            note = thinning_note(name, fit, count)
            if fit.every > 1 and note not in details:
                details.append(note)
    caption = Caption(title, details)
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    heat_heights = [row_cell * max(len(queries), 1) for (queries, _), row_cell in zip(labels, row_cells)]
    top = MARGIN + caption_height + 4 + heading_height + size * LINE + max(key_heights)
    height = top + max(heat_heights) + MARGIN
    figure = new_figure(width, height)
    figure.caption_texts = draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    image = None
    for index, ((matrix, _), (queries, keys)) in enumerate(zip(matrices, labels)):
        origin = MARGIN + index * (panel_width + PANEL_GAP)
        heat_width, heat_height = cell * max(len(keys), 1), heat_heights[index]
        left = origin + lefts[index] + max(0.0, (panel_width - lefts[index] - heat_width) / 2)
        bottom = height - top - heat_height
        heading_top = height - MARGIN - caption_height - 4
        y = heading_top
        for line, line_size, bold in headings[index]:
            y -= line_size * LINE
            figure.text(
                origin / width, (y + line_size * 0.25) / height, line, fontsize=line_size, fontweight="bold" if bold else "normal"
            )
        axes = place_axes(figure, left, bottom, heat_width, heat_height)
        values = np.asarray(matrix.values, dtype=np.float32)  # [queries, keys]
        image = draw_heatmap(axes, values, queries, keys, rows[index], columns[index], matrix.kind, options)
    assert image is not None
    shortest = min(heat_heights)
    colour_bar(figure, image, width - MARGIN - bar + 6, height - top - shortest, shortest, size, "attention weight")
    figure.label_fits = {"queries": rows[0], "keys": columns[0]}
    return figure
