"""Timeline figures: a row of small multiples (one panel per snapshot, on one colour scale), the same with a single
panel for each frame of an animation, and the signed difference of two snapshots (a diverging colour map centred at
0). Laid out in points with the helpers of model/figures (layout.py, attention.py), written by saving.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from model.data.token_labels import display_labels
from model.figures.attention import MARGIN, FigureOptions, colour_bar, colour_bar_width, new_figure, place_axes, trace_details
from model.figures.layout import (
    LINE,
    MAX_CELL,
    POINTS_PER_INCH,
    AxisFit,
    Caption,
    FigureError,
    draw_caption,
    fit_axis,
    text_width,
    widest,
)
from model.timeline.difference import DIVERGING_COLORMAP, difference_levels, difference_panel
from model.timeline.traces import SnapshotTrace
from model.timeline.views import Panel, ViewSpec, view_panel

MIN_PANEL = 40.0  # pt: a panel narrower than this starts a new row of the strip
GAP = 8.0  # pt between panels


@dataclass
class Scale:
    """The colour scale of a figure: limits, colour map and the colour bar's label."""

    levels: tuple[float, float] = (0.0, 1.0)
    colormap: str = ""  # "" : the options' colour map
    label: str = "attention weight"


def _colours(options: FigureOptions, scale: Scale):
    colours = options.colours() if not scale.colormap else matplotlib.colormaps[scale.colormap]
    return colours.with_extremes(bad="white")  # the gaps between a mosaic's cells


def _grid(panels: Sequence[Panel], width: float, left: float, right: float) -> tuple[int, float]:
    """(panels per row, panel width in pt)."""
    per_row = len(panels)
    while per_row > 1 and (width - left - right - GAP * (per_row - 1)) / per_row < MIN_PANEL:
        per_row -= 1
    panel_width = (width - left - right - GAP * (per_row - 1)) / per_row
    if panel_width < 16:
        raise FigureError(f"a {width / POINTS_PER_INCH:g} in wide figure has no room for the panels; make it wider")
    return per_row, panel_width


def _fits(panel: Panel, panel_width: float, panel_height: float, size: float, level: str) -> tuple[AxisFit, AxisFit]:
    rows, columns = panel.values.shape
    keys, queries = display_labels(panel.key_labels, level), display_labels(panel.query_labels, level)
    return fit_axis(queries, panel_height / max(rows, 1), size), fit_axis(keys, panel_width / max(columns, 1), size, across=True)


def _key_height(panel: Panel, fit: AxisFit, level: str, size: float) -> float:
    if not panel.labelled:
        return size * LINE if panel.column_titles else 0.0
    keys = display_labels(panel.key_labels, level)[:: fit.every]
    return (widest(keys, fit.font_size) if fit.rotated else fit.font_size * LINE) + 4


