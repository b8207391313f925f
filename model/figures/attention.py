"""Figures for papers and slides, drawn from a Trace with matplotlib (no Qt, no pyplot state).

One function per exportable view — the focus heatmap (a head, mean, max, rollout), the layer x head
grid and the paper-style lines view (the candidates are in ``candidates.py``, the positional encoding in
``positional.py``) — each returning a matplotlib Figure laid out in points so that every token is
labelled and no text overlaps (see ``layout.py``). ``saving.save_figure`` writes PNG, SVG (text as text,
one crisp rectangle per cell) or PDF (vector, fonts embedded), atomically. The app's Export menu and the
``export`` command both draw through here, so the same settings give the same figure.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from model.attribution.measures import integration_note, measure_caption
from model.data.token_labels import HIGHLIGHT, display_labels, pieces_text
from model.figures.layout import (
    DEFAULT_WIDTH,
    FIGURE_RC,
    LINE,
    MAX_CELL,
    POINTS_PER_INCH,
    AxisFit,
    Caption,
    FigureError,
    draw_caption,
    fit_axis,
    text_width,
    thinning_note,
    widest,
)
from model.inspection.selection import AttentionMatrix, map_titles
from model.kinds import AttentionKind

HEAD_COLOURS = (
    "#4c78a8",
    "#f58518",
    "#54a24b",
    "#e45756",
    "#72b7b2",
    "#b279a2",
    "#eeca3b",
    "#9d755d",
    "#ff9da6",
    "#bab0ac",
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#17becf",
)
MARGIN = 4.0  # pt of white around everything


@dataclass
class FigureOptions:
    width: float = DEFAULT_WIDTH  # inches: 3.3 one column, 6.9 two columns
    height: float | None = None  # inches; None: from the content (square heatmap cells)
    font_size: float = 8.0  # pt, before any shrinking to fit
    colormap: str = "viridis"
    caption: bool = True  # sentence, model, kind, layer, head and step above the figure
    outline_step: bool = False  # the current step's row outlined (a window aid: off in exports)
    model_name: str = ""

    def colours(self):
        try:
            return matplotlib.colormaps[self.colormap]
        except KeyError:
            raise FigureError(f"unknown colour map {self.colormap!r} (e.g. viridis, magma, cividis)") from None


def head_colour(head: int) -> str:
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


def trace_details(trace, options: FigureOptions, pieces_shown: bool = True) -> list[str]:
    """The caption's detail lines: the sentence (as the model read it), the output so far, the model,
    the step and the level; ``pieces_shown``: the figure labels pieces (so "·x" is explained)."""
    read = pieces_text(trace.source_tokens, trace.level)
    source = trace.source_text or read
    if not trace.source_tokens and trace.decoder_input_tokens:  # a decoder-only model: its prompt, then its text
        lines = [f"Prompt: “{source}”", f"Text: “{pieces_text(trace.decoder_input_tokens[:1] + trace.target_tokens, trace.level)}”"]
    else:
        if len(read) < 0.9 * len(" ".join(source.split())):  # the model read only the start
            source = f"{read} … (cut to the model's {len(trace.source_tokens)} pieces)"
        lines = [f"Source: “{source}”"]
        if trace.target_tokens:
            lines.append(f"Output: “{pieces_text(trace.target_tokens, trace.level)}”")
    where = [f"model {options.model_name}"] if options.model_name else []
    steps = len(trace.chosen_ids) if len(trace.chosen_ids) else trace.n_steps  # pieces, also at word level
    where.append(f"step {steps}")
    if trace.masked_heads:  # as KIND:LAYER:HEAD, counted from 1
        where.append(f"heads knocked out: {', '.join(trace.masked_heads)}")
    if trace.measure:
        lines.append(measure_caption(trace))
        integration = integration_note(trace)  # integrated gradients: the gap, and any prediction not converged
        if integration:
            lines.append(f"Integrated gradients, {integration}")
    if trace.level == "word":
        where.append(f"word level: {trace.n_steps} target words (keys summed over a word's pieces, queries averaged)")
    elif pieces_shown and any(label.startswith("·") for label in display_labels(trace.source_tokens + trace.target_tokens)):
        where.append("·x: a piece continuing the word before it")
    lines.append(" · ".join(where))
    return lines


class AttentionFigure(Figure):
    """A Figure that keeps what its callers need: the caption's text artists, how each axis's labels were
    fitted (for tests), and the heatmap's image (Export all redraws one figure with each head's values)."""

    caption_texts: list[Text]
    label_fits: dict[str, AxisFit]
    heatmap_image: AxesImage | None = None

    def _repr_png_(self) -> bytes:
        """Jupyter shows the figure inline as this PNG (model/notebook.py), with no pyplot and no backend to set up."""
        with matplotlib.rc_context(FIGURE_RC):
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=110, facecolor="white")
            return buffer.getvalue()


def new_figure(width_pt: float, height_pt: float) -> AttentionFigure:
    with matplotlib.rc_context(FIGURE_RC):
        return AttentionFigure(figsize=(width_pt / POINTS_PER_INCH, height_pt / POINTS_PER_INCH))


def place_axes(figure: Figure, left: float, bottom: float, width: float, height: float):
    """Axes placed in points from the figure's bottom-left corner."""
    figure_width, figure_height = figure.get_figwidth() * POINTS_PER_INCH, figure.get_figheight() * POINTS_PER_INCH
    with matplotlib.rc_context(FIGURE_RC):
        return figure.add_axes((left / figure_width, bottom / figure_height, width / figure_width, height / figure_height))


