"""The interventions' results as rows (CSV) and arrays (NPZ), written atomically: what the window's *Save CSV…*, the
``patch`` and ``lens`` commands and a user's script write.

Every table is long-form (one row per cell), so a spreadsheet or pandas reads it without knowing the grid's shape:

- patching: ``component, row, column, restored, logit_difference`` plus the run's method, direction, step and tokens;
- logit lens: ``reading, step, input, chosen, chosen_rank, chosen_probability, top_1 … top_k`` (with probabilities);
- logit attribution: ``step, input, token, compared, part, part_kind, value`` and a ``remainder`` part per step;
- DecoderLens: ``layer, translation, log_probability, tokens``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from model.files import atomic_output
from model.interventions.decoder_lens import DecoderLensResult
from model.interventions.logit_attribution import LogitAttribution
from model.interventions.logit_lens import LogitLensResult
from model.interventions.patching import PatchingResult

Row = dict[str, Any]


def patching_rows(result: PatchingResult) -> list[Row]:
    """One row per cell of every grid, with what the run compared."""
    rows = []
    for grid in result.grids.values():
        for r, row_label in enumerate(grid.rows):
            for c, column_label in enumerate(grid.columns):
                rows.append(
                    {
                        "method": result.method,
                        "direction": result.direction,
                        "step": result.step,
                        "clean_token": result.labels.clean_token,
                        "compared_token": result.labels.compared_token,
                        "component": grid.component,
                        "row": row_label,
                        "column": column_label,
                        "restored": round(float(grid.values[r, c]), 6),
                        "logit_difference": round(float(grid.metrics[r, c]), 6),
                    }
                )
    return rows


def lens_rows(result: LogitLensResult) -> list[Row]:
    """One row per reading and step: the chosen token's rank and probability, then the reading's top candidates."""
    rows = []
    n_readings, n_steps, k = result.candidate_probabilities.shape
    chosen = result.candidate_tokens  # [R][T][k]
    for r in range(n_readings):
        for t in range(n_steps):
            row: Row = {
                "reading": result.readings[r],
                result.place: t + 1,
                "input": result.decoder_input_tokens[t],
                "chosen": _chosen_token(result, t),
                "chosen_rank": int(result.chosen_ranks[r, t]) + 1,
                "chosen_probability": round(float(result.chosen_probabilities[r, t]), 6),
            }
            for i in range(k):
                row[f"top_{i + 1}"] = chosen[r][t][i]
                row[f"top_{i + 1}_probability"] = round(float(result.candidate_probabilities[r, t, i]), 6)
            rows.append(row)
    return rows


def _chosen_token(result: LogitLensResult, step: int) -> str:
    """The token decoded at ``step``: its piece (forced, sampled or a beam's, it need not be the top candidate)."""
    if step < len(result.chosen_tokens):
        return result.chosen_tokens[step]
    last = result.candidate_tokens[-1][step]  # a result without its pieces: the candidate of the chosen rank, if listed
    return last[int(result.chosen_ranks[-1, step])] if int(result.chosen_ranks[-1, step]) < len(last) else ""


def attribution_rows(result: LogitAttribution) -> list[Row]:
    """One row per step and part, then the step's remainder (what the parts leave of the logit)."""
    rows = []
    for t, token in enumerate(result.target_tokens):
        base = {
            result.place: t + 1,
            "input": result.decoder_input_tokens[t],
            "token": token,
            "compared": "" if int(result.compared_ids[t]) < 0 else int(result.compared_ids[t]),
            "logit": round(float(result.logits[t]), 6),
        }
        for p, part in enumerate(result.parts):
            rows.append({**base, "part": part, "part_kind": result.part_kinds[p], "value": round(float(result.values[t, p]), 6)})
        rows.append({**base, "part": "remainder", "part_kind": "remainder", "value": round(float(result.remainder[t]), 6)})
    return rows


def decoder_lens_rows(result: DecoderLensResult) -> list[Row]:
    """One row per encoder layer read."""
    return [
        {
            "layer": layer,
            "translation": result.translations[i],
            "log_probability": round(float(result.total_log_probabilities[i]), 6),
            "tokens": " ".join(result.tokens[i]),
        }
        for i, layer in enumerate(result.layers)
    ]


def write_rows(rows: Iterable[Row], path: str | Path) -> Path:
    """Rows of one shape as CSV (the first row's keys are the header), written atomically."""
    rows = list(rows)
    with atomic_output(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)


def patching_arrays(result: PatchingResult) -> dict[str, np.ndarray]:
    """Each grid's restored fractions and raw logit differences, its labels, and the run's settings, for an NPZ."""
    arrays: dict[str, np.ndarray] = {
        "method": np.array(result.method),
        "direction": np.array(result.direction),
        "step": np.array(result.step),
        "clean_token": np.array(result.labels.clean_token),
        "compared_token": np.array(result.labels.compared_token),
        "clean_logit_difference": np.array(result.clean_metric),
        "corrupted_logit_difference": np.array(result.corrupted_metric),
        "clean_source_tokens": np.array(result.labels.clean),
        "corrupted_source_tokens": np.array(result.labels.corrupted),
        "target_tokens": np.array(result.labels.target),
    }
    for grid in result.grids.values():
        key = grid.component.replace(" ", "_").replace("-", "_")
        arrays[key] = grid.values
        arrays[f"{key}_logit_difference"] = grid.metrics
        arrays[f"{key}_rows"] = np.array(grid.rows)
        arrays[f"{key}_columns"] = np.array(grid.columns)
    return arrays


def save_npz(arrays: dict[str, np.ndarray], path: str | Path) -> Path:
    """Arrays as a compressed NPZ (loads with ``numpy.load(path, allow_pickle=False)``), written atomically."""
    with atomic_output(path) as temporary, open(temporary, "wb") as handle:
        np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]
    return Path(path)
