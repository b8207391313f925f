"""The neuron view as a figure: one head's query row inside, laid out in points as every figure here is.

From the top: the caption (the head and query, the sentence, the model, the head's term shares and class); the query
vector, the key vectors and their elementwise products as dimensions × keys heatmaps (a product column sums to the
unscaled score); the scaled scores and the softmax row as bars over the keys; and, for a model whose scores split, the
four terms per key as grouped bars with the score (their sum) as a black tick.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from model.data.token_labels import display_labels, pieces_text
from model.figures.attention import MARGIN, FigureOptions, colour_bar, colour_bar_width, new_figure, place_axes
from model.figures.layout import LINE, MAX_CELL, MIN_FONT_SIZE, Caption, draw_caption, fit_axis, text_width, widest
from model.neuron.terms import POSITIONAL_SHARE, NeuronRow, describe_terms, share_text

DIVERGING = "RdBu_r"
BAR_HEIGHT = 62.0  # pt: each bar panel's plot
GAP = 8.0  # pt between the heatmaps


def neuron_caption(row: NeuronRow, options: FigureOptions, source_text: str = "", output: list[str] | None = None) -> Caption:
    """The title (head and query), the sentence and model, and the head's shares with its class."""
    details = []
    if source_text:
        details.append(f"Source: “{source_text}”" + (f"  Output: “{pieces_text(output)}”" if output else ""))
    where = [f"model {options.model_name}"] if options.model_name else []
    if row.shares is not None:
        split = row.term_split
        details.append(
            f"Head's term shares over the sentence (row-centred |term|): {share_text(row.shares, split)} — "
            f"{describe_terms(row.shares, split)}; positional when the key's position terms hold ≥ {POSITIONAL_SHARE:.0%}"
        )
        where.append(split.position.format(row.positions))
    if where:
        details.append(" · ".join(where))
    if np.isneginf(row.scores).any():
        details.append("Keys after the query are masked (score −∞, weight 0).")
    return Caption(f"Neuron view: {row.title()}", details)


def _heatmap(figure: Figure, box: tuple[float, float, float, float], values: np.ndarray, limit: float, title: str, size: float):
    """values [d_k, columns] in ``box`` (left, bottom, width, height in pt) on a diverging scale ±limit."""
    axes = place_axes(figure, *box)
    image = axes.imshow(values, cmap=DIVERGING, vmin=-limit, vmax=limit, aspect="auto", interpolation="none")
    axes.set_title(title, fontsize=size, loc="left", pad=2)
    axes.tick_params(length=0, pad=1.5)
    for spine in axes.spines.values():
        spine.set_linewidth(0.5)
    return axes, image


def _label_keys(axes, labels: list[str], cell: float, size: float, top: bool) -> None:
    """Key labels along the x axis (on top or below), turned upright when wider than a cell."""
    fit = fit_axis(labels, cell, size, across=True)
    shown = [label if index % fit.every == 0 else "" for index, label in enumerate(labels)]
    if top:
        axes.xaxis.tick_top()
    axes.set_xticks(range(len(labels)), shown, fontsize=fit.font_size, rotation=90 if fit.rotated else 0)


def _bars(axes, values: np.ndarray, label: str, size: float, colour: str) -> None:
    shown = np.where(np.isfinite(values), values, 0.0)
    axes.bar(range(len(values)), shown, color=colour, width=0.7)
    axes.axhline(0, color="#333", linewidth=0.5)
    axes.set_xlim(-0.5, len(values) - 0.5)
    axes.set_ylabel(label, fontsize=size)
    axes.tick_params(labelsize=size, length=2, width=0.5)
    for spine in axes.spines.values():
        spine.set_linewidth(0.5)


