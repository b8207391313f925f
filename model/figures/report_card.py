"""The report card as one page a paper can use: the table (each column's best in bold with ★, a failure ✗ in red, "—"
in grey) over three plots — the mean deletion and insertion curves of every method against the share of source pieces
hidden or shown, and each method's similarity to its trained map as the cascade randomises the model from the output
down — with a caption saying what was measured and how. ``save_card`` writes the card as a CSV or as this figure.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from model.figures.layout import FigureError
from model.figures.saving import FIGURE_SUFFIXES, save_figure
from model.grading.card import MethodRow, ReportCard, grid
from model.grading.sanity import SANITY_THRESHOLD
from model.provenance.embed import write_sidecar
from model.provenance.record import Record

CARD_SUFFIXES = (".csv", *FIGURE_SUFFIXES)
WIDTH_IN = 7.2  # a page's width (two columns), a little wider for the table's ten columns
FONT = 6.5  # pt: the table and the plots
GREY, RED, BEST = "#8a8a8a", "#c0392b", "#eef5e9"


def save_card(card: ReportCard, path: str | Path, dpi: float = 300, record: Record | None = None) -> Path:
    """The card as a CSV (one row per method) or its figure (PNG, SVG, PDF), by the suffix; written atomically, with
    ``record`` (what drew it) in the figure or beside the CSV."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in CARD_SUFFIXES:
        raise FigureError(f"a report card is saved as {', '.join(CARD_SUFFIXES)}, not {suffix or 'no extension'}")
    if suffix == ".csv":
        card.write_csv(path)
        write_sidecar(path, record)
        return path
    return save_figure(card_figure(card), path, dpi, record)


def colours(rows: list[MethodRow]) -> dict[str, tuple]:
    """A colour per method (the measures first, then the baselines), the random order in black."""
    palette = colormaps["tab20"]
    found: dict[str, tuple] = {}
    for index, row in enumerate(row for row in rows if row.reads_model):
        found[row.name] = palette(index % 20)
    for row in rows:
        found.setdefault(row.name, (0.0, 0.0, 0.0, 1.0))
    return found


def card_figure(card: ReportCard) -> Figure:
    """The one-page figure (see the module's docstring). Heights in inches: title, table, plots, their tick labels,
    caption."""
    title, table, gap, plots, ticks, caption = 0.3, 0.16 * (len(card.rows) + 2), 0.3, 1.6, 0.62, 0.5
    height = title + table + gap + plots + ticks + caption
    figure = Figure(figsize=(WIDTH_IN, height))
    figure.text(0.01, 1 - 0.1 / height, f"Explanation report card — {card.model}", fontsize=FONT + 2.5, weight="bold", va="top")
    table_axes = figure.add_axes((0.01, 1 - (title + table) / height, 0.98, table / height))
    _draw_table(table_axes, card)
    plot_bottom = (caption + ticks) / height
    palette = colours(card.rows)
    axes = [figure.add_axes((0.06 + i * 0.25, plot_bottom, 0.18, plots / height)) for i in range(3)]
    _draw_curves(axes[0], card, palette, "deletion_curve", "Deletion", f"share of {card.pieces} pieces hidden")
    _draw_curves(axes[1], card, palette, "insertion_curve", "Insertion", f"share of {card.pieces} pieces shown")
    _draw_cascade(axes[2], card, palette)
    legend_axes = figure.add_axes((0.79, plot_bottom, 0.2, plots / height))
    legend_axes.axis("off")
    lines = {str(line.get_label()): line for axis in axes for line in axis.get_lines()}
    labels = [row.label for row in card.rows if row.label in lines]
    legend_axes.legend([lines[label] for label in labels], labels, loc="center left", fontsize=FONT - 0.5, frameon=False)
    figure.text(0.01, 0.08 / height, _caption(card), fontsize=FONT - 1, va="bottom", color="#333333")
    return figure


def _draw_table(axes: Axes, card: ReportCard) -> None:
    axes.axis("off")
    headers = ["Method", *(header.replace(" ", "\n", 1) if len(header) > 8 else header for header in card.headers())]
    cells = card.table()
    widths = [0.15] + [0.08] * (len(headers) - 2) + [0.11]  # the sanity verdict is the widest
    scale = 1.0 / sum(widths)
    table = axes.table(
        cellText=cells, colLabels=headers, colWidths=[w * scale for w in widths], loc="upper center", cellLoc="right"
    )
    table.auto_set_font_size(False)
    table.set_fontsize(FONT)
    rows = card.rows
    for (row_index, column), cell in table.get_celld().items():
        cell.set_linewidth(0.3)
        cell.set_edgecolor("#cccccc")
        cell.set_height((2.0 if row_index == 0 else 1.0) / (len(rows) + 2))
        text = cell.get_text()
        if row_index == 0:
            text.set_fontweight("bold")
            cell.set_facecolor("#f2f2f2")
            continue
        if column == 0:
            text.set_horizontalalignment("left")
            cell.get_text().set_x(0.02)
            text.set_fontstyle("italic" if rows[row_index - 1].baseline else "normal")
            continue
        shown = text.get_text()
        if shown.endswith("★"):
            text.set_fontweight("bold")
            cell.set_facecolor(BEST)
        elif "✗" in shown or shown.startswith("FAIL"):
            text.set_color(RED)
        elif shown in ("—", "ref."):
            text.set_color(GREY)


