"""The positional-encoding figure: the encoding matrix (positions x dimensions), the similarity
between positions, chosen dimensions as curves, and the relative-position property (PE(pos + k) is
a fixed rotation Rₖ of PE(pos)) as the measured error over k — the four plots of the app's
Positional tab, drawn with matplotlib for a paper (see ``model.figures.saving`` for formats and saving).
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import MaxNLocator

from model.figures.attention import MARGIN, FigureOptions, head_colour
from model.figures.layout import FIGURE_RC, LINE, POINTS_PER_INCH, Caption, draw_caption
from model.inspection.positional import PositionalReport, colour_scale

DIVERGING = "RdBu_r"  # matplotlib's diverging map for the signed encoding values


def _matrix(
    figure: Figure,
    axes,
    values: np.ndarray,
    title: str,
    labels: tuple[str, str],
    size: float,
    options: FigureOptions,
    rows: np.ndarray | None = None,
    value_label: str = "",
) -> None:
    """A heatmap; ``rows``: the values its rows stand for (T5's distances: its columns are then heads, numbered from
    1 as everywhere in the app), else 0, 1, 2, ...; ``value_label`` names the colour bar."""
    levels, diverging = colour_scale(values)
    first, last = (float(rows[0]), float(rows[-1])) if rows is not None and len(rows) else (0.0, float(len(values) - 1))
    first_column = 1 if rows is not None else 0
    image = axes.imshow(
        values,
        cmap=DIVERGING if diverging else options.colours(),
        vmin=levels[0],
        vmax=levels[1],
        aspect="auto",
        interpolation="none",
        extent=(first_column - 0.5, first_column + values.shape[1] - 0.5, last + 0.5, first - 0.5),
    )
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(title, fontsize=size, pad=3)
    axes.set_ylabel(labels[0], fontsize=size)
    axes.set_xlabel(labels[1], fontsize=size)
    axes.tick_params(labelsize=size * 0.9)
    bar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.02)
    bar.ax.tick_params(labelsize=size * 0.9)
    bar.set_label(value_label, fontsize=size * 0.9)
    bar.outline.set_linewidth(0.5)


def positional_figure(report: PositionalReport, dimensions: list[int], options: FigureOptions | None = None) -> Figure:
    """Four panels in two rows (one column of four when narrower than 5 in); the line plots' legends
    sit below them, where they cover no data."""
    options = options or FigureOptions()
    size = options.font_size
    width = options.width * POINTS_PER_INCH
    n_positions, d_model = report.table.shape
    details = [f"{report.kind.capitalize()} encoding, d_model {d_model}, {n_positions} positions"]
    if report.summary:  # the report's own words (the app's Transformer's rope, ALiBi, relative bias, none)
        details = [report.summary]
    elif report.relative:
        details = [
            f"T5 relative-position bias per head ({d_model} heads) over distances {report.row_labels[0]} to {report.row_labels[-1]}"
        ]
    if options.model_name:
        details[0] = f"model {options.model_name} · " + details[0]
    if report.rotates:
        details.append(
            f"Largest error after rotating, k ≤ {report.offsets[-1]}: "
            f"{np.nanmax(report.rotation_error):.1e} (without rotating: {report.unrotated_error.max():.2f})"
        )
    caption = Caption("Positional encoding", details)
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    columns = 2 if options.width >= 5 else 1  # one column of four panels on a narrow figure
    panel = (width - 2 * MARGIN) / columns
    rows = 4 // columns
    height = MARGIN + caption_height + rows * (panel * 0.8 + 3 * size * LINE) + MARGIN
    with matplotlib.rc_context(FIGURE_RC):
        figure = Figure(figsize=(width / POINTS_PER_INCH, height / POINTS_PER_INCH), layout="constrained")
        top_share = 1 - (caption_height + MARGIN + 4) / height
        engine = figure.get_layout_engine()
        assert isinstance(engine, ConstrainedLayoutEngine)
        engine.set(rect=(0, 0, 1, top_share), w_pad=4 / 72, h_pad=4 / 72)
        draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
        table, similarity, curves, rotation = figure.subplots(rows, columns).ravel()
        titles = report.panel_titles()
        distances = report.row_values if report.relative else None
        table_label, second_label = report.value_labels()
        _matrix(figure, table, report.table, *titles["table"], size, options, distances, table_label)
        _matrix(figure, similarity, report.similarity, *titles["second"], size, options, distances, second_label)
        positions = report.row_values if report.relative else np.arange(n_positions)
        curve_title, (x_name, legend) = titles["curves"]
        first = 1 if report.relative else 0  # heads from 1, dimensions from 0
        for index, dimension in enumerate(dimensions):
            label = f"{legend} {first + dimension}"
            curves.plot(positions, report.table[:, dimension], color=head_colour(index), linewidth=1, label=label)
        curves.set_title(curve_title, fontsize=size, pad=3)
        curves.set_xlabel(x_name, fontsize=size)
        curves.set_xlim(float(positions[0]), float(max(positions[-1], positions[0] + 1)))
        limit = float(np.abs(report.table).max()) or 1.0
        curves.set_ylim(-limit * 1.05, limit * 1.05)
        curves_of_error = [(report.unrotated_error, "--", "#e45756", 0.0, "without rotation")]
        if report.rotates:
            curves_of_error.insert(0, (report.rotation_error, "o-", "#54a24b", 2.5, "after rotation Rₖ"))
        if not report.table_like:
            rotation.axis("off")
            rotation.text(0.5, 0.5, "no position vector is added,\nso there is no rotation to check", ha="center", fontsize=size)
            curves_of_error = []
        else:
            rotation.set_title("max |Rₖ·PE(pos) − PE(pos+k)| over pos", fontsize=size, pad=3)
            rotation.set_xlabel("offset k", fontsize=size)
        for errors, style, colour, marker_size, label in curves_of_error:
            rotation.semilogy(
                report.offsets, np.maximum(errors, 1e-12), style, color=colour, markersize=marker_size, linewidth=1, label=label
            )
        for axes in (curves, rotation):
            axes.tick_params(labelsize=size * 0.9)
            axes.grid(alpha=0.25, linewidth=0.5)
            if axes.get_legend_handles_labels()[0]:
                axes.legend(fontsize=size * 0.85, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3, frameon=False)
    return figure
