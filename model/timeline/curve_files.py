"""The curves of a timeline as files: a CSV with one row per snapshot and head, and a figure of stacked panels on one
log step axis (training loss and validation scores, AER per cross head with the alignment onsets, normalised entropy
per head of each kind, importance), the ranked phase changes shaded and numbered on every panel. Both atomic."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from model.figures.attention import head_colour
from model.figures.layout import FIGURE_RC
from model.figures.saving import save_figure
from model.files import atomic_output
from model.kinds import AttentionKind
from model.provenance.record import Record
from model.timeline.curves import HeadCurves

MARKED_CHANGES = 5  # phase changes shaded on the figure (all of them are in the list)
PANEL_HEIGHT = 1.55  # inches


def _number(value: float) -> str:
    return "" if value is None or not math.isfinite(value) else repr(float(value))


def curve_rows(curves: HeadCurves) -> list[dict[str, str | int]]:
    """One row per snapshot, kind, layer and head (layers and heads from 1); empty cells where a value does not apply
    (AER of a self-attention head, a snapshot without validation)."""
    onset = {(o.layer, o.head): o.step for o in curves.onsets}
    rows: list[dict[str, str | int]] = []
    for n, index in enumerate(curves.indices):
        common: dict[str, str | int] = {
            "snapshot": index,
            "step": int(curves.steps[n]),
            "name": curves.names[n],
            "elapsed_seconds": _number(curves.elapsed_seconds[n]),
            "train_loss": _number(curves.train_loss[n]),
        }
        common.update({f"validation_{name}": _number(values[n]) for name, values in curves.validation.items()})
        for kind in curves.kinds:
            n_layers, n_heads = curves.entropy[kind].shape[1:]
            for layer in range(n_layers):
                for head in range(n_heads):
                    cross = kind is AttentionKind.CROSS and curves.aer is not None
                    importance = curves.importance.get(kind) if curves.importance else None
                    rows.append(
                        common
                        | {
                            "kind": kind.value,
                            "layer": layer + 1,
                            "head": head + 1,
                            "entropy": _number(curves.entropy[kind][n, layer, head]),
                            "normalised_entropy": _number(curves.normalised_entropy[kind][n, layer, head]),
                            "role": str(curves.roles[kind][n, layer, head]),
                            "attention_change": _number(curves.matrix_change[kind][n, layer, head]),
                            "aer": _number(curves.aer[n, layer, head]) if cross and curves.aer is not None else "",
                            "importance": _number(importance[n, layer, head]) if importance is not None else "",
                            "alignment_like_from_step": onset.get((layer, head), "") if cross else "",
                        }
                    )
    return rows


def save_curves_csv(curves: HeadCurves, path: str | Path) -> Path:
    """``curve_rows`` as CSV, written atomically."""
    rows = curve_rows(curves)
    with atomic_output(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)


def _head_lines(axes, steps: np.ndarray, values: np.ndarray, prefix: str = "") -> None:
    """One line per head of [N, layers, heads]: a colour per head, a dash pattern per layer."""
    styles = ("-", "--", ":", "-.")
    for layer in range(values.shape[1]):
        for head in range(values.shape[2]):
            axes.plot(
                steps,
                values[:, layer, head],
                color=head_colour(head),
                linestyle=styles[layer % len(styles)],
                linewidth=0.9,
                marker=".",
                markersize=2.5,
                label=f"{prefix}L{layer + 1}H{head + 1}",
            )


def _panels(curves: HeadCurves) -> list[tuple[str, object]]:
    """(y label, what to draw) of each panel, top to bottom."""
    panels: list[tuple[str, object]] = [("loss", "loss")]
    if any("loss" not in name for name in curves.validation):
        panels.append(("validation", "validation"))
    if curves.aer is not None:
        panels.append((f"AER\n({curves.aer_where})", "aer"))
    panels += [(f"{kind.value}\nnorm. entropy", kind) for kind in curves.kinds]
    if curves.importance:
        panels.append((f"importance\n({curves.importance_where})", "importance"))
    return panels


def _draw_panel(axes, curves: HeadCurves, what: object, steps: np.ndarray) -> None:
    if what == "loss":
        axes.plot(steps, curves.train_loss, color="black", marker=".", markersize=3, linewidth=1, label="training loss")
        for name, values in curves.validation.items():
            if "loss" in name and np.isfinite(values).any():
                axes.plot(steps, values, color="#e45756", marker="o", markersize=3, linestyle="none", label=f"validation {name}")
    elif what == "validation":
        scores = [(name, values) for name, values in curves.validation.items() if "loss" not in name]  # losses: above
        for number, (name, values) in enumerate(scores):
            scaled = values / 100 if np.nanmax(np.abs(values), initial=0) > 1.5 else values
            label = f"{name} / 100" if scaled is not values else name
            axes.plot(steps, scaled, color=head_colour(number), marker="o", markersize=3, linewidth=0.9, label=label)
    elif what == "aer" and curves.aer is not None:
        _head_lines(axes, steps, curves.aer)
        axes.axhline(curves.onset_threshold, color="grey", linewidth=0.6, linestyle="--")
        for onset in curves.onsets:
            axes.plot([max(onset.step, 0)], [onset.aer], marker="v", color=head_colour(onset.head), markersize=5)
        axes.set_ylim(-0.02, 1.02)
    elif what == "importance" and curves.importance:
        for kind, values in curves.importance.items():
            _head_lines(axes, steps, values, prefix=f"{kind.value[:3]} ")
    elif isinstance(what, AttentionKind):
        _head_lines(axes, steps, curves.normalised_entropy[what])
        axes.set_ylim(-0.02, 1.02)


def _number_changes(axes, curves: HeadCurves, font_size: float) -> None:
    """The ranks of the marked phase changes above the top panel, one label per snapshot pair ("1, 4")."""
    ranks: dict[tuple[int, int], list[str]] = {}
    for change in curves.phase_changes[:MARKED_CHANGES]:
        ranks.setdefault((change.step_before, change.step_after), []).append(str(change.rank))
    for (before, after), numbers in ranks.items():
        middle = math.sqrt(max(before, 1) * max(after, 1))  # the middle on a log axis
        axes.annotate(
            ", ".join(numbers), xy=(middle, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=font_size
        )


def curves_figure(curves: HeadCurves, width: float = 6.9, font_size: float = 7.0) -> Figure:
    """The stacked curves on one log step axis (symmetric log when a snapshot is at step 0), phase changes shaded."""
    panels = _panels(curves)
    steps = curves.steps.astype(np.float64)  # [N]
    with matplotlib.rc_context({**FIGURE_RC, "font.size": font_size}):
        figure = Figure(figsize=(width, PANEL_HEIGHT * len(panels) + 0.6), layout="constrained")
        axes_list = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
        for axes, (label, what) in zip(axes_list, panels):
            _draw_panel(axes, curves, what, steps)
            axes.set_ylabel(label, fontsize=font_size)
            axes.tick_params(labelsize=font_size)
            for change in curves.phase_changes[:MARKED_CHANGES]:
                axes.axvspan(change.step_before, change.step_after, color="#eeca3b", alpha=0.18, linewidth=0)
            handles, names = axes.get_legend_handles_labels()
            if handles and len(handles) <= 24:
                axes.legend(
                    fontsize=font_size * 0.8,
                    ncols=max(1, math.ceil(len(handles) / 6)),
                    loc="center left",
                    bbox_to_anchor=(1.0, 0.5),
                    frameon=False,
                )
        _number_changes(axes_list[0], curves, font_size)
        axes_list[-1].set_xscale("symlog" if steps.min() < 1 else "log", **({"linthresh": 1} if steps.min() < 1 else {}))
        axes_list[-1].set_xlabel("training step (log scale)")
        figure.suptitle(
            f"Heads over training: “{curves.text}”\nshaded: the {min(MARKED_CHANGES, len(curves.phase_changes))} largest "
            f"changes (numbered by rank); ▼ alignment-like from (AER < {curves.onset_threshold:g} to the end)",
            wrap=True,  # a long sentence wraps inside the figure instead of running off both sides
            fontsize=font_size,
        )
    return figure


def save_curves_figure(
    curves: HeadCurves, path: str | Path, width: float = 6.9, dpi: float = 200, record: Record | None = None
) -> Path:
    """``curves_figure`` as PNG, SVG or PDF by the suffix (model/figures/saving.py), atomically, ``record`` in it."""
    return save_figure(curves_figure(curves, width), path, dpi, record)