def _draw_curves(axes: Axes, card: ReportCard, palette: dict, attribute: str, title: str, xlabel: str) -> None:
    curves = [(row, getattr(row, attribute)) for row in card.rows if getattr(row, attribute) is not None]
    # A random model's probabilities of 1e-6 are drawn in their power of ten, said in the axis's label: neither an
    # offset text over the title nor tick labels wide enough to reach the next plot
    largest = max((float(np.nanmax(curve)) for _, curve in curves if np.isfinite(curve).any()), default=1.0)
    power = math.floor(math.log10(largest)) if 0 < largest < 1e-2 else 0
    for row, curve in curves:
        style = ":" if not row.reads_model else ("--" if row.baseline else "-")
        axes.plot(grid(), curve / 10.0**power, style, color=palette[row.name], linewidth=0.9, label=row.label)
    _style(axes, title, xlabel, f"mean p({card.predicted})" + (f" (×10{str(power).translate(SUPERSCRIPTS)})" if power else ""))
    axes.set_xlim(0, 1)
    axes.set_xticks([0, 0.5, 1])
    axes.set_xticklabels(["0", "½", "all"])
    axes.set_ylim(bottom=0)


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")  # an axis's power of ten: ×10⁻⁶
MAX_STAGE_LABELS = 10  # the cascade's tick labels at most (more overlap at a column's width)


def _draw_cascade(axes: Axes, card: ReportCard, palette: dict) -> None:
    stages = card.stages
    for row in card.rows:
        if row.sanity is None or not row.sanity.cascade:
            continue
        style = "--" if row.baseline else "-"
        stage_numbers = range(1, len(row.sanity.cascade) + 1)
        axes.plot(stage_numbers, row.sanity.cascade, style, color=palette[row.name], linewidth=0.9, label=row.label)
    axes.axhline(SANITY_THRESHOLD, color=GREY, linewidth=0.6, linestyle=(0, (2, 2)))
    _style(axes, "Cascading randomisation", "parts randomised (from the output down)", "Spearman similarity")
    if stages:
        every = -(-len(stages) // MAX_STAGE_LABELS)  # a big model's many stages: every k-th labelled, the first and last
        shown = [number for number in range(1, len(stages) + 1) if (number - 1) % every == 0 or number == len(stages)]
        axes.set_xticks(shown)
        axes.set_xticklabels([short_stage(stages[number - 1]) for number in shown], rotation=60, ha="right", fontsize=FONT - 1.5)
    axes.set_ylim(-1.0, 1.0)


def short_stage(stage: str) -> str:
    """'decoder layer 3' -> 'dec 3', a library stack's 'layers 12' -> 'L12', 'embed tokens' -> 'emb' (the cascade's tick
    labels; a tied part's others named so too)."""
    short = stage.replace("decoder layer", "dec").replace("encoder layer", "enc")
    for long, abbreviated in (
        ("embeddings", "emb"),
        ("embed tokens", "emb"),
        ("lm head", "head"),
        ("layers ", "L"),
        ("layer ", "L"),
    ):
        short = short.replace(long, abbreviated)
    return short


def _style(axes: Axes, title: str, xlabel: str, ylabel: str) -> None:
    axes.set_title(title, fontsize=FONT + 0.5, pad=3)
    axes.set_xlabel(xlabel, fontsize=FONT - 0.5, labelpad=1)
    axes.set_ylabel(ylabel, fontsize=FONT - 0.5, labelpad=1)
    axes.tick_params(labelsize=FONT - 1)
    axes.grid(True, linewidth=0.3, color="#dddddd")
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _caption(card: ReportCard) -> str:
    sanity = "Sanity: Spearman similarity to the trained model's map after randomising every part (cascade) or to the model "
    sanity += (
        f"trained on shuffled targets: above {SANITY_THRESHOLD:g} fails; measures solid, baselines dashed, the random order dotted."
    )
    return "\n".join(_wrapped(line) for line in (card.caption(), sanity))


def _wrapped(text: str, width: int = 175) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join([*lines, line])


def check_card_path(path: str | Path) -> None:
    """A FigureError unless ``path`` ends in a suffix a card is saved as."""
    suffix = Path(path).suffix.lower()
    if suffix not in CARD_SUFFIXES:
        raise FigureError(f"a report card is saved as {', '.join(CARD_SUFFIXES)}, not {Path(path).name!r}")