def colour_bar(figure: Figure, image, left: float, bottom: float, height: float, font_size: float, label: str):
    axes = place_axes(figure, left, bottom, 7.0, height)
    with matplotlib.rc_context(FIGURE_RC):
        bar = figure.colorbar(image, cax=axes)
    bar.ax.tick_params(labelsize=font_size, length=2, width=0.5, pad=1.5)
    bar.set_label(label, fontsize=font_size)
    bar.outline.set_linewidth(0.5)
    return bar


def colour_bar_width(font_size: float) -> float:
    return 6 + 7 + 3.5 + text_width("0.00", font_size) + 4 + font_size * LINE


def draw_heatmap(
    axes,
    values: np.ndarray,
    queries: list[str],
    keys: list[str],
    rows: AxisFit,
    columns: AxisFit,
    kind: AttentionKind,
    options: FigureOptions,
    levels: tuple[float, float] = (0.0, 1.0),
) -> AxesImage:
    """values [queries, keys] as crisp cells on ``axes``: key labels on top, query labels on the left, as fitted,
    and the kind's axis names; a note in place of an empty matrix (step 0). Returns the image."""
    n_queries, n_keys = values.shape
    size = options.font_size
    image = axes.imshow(
        values if values.size else np.zeros((1, 1)),
        cmap=options.colours(),
        vmin=levels[0],
        vmax=levels[1],
        aspect="auto",
        interpolation="none",
        extent=(0, max(n_keys, 1), max(n_queries, 1), 0),
    )
    if not values.size:
        image.set_visible(False)
        axes.text(0.5, 0.5, "no rows yet (step 0)", ha="center", va="center", transform=axes.transAxes, fontsize=size)
    axes.xaxis.tick_top()
    axes.xaxis.set_label_position("top")
    axes.set_xticks(
        np.arange(0, n_keys, columns.every) + 0.5,
        keys[:: columns.every],
        fontsize=columns.font_size,
        rotation=90 if columns.rotated else 0,
        ha="center",
        va="bottom",
    )
    axes.set_yticks(np.arange(0, n_queries, rows.every) + 0.5, queries[:: rows.every], fontsize=rows.font_size)
    query_name, key_name = kind.axis_names
    axes.set_xlabel(key_name, fontsize=size, labelpad=3)
    axes.set_ylabel(query_name, fontsize=size, labelpad=3)
    return image