def _legend_columns(row: NeuronRow, size: float, width: float) -> int:
    """How many legend entries fit side by side above the terms' panel ``width`` points wide (every term and the score)."""
    entries = [f"{name} (100%)" for name in row.term_split.names] + ["score"]
    each = max(text_width(entry, max(MIN_FONT_SIZE, size * 0.8)) for entry in entries) + 3 * size
    return max(1, min(len(entries), int(width // each)))


def _terms(axes, row: NeuronRow, size: float, columns: int) -> None:
    """The terms per key as grouped bars, the score as a black tick, a legend with the head's shares."""
    assert row.terms is not None
    n_keys, split = row.terms.shape[1], row.term_split
    width = 0.8 / len(split.names)
    for index, (name, colour) in enumerate(zip(split.names, split.colours)):
        share = f" ({float(row.shares[index]):.0%})" if row.shares is not None else ""
        values = np.nan_to_num(row.terms[index], nan=0.0)
        axes.bar(np.arange(n_keys) - 0.4 + width * (index + 0.5), values, width=width, color=colour, label=name + share)
    visible = np.isfinite(row.scores)
    axes.scatter(np.arange(n_keys)[visible], row.scores[visible], marker="_", s=60, color="black", label="score", zorder=3)
    axes.axhline(0, color="#333", linewidth=0.5)
    axes.set_xlim(-0.5, n_keys - 0.5)
    axes.set_ylabel("terms of the score", fontsize=size)
    axes.tick_params(labelsize=size, length=2, width=0.5)
    axes.legend(fontsize=max(MIN_FONT_SIZE, size * 0.8), ncol=columns, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)
    for spine in axes.spines.values():
        spine.set_linewidth(0.5)


def _vector_maps(figure: Figure, row: NeuronRow, left: float, bottom: float, cell: float, height: float, size: float) -> None:
    """The query vector, the key vectors (one scale, one colour bar) and the products, from ``left`` at ``bottom``."""
    small = max(MIN_FONT_SIZE, size * 0.85)
    keys, d_k = display_labels(row.key_tokens), row.d_k
    width = len(keys) * cell
    vector_limit = float(max(np.abs(row.query_vector).max(), np.abs(row.key_vectors).max(), 1e-9))
    query_axes, image = _heatmap(figure, (left, bottom, cell, height), row.query_vector[:, None], vector_limit, "q", size)
    query_axes.set_yticks(range(d_k), [str(d + 1) if d % 4 == 0 else "" for d in range(d_k)], fontsize=small)
    query_axes.set_ylabel("dimension of the head", fontsize=size)
    _label_keys(query_axes, [display_labels(row.query_tokens)[row.query]], cell, small, top=True)
    x = left + cell + GAP
    keys_axes, _ = _heatmap(figure, (x, bottom, width, height), row.key_vectors.T, vector_limit, "keys k", size)
    keys_axes.set_yticks([])
    _label_keys(keys_axes, keys, cell, small, top=True)
    x += width + GAP
    colour_bar(figure, image, x, bottom, height, small, "q, k")
    x += colour_bar_width(small) + GAP
    product_limit = float(max(np.abs(row.products).max(), 1e-9))
    products_axes, product_image = _heatmap(figure, (x, bottom, width, height), row.products, product_limit, "q ⊙ k", size)
    products_axes.set_yticks([])
    _label_keys(products_axes, keys, cell, small, top=True)
    colour_bar(figure, product_image, x + width + GAP / 2, bottom, height, small, "product")


def neuron_figure(
    row: NeuronRow, options: FigureOptions | None = None, source_text: str = "", output: list[str] | None = None
) -> Figure:
    """The figure of one query row (see the module's docstring); ``source_text`` and ``output`` go in the caption."""
    options = options or FigureOptions()
    size, width = options.font_size, options.width * 72.0
    small = max(MIN_FONT_SIZE, size * 0.85)
    keys = display_labels(row.key_tokens)
    n_keys, d_k = len(keys), row.d_k
    left = MARGIN + size * LINE + widest([str(d_k)], small) + 4
    bar_space = 2 * (colour_bar_width(size) + GAP)
    cell = min(MAX_CELL, (width - left - MARGIN - bar_space - 2 * GAP) / (1 + 2 * n_keys))
    key_fit = fit_axis(keys, cell, small, across=True)
    key_height = (widest(keys, key_fit.font_size) if key_fit.rotated else key_fit.font_size * LINE) + 3
    caption = neuron_caption(row, options, source_text, output)
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    map_height = d_k * max(2.5, min(cell, 150.0 / d_k))
    bar_left = MARGIN + 4 * size
    bar_width = width - bar_left - MARGIN
    bar_cell = bar_width / max(n_keys, 1)
    bar_keys = fit_axis(keys, bar_cell, small, across=True)
    block = BAR_HEIGHT + (widest(keys, bar_keys.font_size) if bar_keys.rotated else bar_keys.font_size * LINE) + 10
    panels = 3 if row.terms is not None else 2
    columns = _legend_columns(row, small, bar_width)
    legend = (math.ceil(5 / columns) * small * 0.8 * LINE * 1.3 + 6) if row.terms is not None else 0.0
    height = MARGIN + caption_height + 6 + size * LINE + key_height + map_height + 10 + panels * block + legend + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    bottom = height - MARGIN - caption_height - 6 - size * LINE - key_height - map_height
    _vector_maps(figure, row, left, bottom, cell, map_height, size)
    top = bottom - 10
    score = row.term_split.score_axis
    for label, values, colour in ((score, row.scores, "#555555"), ("softmax weight", row.weights, "#4c78a8")):
        axes = place_axes(figure, bar_left, top - BAR_HEIGHT, bar_width, BAR_HEIGHT)
        _bars(axes, values, label, small, colour)
        _label_keys(axes, keys, bar_cell, small, top=False)
        top -= block
    if row.terms is not None:
        axes = place_axes(figure, bar_left, top - legend - BAR_HEIGHT, bar_width, BAR_HEIGHT)
        _terms(axes, row, small, columns)
        _label_keys(axes, keys, bar_cell, small, top=False)
    return figure
