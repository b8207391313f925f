"""The joint query-key map of attention heads (AttentionViz's view): each head's queries and keys from many sentences
projected together into two dimensions, one panel per head (small multiples for a layer's heads), coloured by the
token's position, by the token itself, or by whether a point is a query or a key. Queries are drawn as circles, keys
as triangles. The points come from a corpus index (model/corpus/qk.py, as ``MapPanel``s of model/corpus/map_panel.py);
the figure reads only plain arrays.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from model.corpus.map_panel import MapPanel  # the analysis's points (also read from here by the window)
from model.data.token_labels import display_labels
from model.figures.attention import FigureOptions, new_figure, place_axes
from model.figures.layout import FIGURE_RC, LINE, FigureError, wrap
from model.figures.saving import save_figure

COLOURINGS = ("position", "token", "qk")
QUERY_COLOUR, KEY_COLOUR = "#1b9e77", "#e7298a"  # green queries, pink keys (as AttentionViz)
OTHER_TOKENS = "#cccccc"
TOKEN_COLOURS = 10  # the most frequent tokens coloured; the rest grey
MAX_COLUMNS = 4


def frequent_tokens(panels: Sequence[MapPanel], count: int = TOKEN_COLOURS) -> list[str]:
    """The ``count`` most frequent pieces over every panel (ties in the order first seen)."""
    counter = Counter(token for panel in panels for token in panel.tokens)
    return [token for token, _ in counter.most_common(count)]


def point_colours(panel: MapPanel, colour_by: str, top_tokens: list[str], colormap, max_position: int) -> list:
    """Each point's colour: by position (the colour map over 0..max_position), token (the frequent ones) or q/k."""
    if colour_by == "qk":
        return [QUERY_COLOUR if query else KEY_COLOUR for query in panel.is_query]
    if colour_by == "token":
        palette = matplotlib.colormaps["tab10"]
        places = {token: index for index, token in enumerate(top_tokens)}
        return [palette(places[token] % 10) if token in places else OTHER_TOKENS for token in panel.tokens]
    if colour_by == "position":
        return [colormap(position / max(max_position, 1)) for position in panel.positions]
    raise FigureError(f"colour the map by {', '.join(COLOURINGS)}, not {colour_by!r}")


def _legend(figure: Figure, colour_by: str, top_tokens: list[str], colormap, max_position: int, font_size: float) -> None:
    shapes = [
        Line2D([], [], marker="o", linestyle="", color="#555555", markersize=4, label="query"),
        Line2D([], [], marker="^", linestyle="", color="#555555", markersize=4, label="key"),
    ]
    if colour_by == "qk":
        shapes = [
            Line2D([], [], marker="o", linestyle="", color=QUERY_COLOUR, markersize=4, label="query"),
            Line2D([], [], marker="^", linestyle="", color=KEY_COLOUR, markersize=4, label="key"),
        ]
    elif colour_by == "token":
        labels = display_labels(top_tokens)
        palette = matplotlib.colormaps["tab10"]
        shapes += [
            Line2D([], [], marker="s", linestyle="", color=palette(i % 10), markersize=4, label=label)
            for i, label in enumerate(labels)
        ]
    else:
        steps = sorted({0, max_position // 2, max_position})
        shapes += [
            Line2D(
                [],
                [],
                marker="s",
                linestyle="",
                color=colormap(step / max(max_position, 1)),
                markersize=4,
                label=f"position {step}",
            )
            for step in steps
        ]
    figure.legend(handles=shapes, loc="lower center", ncol=min(len(shapes), 6), fontsize=font_size * 0.85, frameon=False)


def qk_map_figure(
    panels: Sequence[MapPanel], colour_by: str = "position", options: FigureOptions | None = None, caption: str = ""
) -> Figure:
    """Panels in rows of up to four, each square, a caption above and one legend below."""
    if not panels:
        raise FigureError("no head to draw")
    if colour_by not in COLOURINGS:
        raise FigureError(f"colour the map by {', '.join(COLOURINGS)}, not {colour_by!r}")
    options = options or FigureOptions()
    size, width = options.font_size, options.width * 72.0
    columns = min(len(panels), MAX_COLUMNS)
    rows = math.ceil(len(panels) / columns)
    gap = size * 2.2
    side = min((width - gap * (columns + 1)) / columns, width * 0.55)  # one head: not a page-high square
    caption_lines = wrap(caption, size, width - 2 * gap) if caption and options.caption else []
    notes = max(len(panel.notes) for panel in panels)
    panel_height = size * LINE + side + size * LINE * (1 + notes) + gap * 0.5  # title, axes, axis name and notes
    top, legend = len(caption_lines) * size * LINE + gap * 0.5, size * LINE * 2.5
    height = top + rows * panel_height + legend
    figure = new_figure(width, height)
    colormap = options.colours()
    max_position = int(max(panel.positions.max(initial=0) for panel in panels))
    top_tokens = frequent_tokens(panels) if colour_by == "token" else []
    with matplotlib.rc_context(FIGURE_RC):
        for number, line in enumerate(caption_lines):
            figure.text(gap / width, 1 - (number + 1) * size * LINE / height, line, fontsize=size)
        for number, panel in enumerate(panels):
            row, column = divmod(number, columns)
            left = gap + column * (side + gap)
            bottom = height - top - row * panel_height - size * LINE - side
            axes = place_axes(figure, left, bottom, side, side)
            _draw_panel(axes, panel, point_colours(panel, colour_by, top_tokens, colormap, max_position), size)
        _legend(figure, colour_by, top_tokens, colormap, max_position, size)
    return figure


def _draw_panel(axes, panel: MapPanel, colours: list, size: float) -> None:
    for is_query, marker in ((False, "^"), (True, "o")):
        chosen = panel.is_query == is_query
        if chosen.any():
            axes.scatter(
                panel.xy[chosen, 0],
                panel.xy[chosen, 1],
                c=[colour for colour, keep in zip(colours, chosen) if keep],
                marker=marker,
                s=6,
                linewidths=0,
                alpha=0.75,
                rasterized=len(panel.xy) > 2000,
            )
    axes.set_title(panel.title, fontsize=size)
    axes.set_xticks([])
    axes.set_yticks([])
    axes.set_xlabel(panel.axis_names[0], fontsize=size * 0.85, labelpad=1)
    axes.set_ylabel(panel.axis_names[1], fontsize=size * 0.85, labelpad=1)
    for number, note in enumerate(panel.notes):  # below the axis name, a line each, placed in points
        axes.annotate(
            note,
            xy=(0, 0),
            xycoords="axes fraction",
            xytext=(0, -size * LINE * (number + 1.2)),
            textcoords="offset points",
            fontsize=size * 0.8,
            va="top",
        )


def save_qk_maps(
    panels: Sequence[MapPanel],
    path,
    colour_by: str = "position",
    options: FigureOptions | None = None,
    caption: str = "",
    dpi: float = 300,
):
    """The maps as a figure file (PNG at ``dpi``, SVG or PDF by the suffix), written atomically."""
    return save_figure(qk_map_figure(panels, colour_by, options, caption), path, dpi)
