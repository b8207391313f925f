"""Figures of the interventions (model/interventions/): activation patching grids, the logit lens, direct logit
attribution and DecoderLens, laid out in points as the attention figures are (the width and font size of
``FigureOptions``, a caption above, labels that never overlap) and saved by ``model.figures.saving``.

- ``patching_figure``: one heatmap per grid (layers × heads, layers × positions, feed-forward blocks), on one
  red-blue scale centred at 0 (1 = the clean behaviour restored), titled with the tokens compared.
- ``lens_figure``: readings × steps, each cell's colour the probability of the token finally chosen and its text the
  reading's top token.
- ``attribution_figure``: the largest parts of one step's logit as signed bars, then the heads' parts as a grid.
- ``decoder_lens_figure``: each encoder layer read and the translation it gives, with its log probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from model.data.token_labels import display_candidate, display_labels, pieces_text
from model.figures.attention import MARGIN, FigureOptions, colour_bar, colour_bar_width, new_figure, place_axes
from model.figures.layout import LINE, MAX_CELL, MIN_FONT_SIZE, Caption, draw_caption, text_width, widest
from model.interventions.decoder_lens import DecoderLensResult
from model.interventions.logit_attribution import LogitAttribution
from model.interventions.logit_lens import LogitLensResult
from model.interventions.patching import Component, PatchingResult

DIVERGING = "RdBu_r"  # blue below 0, white at 0, red above (as the timeline's differences)
HEAD_GRIDS = ("encoder heads", "decoder heads", "cross heads")
DEFAULT_COMPONENTS = (*HEAD_GRIDS, "encoder residual")
BAR_PARTS = 16  # the largest parts drawn as bars


@dataclass
class GridPanel:
    """One labelled matrix of a stacked figure."""

    title: str
    values: np.ndarray  # [rows, columns]
    rows: list[str]
    columns: list[str]
    texts: list[list[str]] | None = None  # a word written in each cell (the logit lens), or None


def stacked_grids(
    panels: Sequence[GridPanel],
    caption: Caption,
    options: FigureOptions,
    levels: tuple[float, float],
    colormap: str,
    scale_label: str,
) -> Figure:
    """Panels one under another, cells of one size (the widest panel fills the width, up to MAX_CELL), column labels
    above each panel (turned upright when they are wider than a cell), one colour bar at the right."""
    size, width = options.font_size, options.width * 72.0
    small = max(MIN_FONT_SIZE, size * 0.85)
    left = MARGIN + widest([label for panel in panels for label in panel.rows], small) + 4
    right = colour_bar_width(size) + MARGIN
    most_columns = max(panel.values.shape[1] for panel in panels)
    cell = min(MAX_CELL * (2.2 if panels[0].texts else 1.0), (width - left - right) / max(most_columns, 1))
    cell_height = max(cell * (0.55 if panels[0].texts else 1.0), small * LINE)
    turned = [any(text_width(label, small) > cell - 2 for label in panel.columns) for panel in panels]
    keys = [widest(panel.columns, small) + 3 if turn else small * LINE for panel, turn in zip(panels, turned)]
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    blocks = [size * LINE + key + panel.values.shape[0] * cell_height + 6 for panel, key in zip(panels, keys)]
    height = MARGIN + caption_height + 4 + sum(blocks) + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    top = height - MARGIN - caption_height - 4
    image, first, last = None, top, 0.0  # first: the first panel's top
    for panel, block, turn, key in zip(panels, blocks, turned, keys):
        n_rows, n_columns = panel.values.shape
        bottom = top - block + 6
        axes = place_axes(figure, left, bottom, n_columns * cell, n_rows * cell_height)
        image = axes.imshow(
            panel.values, cmap=matplotlib.colormaps[colormap], vmin=levels[0], vmax=levels[1], aspect="auto", interpolation="none"
        )
        _label_panel(axes, panel, small, turn, key, size)
        first = bottom + n_rows * cell_height if panel is panels[0] else first
        last = bottom
        top -= block
    # One bar along the whole stack, from the first panel's top to the last one's bottom: it never meets a title.
    beside = max(most_columns * cell, widest([panel.title for panel in panels], size))  # right of the grids and titles
    bar_height = max(first - last, text_width(scale_label, size) + 6)
    colour_bar(figure, image, left + beside + 6, last, bar_height, size, scale_label)
    return figure


def _label_panel(axes, panel: GridPanel, small: float, turned: bool, key_height: float, size: float) -> None:
    """Row labels at the left, column labels above (upright when turned), the title above them, texts in the cells."""
    n_rows, n_columns = panel.values.shape
    axes.set_yticks(range(n_rows), panel.rows, fontsize=small)
    axes.xaxis.tick_top()
    axes.set_xticks(range(n_columns), panel.columns, fontsize=small, rotation=90 if turned else 0)
    axes.tick_params(length=0, pad=1.5)
    axes.set_title(panel.title, fontsize=size, loc="left", y=1.0, pad=key_height + 1)  # y given: not moved by matplotlib
    for spine in axes.spines.values():
        spine.set_linewidth(0.5)
    if panel.texts is None:
        return
    for r in range(n_rows):
        for c in range(n_columns):
            colour = "black" if panel.values[r, c] > 0.6 else "white"
            axes.text(c, r, panel.texts[r][c], ha="center", va="center", fontsize=max(MIN_FONT_SIZE, small * 0.85), color=colour)


def patching_figure(
    result: PatchingResult, components: Sequence[str] | None = None, options: FigureOptions | None = None
) -> Figure:
    """The chosen grids of a patching result (default: the three kinds of heads and the encoder's residual)."""
    options = options or FigureOptions()
    chosen = [name for name in (components or DEFAULT_COMPONENTS) if name in result.grids] or list(result.grids)
    panels = [patching_panel(result, name) for name in chosen]
    largest = max(1.0, *(float(np.nanmax(np.abs(panel.values))) for panel in panels))
    return stacked_grids(panels, patching_caption(result, options), options, (-largest, largest), DIVERGING, "restored (1 = clean)")


def patching_panel(result: PatchingResult, component: str) -> GridPanel:
    """A grid with its positions as people read them (the source's pieces, the clean and corrupted ones joined)."""
    kind = Component.parse(component)
    grid = result.grids[kind]
    columns = grid.columns
    if kind.part == "residual":
        labels = result.labels
        pieces, corrupted_pieces = (
            (labels.target, labels.corrupted_target or labels.target)
            if kind.side == "decoder"
            else (labels.clean, labels.corrupted)
        )
        columns = display_labels(pieces[: len(grid.columns)])
        corrupted = display_labels(corrupted_pieces[: len(grid.columns)])
        columns = [c if c == d else f"{c}/{d}" for c, d in zip(columns, corrupted)]
    return GridPanel(_grid_title(kind), grid.values, grid.rows, columns)


def _grid_title(component: Component) -> str:
    what = {
        "heads": "attention: each head's output",
        "residual": ": the residual stream at each position",
        "feed-forward": " feed-forward: each block's output",
    }
    side, part = component.place, component.part
    return f"{side}{' ' if part == 'heads' else ''}{what.get(part, part)}"


def patching_caption(result: PatchingResult, options: FigureOptions) -> Caption:
    """'Activation patching (denoising, exact): "le" over "les" at step 1', the sources and the logits."""
    labels = result.labels
    clean, compared = labels.compared()
    method = "exact" if result.method == "exact" else "attribution patching, a first-order estimate"
    moved = "clean into corrupted" if result.direction == "denoising" else "corrupted into clean"
    details = [
        f"Clean: “{pieces_text(labels.clean)}”  Corrupted: “{pieces_text(labels.corrupted)}”",
        f"Logit difference “{clean}” − “{compared}”: clean {result.clean_metric:.2f}, corrupted "
        f"{result.corrupted_metric:.2f}; each cell: one activation patched {moved}, (patched − corrupted) / (clean − corrupted)",
        *_model_line(options),
    ]
    return Caption(
        f"Activation patching ({result.direction}, {method}): “{clean}” over “{compared}” {result.labels.at(result.step)}", details
    )


def lens_figure(result: LogitLensResult, options: FigureOptions | None = None, source: str = "") -> Figure:
    """Readings × steps (an encoder-only model's: × the places its head predicts): colour = probability of the token
    finally chosen, text = the reading's top token; ``source``: the sentence read, named in the caption with the output."""
    options = options or FigureOptions()
    columns = [result.column_label(t) for t in range(result.chosen_probabilities.shape[1])]
    shown = display_candidate if result.predicted in ("token", "word") else str  # tags and classes are names, not pieces
    texts = [[shown(tokens[0]) if tokens else "" for tokens in row] for row in result.candidate_tokens]
    if result.reads_text:  # an encoder-only model's head on the text
        what, side, at = result.predicted, "encoder", "on the sentence" if result.place == "sentence" else "at each piece"
        title = "Logit lens: what the model's head would predict from each encoder sublayer if it were the last"
        sentence = _sentence_line(source, result.chosen_tokens, "Predicted", shown is display_candidate)
        panel_title = f"reading after each sublayer (rows) {at} (columns)"
    else:
        what, side = "token", "decoder"
        title = "Logit lens: what each decoder sublayer would predict if it were the last"
        sentence = _sentence_line(source, columns)
        panel_title = "reading after each sublayer (rows) at each step (columns: the token chosen)"
    labels = columns if result.place == "sentence" else [display_candidate(column) for column in columns]
    panel = GridPanel(panel_title, result.chosen_probabilities, result.readings, labels, texts)
    note = f" (through the {side}'s final norm)" if result.final_norm else ""
    chosen = "predicted" if result.reads_text else "chosen"
    colour = f"Colour: probability of the {what} finally {chosen}{note}; text: the reading's top {what}"
    caption = Caption(title, [*sentence, colour, *_model_line(options)])
    return stacked_grids([panel], caption, options, (0.0, 1.0), options.colormap, "p(chosen)")


def _model_line(options: FigureOptions) -> list[str]:
    return [f"model {options.model_name}"] if options.model_name else []


def _sentence_line(source: str, output: list[str] | None = None, called: str = "Output", pieces: bool = True) -> list[str]:
    """'Sentence: “the cat sees the dog”  Output: “le chat voit le chien”' (none without a sentence); ``called``: what
    the output is called (an encoder-only model's "Predicted"), ``pieces``: False for names (tags, classes) spelled as
    they are."""
    if not source.strip():
        return []
    spelled = (pieces_text(output) if pieces else " ".join(output)) if output else ""
    return [f"Sentence: “{source.strip()}”" + (f"  {called}: “{spelled}”" if spelled else "")]


def attribution_figure(result: LogitAttribution, step: int, options: FigureOptions | None = None, source: str = "") -> Figure:
    """One step's logit split into parts: the largest as signed bars, then every head's part as layers × heads;
    ``source``: the sentence read, named in the caption with the output."""
    options = options or FigureOptions()
    size, width = options.font_size, options.width * 72.0
    values = result.values[step]  # [P]
    order = np.argsort(-np.abs(values))[:BAR_PARTS]
    names = [result.parts[i] for i in order]
    label_width = widest(names, size) + 4
    at = result.where(step)
    caption = Caption(
        f"Direct logit attribution of “{result.shown(result.target_tokens[step])}”{_versus(result, step)} "
        f"{'for' if result.place == 'sentence' else 'at'} {at}",
        [
            *_sentence_line(source, result.target_tokens, *(("Output",) if result.place == "step" else ("Predicted", False))),
            f"logit{' difference' if _versus(result, step) else ''} {result.logits[step]:.3f} = the parts' sum + remainder "
            f"{result.remainder[step]:.2g}; "
            f"the {len(order)} largest parts",
            *_model_line(options),
        ],
    )
    caption_height = caption.height(size, width - 2 * MARGIN, options.caption)
    bar_height = len(order) * size * LINE
    height = MARGIN + caption_height + 6 + bar_height + size * LINE * 2.5 + MARGIN
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, options.caption)
    axes = place_axes(figure, MARGIN + label_width, MARGIN + size * LINE * 2.5, width - 2 * MARGIN - label_width - 8, bar_height)
    shown = values[order]
    axes.barh(range(len(order)), shown, color=np.where(shown >= 0, "#d6604d", "#4393c3"), height=0.7)
    axes.set_yticks(range(len(order)), names, fontsize=size)
    axes.invert_yaxis()
    axes.axvline(0, color="#333", linewidth=0.5)
    axes.tick_params(labelsize=size, length=2, width=0.5)
    axes.set_xlabel("contribution to the logit", fontsize=size)
    for spine in axes.spines.values():
        spine.set_linewidth(0.5)
    return figure