def _label(axes, panel: Panel, fits: tuple[AxisFit, AxisFit], level: str, first_in_row: bool, size: float, width: float) -> None:
    """Tokens (a head) or layer and head titles (a mosaic) around one panel's axes."""
    axes.set_xticks([])
    axes.set_yticks([])
    rows, columns = panel.values.shape
    if panel.labelled:
        query_fit, key_fit = fits
        keys = display_labels(panel.key_labels, level)
        axes.xaxis.tick_top()
        axes.set_xticks(
            np.arange(0, columns, key_fit.every) + 0.5,
            keys[:: key_fit.every],
            fontsize=key_fit.font_size,
            rotation=90 if key_fit.rotated else 0,
            ha="center",
            va="bottom",
        )
        if first_in_row:
            queries = display_labels(panel.query_labels, level)
            axes.set_yticks(np.arange(0, rows, query_fit.every) + 0.5, queries[:: query_fit.every], fontsize=query_fit.font_size)
        return
    small = max(4.0, size * 0.85)
    centres = [centre for centre, _ in panel.column_titles]
    cell = width / max(columns, 1) * (centres[1] - centres[0] if len(centres) > 1 else columns)  # pt from head to head
    fits_words = all(text_width(title, small) + 2 <= cell for _, title in panel.column_titles)
    fits_numbers = all(text_width(title.split()[-1], small) + 2 <= cell for _, title in panel.column_titles)
    for column, title in panel.column_titles if (fits_words or fits_numbers) else []:
        text = title if fits_words else title.split()[-1]
        axes.annotate(
            text,
            xy=(column, 0),
            xycoords="data",
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=small,
        )
    for row, title in panel.row_titles if first_in_row else []:
        axes.annotate(
            text=title,
            xy=(0, row),
            xycoords=("axes fraction", "data"),
            xytext=(-4, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=small,
        )


def _details(trace, options: FigureOptions, pieces_shown: bool) -> list[str]:
    """The caption's details of a trace without its decoding step count (a timeline's steps are training steps)."""
    lines = trace_details(trace, options, pieces_shown)
    where = [part for part in lines[-1].split(" · ") if not part.startswith("step ")]
    return lines[:-1] + ([" · ".join(where)] if where else [])


def strip_figure(
    panels: Sequence[Panel],
    titles: Sequence[str],
    caption: Caption,
    options: FigureOptions | None = None,
    scale: Scale | None = None,
    level: str = "piece",
) -> Figure:
    """Panels side by side (wrapping to more rows when they would be narrower than MIN_PANEL), each titled, on one
    colour scale with one colour bar."""
    options, scale = options or FigureOptions(), scale or Scale()
    size, width = options.font_size, options.width * POINTS_PER_INCH
    first = panels[0]
    if first.labelled:
        side = max(widest(display_labels(p.query_labels, level), size) for p in panels)
    else:
        side = widest([title for _, title in first.row_titles], max(4.0, size * 0.85))
    left, right = MARGIN + side + 6, colour_bar_width(size) + MARGIN
    per_row, panel_width = _grid(panels, width, left, right)
    if first.labelled:  # cells of a short sentence stop growing at MAX_CELL, as in the focus figure
        panel_width = min(panel_width, MAX_CELL * max(p.values.shape[1] for p in panels))
    left += (width - left - right - per_row * panel_width - GAP * (per_row - 1)) / 2  # the panels in the middle
    ratio = max(p.values.shape[0] / max(p.values.shape[1], 1) for p in panels)
    panel_height = min(max(panel_width * ratio, panel_width * 0.3), panel_width * 2)
    panel_height = max(panel_height, text_width(scale.label, size) + 6)  # the colour bar's label fits along it
    fits = [_fits(p, panel_width, panel_height, size, level) for p in panels]
    key_height = max(_key_height(p, fit[1], level, size) for p, fit in zip(panels, fits))
    caption.notes = []
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    block = size * LINE + key_height + panel_height + 6
    n_rows = math.ceil(len(panels) / per_row)
    height = MARGIN + caption_height + 4 + n_rows * block + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    colours, image, first_bottom = _colours(options, scale), None, 0.0
    for index, (panel, title) in enumerate(zip(panels, titles)):
        row, column = divmod(index, per_row)
        bottom = height - MARGIN - caption_height - 4 - row * block - size * LINE - key_height - panel_height
        first_bottom = bottom if index == 0 else first_bottom
        axes = place_axes(figure, left + column * (panel_width + GAP), bottom, panel_width, panel_height)
        n_queries, n_keys = panel.values.shape
        image = axes.imshow(
            panel.values,
            cmap=colours,
            vmin=scale.levels[0],
            vmax=scale.levels[1],
            aspect="auto",
            interpolation="none",
            extent=(0, max(n_keys, 1), max(n_queries, 1), 0),
        )
        _label(axes, panel, fits[index], level, column == 0, size, panel_width)
        axes.set_title(title, fontsize=size, y=1.0, pad=key_height + 1)  # y given: matplotlib does not move it
    colour_bar(figure, image, left + per_row * (panel_width + GAP) - GAP + 6, first_bottom, panel_height, size, scale.label)
    return figure


def snapshot_strip(traces: Sequence[SnapshotTrace], view: ViewSpec, options: FigureOptions | None = None) -> Figure:
    """The view at each snapshot, in a row: the small-multiples figure of a timeline."""
    options = options or FigureOptions()
    panels = [view_panel(item.trace, view) for item in traces]
    last = traces[-1].trace
    details = _details(last, options, panels[0].labelled)
    forced = "every snapshot forced along one output" if all(item.forced for item in traces) else "each snapshot's own output"
    caption = Caption(
        f"{view.title()[0].upper()}{view.title()[1:]} over training", details + [f"{len(traces)} snapshots, {forced}."]
    )
    return strip_figure(panels, [item.name.split(" of ")[0] for item in traces], caption, options, level=last.level)


def frame_figure(item: SnapshotTrace, view: ViewSpec, options: FigureOptions | None = None) -> Figure:
    """One frame of an animation: the view at one snapshot, titled with the snapshot."""
    options = options or FigureOptions()
    panel = view_panel(item.trace, view)
    caption = Caption(f"{item.name}: {view.title()}", _details(item.trace, options, panel.labelled))
    return strip_figure([panel], [""], caption, options, level=item.trace.level)


def difference_figure(before: SnapshotTrace, after: SnapshotTrace, view: ViewSpec, options: FigureOptions | None = None) -> Figure:
    """The view as ``after`` - ``before``: a diverging colour map centred at 0, symmetric limits."""
    options = options or FigureOptions()
    panel = difference_panel(before, after, view)
    caption = Caption(
        f"Difference, {view.title()}: {after.name.split(' of ')[0]} minus {before.name.split(' of ')[0]}",
        _details(after.trace, options, panel.labelled)
        + ["Red: attention gained, blue: attention lost; the colour scale is symmetric around 0."],
    )
    scale = Scale(difference_levels(panel.values), DIVERGING_COLORMAP, "difference of attention weight")
    return strip_figure([panel], [""], caption, options, scale, level=after.trace.level)
