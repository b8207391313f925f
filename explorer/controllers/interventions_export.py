"""The Interventions view's results as files: a CSV of each tool's result (written atomically), and the one place its
figures will be made.

``result_rows(tool, result)`` is the table a tool's result reads as, a header then one row per number:

* logit lens: reading, step, decoder input, chosen token, its rank and probability, the reading's top token and its
  probability, one row per reading and step;
* DecoderLens: encoder layer, translation, total log probability, tokens;
* logit attribution: step, token, part, kind, value, one row per step and part, then each step's logit and remainder;
* patching: method, direction, step, clean and compared tokens, grid, row, column, normalised value and logit
  difference, one row per cell of every grid.

Numbers are written exactly (repr), as the other CSV exports of the app write them.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

from explorer.controllers.interventions import ATTRIBUTION, DECODER_LENS, LENS, PATCHING
from model.files import atomic_output
from model.interventions.decoder_lens import DecoderLensResult
from model.interventions.hooked import InterventionError
from model.interventions.logit_attribution import LogitAttribution
from model.interventions.logit_lens import LogitLensResult
from model.interventions.patching import PatchingResult

Row = list[Any]


def lens_rows(lens: LogitLensResult) -> list[Row]:
    header: Row = [
        "reading",
        "step",
        "decoder input",
        "chosen token",
        "chosen rank",
        "chosen probability",
        "top token",
        "top probability",
    ]
    rows = [header]
    chosen_tokens = [lens.candidate_tokens[-1][step][0] for step in range(len(lens.chosen_ids))]  # the last reading's top
    for index, reading in enumerate(lens.readings):
        for step, given in enumerate(lens.decoder_input_tokens):
            rows.append(
                [reading, step + 1, given, chosen_tokens[step], int(lens.chosen_ranks[index, step]),
                 repr(float(lens.chosen_probabilities[index, step])), lens.candidate_tokens[index][step][0],
                 repr(float(lens.candidate_probabilities[index, step, 0]))]
            )  # fmt: skip
    return rows


def decoder_lens_rows(lens: DecoderLensResult) -> list[Row]:
    rows: list[Row] = [["encoder layer", "translation", "total log probability", "tokens"]]
    for layer, translation, total, tokens in zip(lens.layers, lens.translations, lens.total_log_probabilities, lens.tokens):
        rows.append([layer, translation, repr(float(total)), " ".join(tokens)])
    return rows


def attribution_rows(attribution: LogitAttribution) -> list[Row]:
    rows: list[Row] = [["step", "token", "part", "kind", "value"]]
    for step, token in enumerate(attribution.target_tokens):
        for part, kind, value in zip(attribution.parts, attribution.part_kinds, attribution.values[step]):
            rows.append([step + 1, token, part, kind, repr(float(value))])
        rows.append([step + 1, token, "logit", "total", repr(float(attribution.logits[step]))])
        rows.append([step + 1, token, "remainder", "total", repr(float(attribution.remainder[step]))])
    return rows


def patching_rows(result: PatchingResult) -> list[Row]:
    rows: list[Row] = [
        ["method", "direction", "step", "clean token", "compared token", "grid", "row", "column", "value", "logit difference"]
    ]
    labels = result.labels
    for name, grid in result.grids.items():
        for row_index, row in enumerate(grid.rows):
            for column_index, column in enumerate(grid.columns):
                rows.append(
                    [result.method, result.direction, result.step + 1, labels.clean_token, labels.compared_token, name, row,
                     column, repr(float(grid.values[row_index, column_index])),
                     repr(float(grid.metrics[row_index, column_index]))]
                )  # fmt: skip
    return rows


TABLES: dict[str, Callable[[Any], list[Row]]] = {
    LENS: lens_rows,
    DECODER_LENS: decoder_lens_rows,
    ATTRIBUTION: attribution_rows,
    PATCHING: patching_rows,
}


def result_rows(tool: str, result: Any) -> list[Row]:
    """The table of a tool's result: a header, then its rows (see the module's docstring)."""
    return TABLES[tool](result)


def write_result_csv(tool: str, result: Any, path: str | Path) -> Path:
    """Write a tool's result to ``path`` as CSV, atomically (a file that cannot be written is left as it was)."""
    with atomic_output(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(result_rows(tool, result))
    return Path(path)


def save_figure(tool: str, result: Any, path: str | Path) -> Path:
    """The figure of a tool's result (PNG, SVG or PDF by the suffix): the one place the window makes one. The
    figures come with model/figures/interventions.py; until then this says so."""
    raise InterventionError(f"figures of the {tool} are not available yet: save its CSV instead ({Path(path).name})")