# --- the focus heatmap ---------------------------------------------------------------------------------
def focus_figure(
    matrix: AttentionMatrix,
    trace,
    options: FigureOptions | None = None,
    levels: tuple[float, float] = (0.0, 1.0),
    caption: Caption | None = None,
) -> AttentionFigure:
    """One attention matrix [queries, keys] with every token labelled, a colour bar and a caption."""
    options = options or FigureOptions()
    values = np.asarray(matrix.values, dtype=np.float32)  # [queries, keys]
    n_queries, n_keys = values.shape
    queries, keys = display_labels(matrix.query_labels, trace.level), display_labels(matrix.key_labels, trace.level)
    size = options.font_size
    width = options.width * POINTS_PER_INCH
    caption = caption or Caption(matrix.title[0].upper() + matrix.title[1:], trace_details(trace, options))
    query_name, key_name = matrix.kind.axis_names
    # Columns: what is left of the width after the query labels and the colour bar, shared by the keys.
    rows = columns = None
    for _ in range(3):  # the label font decides the margins, which decide the cells, which decide the font
        label_size = rows.font_size if rows else size  # the query labels' own size
        left = MARGIN + size * LINE + widest(queries, label_size) + 8  # axis name, labels, tick and pads
        right = colour_bar_width(size) + MARGIN
        cell = min(MAX_CELL, (width - left - right) / max(n_keys, 1))
        if cell <= 0:
            raise FigureError(f"a {options.width:g} in wide figure has no room for the heatmap; make it wider")
        columns = fit_axis(keys, cell, size, across=True)
        # Rows may be taller than the columns are wide (never taller than the heatmap is wide), so a
        # few target rows against a long source keep legible labels; and the heatmap is at least as
        # high as its axis name and its colour bar's label, which are written along it.
        row_cell = max(cell, min(size * LINE, cell * max(n_keys, 1) / max(n_queries, 1)))
        least = max(text_width(query_name, size), text_width("attention weight", size)) + 6
        row_cell = max(row_cell, least / max(n_queries, 1))
        if options.height:
            row_cell = None  # decided once the top margin is known
        rows = fit_axis(queries, row_cell or cell, size)
    assert rows is not None and columns is not None  # the loop ran
    key_height = (widest(keys[:: columns.every], columns.font_size) if columns.rotated else columns.font_size * LINE) + 4
    notes = [
        thinning_note(name, fit, count)
        for name, fit, count in (("key", columns, n_keys), ("query", rows, n_queries))
        if fit.thinned
    ]
    caption.notes = notes
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    top = MARGIN + caption_height + 4 + size * LINE + key_height
    if options.height:
        row_cell = (options.height * POINTS_PER_INCH - top - MARGIN) / max(n_queries, 1)
        if row_cell <= 0:
            raise FigureError(f"a {options.height:g} in high figure has no room for the heatmap; make it higher")
        rows = fit_axis(queries, row_cell, size)
        caption.notes = [
            thinning_note(name, fit, count)
            for name, fit, count in (("key", columns, n_keys), ("query", rows, n_queries))
            if fit.thinned
        ]
    heat_width, heat_height = cell * max(n_keys, 1), row_cell * max(n_queries, 1)
    height = options.height * POINTS_PER_INCH if options.height else top + heat_height + MARGIN
    left += max(0.0, (width - left - heat_width - right) / 2)  # a narrow heatmap sits in the middle
    figure = new_figure(width, height)
    figure.caption_texts = draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    bottom = height - top - heat_height
    axes = place_axes(figure, left, bottom, heat_width, heat_height)
    image = draw_heatmap(axes, values, queries, keys, rows, columns, matrix.kind, options, levels)
    if options.outline_step and matrix.current_row is not None:
        axes.add_patch(Rectangle((0, matrix.current_row), n_keys, 1, fill=False, edgecolor=HIGHLIGHT, linewidth=1.2, clip_on=False))
    colour_bar(figure, image, left + heat_width + 6, bottom, heat_height, size, trace.value_label)
    figure.label_fits = {"queries": rows, "keys": columns}  # for tests and the caller
    figure.heatmap_image = image  # Export all redraws one figure with each head's values
    return figure


# --- the layer x head grid ---------------------------------------------------------------------------
GRID_GAP = 0.12  # space between cells, as a share of a cell


