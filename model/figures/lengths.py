"""The length experiment's figure (model/lengths/): exact match and token accuracy against the input's length, one line
per positional scheme, the trained lengths shaded; or its table as CSV. PNG, SVG or PDF like every other export."""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from model.figures.layout import FigureError
from model.figures.saving import FIGURE_SUFFIXES, save_figure
from model.lengths.experiment import LengthResult, save_lengths_csv
from model.provenance.embed import write_sidecar
from model.provenance.record import Record

LENGTH_SUFFIXES = (".csv", *FIGURE_SUFFIXES)
WIDTH_IN, HEIGHT_IN, FONT = 7.0, 3.1, 7.0
SCHEME_COLOURS = {  # one colour per scheme, the same in the window (explorer/) and the figure
    "sinusoidal": "#4c78a8",
    "learned": "#f58518",
    "rope": "#54a24b",
    "alibi": "#e45756",
    "relative": "#b279a2",
    "none": "#7f7f7f",
}
TRAINED = "#e8e8e8"  # the trained lengths' shade


def check_lengths_path(path: str | Path) -> None:
    """A FigureError unless ``path`` ends in a suffix the experiment is saved as."""
    suffix = Path(path).suffix.lower()
    if suffix not in LENGTH_SUFFIXES:
        raise FigureError(f"the length experiment is saved as {', '.join(LENGTH_SUFFIXES)}, not {Path(path).name!r}")


def save_lengths(result: LengthResult, path: str | Path, dpi: float = 300, record: Record | None = None) -> Path:
    """The table (CSV) or the figure (PNG, SVG, PDF), by the suffix; written atomically, ``record`` in it or beside."""
    check_lengths_path(path)
    if Path(path).suffix.lower() == ".csv":
        written = save_lengths_csv(result, path)
        write_sidecar(written, record)
        return written
    return save_figure(lengths_figure(result), path, dpi, record)


def lengths_figure(result: LengthResult) -> Figure:
    """Two panels side by side, exact match and token accuracy over length, the caption below."""
    settings = result.settings
    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN))
    axes = [figure.add_axes((0.07 + 0.44 * i, 0.3, 0.36, 0.56)) for i in range(2)]
    for panel, (attribute, title) in zip(axes, (("exact_match", "Exact match"), ("token_accuracy", "Token accuracy"))):
        panel.axvspan(settings.train_min - 0.5, settings.train_max + 0.5, color=TRAINED, zorder=0, label="trained lengths")
        for scheme in settings.schemes:
            rows = result.of(scheme)
            lengths, values = [row.length for row in rows], [getattr(row, attribute) for row in rows]
            colour = SCHEME_COLOURS.get(scheme, "#333333")
            panel.plot(lengths, values, "-o", color=colour, markersize=1.8, linewidth=1.0, label=scheme)
        _style(panel, title, settings.test_max)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="center right", fontsize=FONT - 0.5, frameon=False, bbox_to_anchor=(0.995, 0.58))
    figure.text(0.01, 0.97, "Reading longer sentences than trained on", fontsize=FONT + 2, weight="bold", va="top")
    figure.text(0.01, 0.02, _caption(result), fontsize=FONT - 1, va="bottom", color="#333333", wrap=True)
    return figure


def _style(axes: Axes, title: str, test_max: int) -> None:
    axes.set_title(title, fontsize=FONT + 0.5, pad=3)
    axes.set_xlabel("input length (pieces; words for toy-fr)", fontsize=FONT - 0.5, labelpad=1)
    axes.set_ylim(-0.03, 1.03)
    axes.set_xlim(0.5, test_max + 0.5)
    axes.tick_params(labelsize=FONT - 1)
    axes.grid(True, linewidth=0.3, color="#dddddd")
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _caption(result: LengthResult) -> str:
    settings = result.settings
    corpus = f"the {settings.corpus} task" if settings.corpus != "toy-fr" else "toy-fr"
    minutes = sum(result.seconds.values()) / 60
    return (
        f"{corpus}: each scheme's Transformer (2+2 layers, d_model 64, 4 heads; the same seed, data and {settings.steps:,} "
        f"steps) trained on {settings.train_pairs:,} sentences of {settings.train_min}–{settings.train_max} pieces (shaded) and "
        f"read greedily at every length up to {settings.test_max} ({settings.per_length} sentences each)"
        f"{'; the tables trained with randomised positions' if settings.randomised else ''}; {minutes:.1f} "
        "minutes in all.\nExact match: the whole output right; token accuracy: the reference's tokens decoded at their "
        "own position."
    )
