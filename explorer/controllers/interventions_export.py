"""The Interventions view's results as files, through the core: a CSV of each tool's result (model/interventions/
tables.py: one row per number) or its figure (model/figures/interventions.py: PNG, SVG or PDF), by the suffix, each
written atomically. The same tables and figures as the ``patch`` and ``lens`` commands write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from explorer.controllers.interventions import ATTRIBUTION, DECODER_LENS, LENS, PATCHING
from model.figures.attention import FigureOptions
from model.figures.interventions import attribution_figure, decoder_lens_figure, lens_figure, patching_figure
from model.figures.saving import save_figure
from model.files import OutputError
from model.interventions.tables import Row, attribution_rows, decoder_lens_rows, lens_rows, patching_rows, write_rows
from model.provenance.embed import write_sidecar
from model.provenance.record import Record

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
SUFFIXES = (".csv", *FIGURE_SUFFIXES)
TABLES: dict[str, Callable[[Any], list[Row]]] = {
    LENS: lens_rows,
    DECODER_LENS: decoder_lens_rows,
    ATTRIBUTION: attribution_rows,
    PATCHING: patching_rows,
}


def result_rows(tool: str, result: Any) -> list[Row]:
    """The table of a tool's result: one dict per row (model/interventions/tables.py)."""
    return TABLES[tool](result)


def save_result(
    tool: str, result: Any, path: str | Path, step: int = 0, grid: str | None = None, model_name: str = "", source: str = "",
    record: Record | None = None,
) -> Path:  # fmt: skip
    """A tool's result to ``path``: a CSV, or a figure by the suffix (the attribution of ``step``, from 0; the patching
    ``grid`` shown, or the default grids; the readings' captions name ``source``, the sentence read, as the lens
    command's do); an OutputError of one line for another suffix or a file it cannot write."""
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise OutputError(f"{Path(path).name}: save as .csv (every number) or .png, .svg, .pdf (the figure)")
    if suffix == ".csv":
        written = write_rows(result_rows(tool, result), path)
        write_sidecar(written, record)  # what drew it (model/provenance/)
        return written
    options = FigureOptions(model_name=model_name)
    if tool == LENS:
        figure = lens_figure(result, options, source)
    elif tool == DECODER_LENS:
        figure = decoder_lens_figure(result, options, source)
    elif tool == ATTRIBUTION:
        figure = attribution_figure(result, min(max(step, 0), len(result.target_tokens) - 1), options, source)
    else:
        figure = patching_figure(result, (grid,) if grid else None, options)
    return save_figure(figure, path, record=record)