def grid_mosaic(weights: np.ndarray) -> tuple[np.ndarray, int, int]:
    """[layers, heads, Q, K] -> one image of every cell with NaN gaps between them (drawn blank),
    and the rows and columns from one cell's start to the next."""
    n_layers, n_heads, n_queries, n_keys = weights.shape
    gap_rows, gap_columns = max(1, round(GRID_GAP * n_queries)), max(1, round(GRID_GAP * n_keys))
    step_rows, step_columns = n_queries + gap_rows, n_keys + gap_columns
    mosaic = np.full((n_layers * step_rows - gap_rows, n_heads * step_columns - gap_columns), np.nan, np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            mosaic[layer * step_rows : layer * step_rows + n_queries, head * step_columns : head * step_columns + n_keys] = weights[
                layer, head
            ]
    return mosaic, step_rows, step_columns


def grid_figure(
    trace, kind: AttentionKind | str, options: FigureOptions | None = None, title: str = "", bar_label: str = ""
) -> Figure:
    """Every layer (rows) and head (columns) of one kind on one shared colour scale, one colour bar (named
    ``bar_label``, or what the trace holds), drawn as one image (crisp cells in every format)."""
    options = options or FigureOptions()
    kind = AttentionKind.parse(kind)
    weights = np.asarray(trace.matrix(kind), dtype=np.float32)  # [layers, heads, queries, keys]
    n_layers, n_heads, n_queries, n_keys = weights.shape
    size = options.font_size
    width = options.width * POINTS_PER_INCH
    query_name, key_name = kind.axis_names
    caption = Caption(
        title or f"{kind.label[0].upper()}{kind.label[1:]}: every layer and head",
        trace_details(trace, options, pieces_shown=False)
        + [f"Each cell: rows {query_name}, columns {key_name}; one colour scale for all cells."],
    )
    left = MARGIN + widest([f"layer {n_layers}"], size) + 6
    right = colour_bar_width(size) + MARGIN
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    top = MARGIN + caption_height + 4 + size * LINE
    empty = not (n_queries and n_keys)
    mosaic, step_rows, step_columns = grid_mosaic(weights if not empty else np.zeros((n_layers, n_heads, 1, 1)))
    grid_width = width - left - right
    if grid_width / max(n_heads, 1) < 8:
        raise FigureError(f"{n_heads} heads do not fit in a {options.width:g} in wide figure; make it wider")
    grid_height = min(grid_width * mosaic.shape[0] / mosaic.shape[1], grid_width * 1.5)
    if empty:
        grid_height = size * LINE * 3
    height = top + grid_height + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    axes = place_axes(figure, left, MARGIN, grid_width, grid_height)
    axes.axis("off")
    if empty:
        axes.text(0.5, 0.5, "Step 0: no target token yet.", ha="center", va="center", fontsize=size, transform=axes.transAxes)
        return figure
    image = axes.imshow(
        mosaic,
        cmap=options.colours(),
        vmin=0,
        vmax=1,
        aspect="auto",
        interpolation="none",
        extent=(0, mosaic.shape[1], mosaic.shape[0], 0),
    )
    layer_titles, head_titles = map_titles(trace, kind)  # "all heads" for a measure of a whole layer
    for head in range(n_heads):
        axes.annotate(  # a fixed gap in points above the grid: a row may be many points high (a layer-wide measure)
            head_titles[head],
            xy=(head * step_columns + n_keys / 2, 1),
            xycoords=("data", "axes fraction"),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=size,
        )
    for layer in range(n_layers):
        axes.annotate(  # a fixed gap in points: a cell may be many points wide (one head, a layer-wide measure)
            layer_titles[layer],
            xy=(0, layer * step_rows + n_queries / 2),
            xycoords=("axes fraction", "data"),
            xytext=(-4, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=size,
        )
    colour_bar(figure, image, width - right + 6, MARGIN, grid_height, size, bar_label or trace.value_label)
    return figure


# --- the lines view ---------------------------------------------------------------------------------
def lines_figure(
    trace,
    kind: AttentionKind | str,
    layer: int,
    options: FigureOptions | None = None,
    heads: list[int] | None = None,
    focused_head: int | None = None,
    min_weight: float = 0.05,
) -> Figure:
    """Keys on the left, queries on the right, one line per pair whose opacity is the weight, a colour
    per head (the paper's figures); the focused head drawn on top, the others dimmed."""
    options = options or FigureOptions()
    kind = AttentionKind.parse(kind)
    weights = np.asarray(trace.matrix(kind)[layer], dtype=np.float32)  # [heads, queries, keys]
    n_heads, n_queries, n_keys = weights.shape
    heads = list(range(n_heads)) if heads is None else heads
    if not heads or any(not 0 <= head < n_heads for head in heads):
        raise FigureError(f"heads must be numbers between 1 and {n_heads}")
    if focused_head is not None and focused_head not in heads:
        raise FigureError(f"head {focused_head + 1} is in front, so it must be one of the heads drawn")
    query_tokens, key_tokens = trace.axis_labels(kind)
    queries, keys = display_labels(query_tokens, trace.level), display_labels(key_tokens, trace.level)
    size = options.font_size
    width = options.width * POINTS_PER_INCH
    span = max(n_queries, n_keys, 1)
    fit = fit_axis(queries + keys, MAX_CELL, size)  # one line of text per token row: never thinned
    row = fit.font_size * LINE * (1.5 if span <= 30 else 1.0)  # airy for a sentence, compact for a page
    head_text = f"head {focused_head + 1} in front" if focused_head is not None else "all heads"
    caption = Caption(
        f"{kind.label[0].upper()}{kind.label[1:]}, layer {layer + 1} ({head_text})",
        trace_details(trace, options) + [f"Opacity = attention weight (lines under {min_weight:g} left out); one colour per head."],
    )
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    legend_height = size * LINE * (1 + (len(heads) - 1) // 8) + 4
    top = MARGIN + caption_height + 4 + size * LINE
    height = top + span * row + legend_height + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    left_text, right_text = widest(keys, fit.font_size) + 6, widest(queries, fit.font_size) + 6
    axes = place_axes(
        figure, MARGIN + left_text, height - top - span * row, width - 2 * MARGIN - left_text - right_text, span * row
    )
    axes.set_xlim(0, 1)
    axes.set_ylim(span - 0.5, -0.5)
    axes.axis("off")
    key_y, query_y = _spread(n_keys, span), _spread(n_queries, span)
    axes.set_title(kind.axis_names[1], fontsize=size, loc="left", pad=2)
    axes.set_title(kind.axis_names[0], fontsize=size, loc="right", pad=2)
    for index, label in enumerate(keys):
        axes.text(-0.01, key_y[index], label, ha="right", va="center", fontsize=fit.font_size)
    for index, label in enumerate(queries):
        axes.text(1.01, query_y[index], label, ha="left", va="center", fontsize=fit.font_size)
    order = [h for h in heads if h != focused_head] + ([focused_head] if focused_head in heads else [])
    for head in order:
        query_index, key_index = np.nonzero(weights[head] >= min_weight)
        segments = np.stack(
            [
                np.column_stack([np.zeros(key_index.size), key_y[key_index]]),
                np.column_stack([np.ones(query_index.size), query_y[query_index]]),
            ],
            axis=1,
        )
        dim = 1.0 if focused_head is None or head == focused_head else 0.25
        colours = np.tile(matplotlib.colors.to_rgba(head_colour(head)), (key_index.size, 1))  # [lines, 4]
        colours[:, 3] = np.clip(weights[head][query_index, key_index], 0, 1) * dim
        lines = LineCollection(
            list(segments),  # [lines] of [2, 2]: (x, y) of the key end and of the query end
            colors=colours,
            linewidths=1.2 if head == focused_head else 0.9,
            zorder=3 if head == focused_head else 2,
        )
        axes.add_collection(lines)
    handles = [matplotlib.lines.Line2D([], [], color=head_colour(h), linewidth=1.5) for h in heads]
    figure.legend(
        handles,
        [f"head {h + 1}" for h in heads],
        loc="lower center",
        ncols=min(8, max(len(heads), 1)),
        fontsize=size,
        frameon=False,
        bbox_to_anchor=(0.5, MARGIN / height),
        handlelength=1.5,
        columnspacing=1.0,
    )
    return figure


def _spread(count: int, span: int) -> np.ndarray:
    """Both columns over the same height, so a short and a long side line up."""
    return (np.arange(count) + 0.5) * (span / max(count, 1)) - 0.5