def _versus(result: LogitAttribution, step: int) -> str:
    """' − “les”' when a token's logit is subtracted at ``step``."""
    compared = result.compared_tokens[step] if step < len(result.compared_tokens) else ""
    return f" − “{result.shown(compared)}”" if compared else ""


def head_attribution_grid(result: LogitAttribution, step: int, kind: str) -> np.ndarray:
    """The parts of ``kind``'s heads ("self" or "cross") at ``step`` as [layers, heads] (the window's grid)."""
    prefix = f" {kind} H"
    cells = [(name, result.values[step, i]) for i, name in enumerate(result.parts) if prefix in name]
    layers = sorted({int(name.split(" ")[0][1:]) for name, _ in cells})
    heads = sorted({int(name.rsplit("H", 1)[1]) for name, _ in cells})
    grid = np.zeros((len(layers), len(heads)), dtype=np.float32)
    for name, value in cells:
        grid[int(name.split(" ")[0][1:]) - 1, int(name.rsplit("H", 1)[1]) - 1] = value
    return grid


def decoder_lens_figure(result: DecoderLensResult, options: FigureOptions | None = None, source: str = "") -> Figure:
    """One line per encoder layer read: its translation and total log probability; ``source``: the sentence read."""
    options = options or FigureOptions()
    lines = [
        f"{layer}: “{text}”   log p {float(logp):.2f}"
        for layer, text, logp in zip(result.layers, result.translations, result.total_log_probabilities)
    ]
    note = " (each through the encoder's final norm)" if result.final_norm else ""
    caption = Caption(
        "DecoderLens: the decoder reading each encoder layer's output instead of the last",
        [*_sentence_line(source), f"greedy translations{note}", *_model_line(options), *lines],
    )
    size, width = options.font_size, options.width * 72.0
    height = MARGIN * 2 + caption.height(size, width - 2 * MARGIN, True)
    figure = new_figure(width, height)
    draw_caption(figure, caption, size, MARGIN, height - MARGIN, width - 2 * MARGIN, True)
    return figure
