"""The report card: one row per attribution method, one cell per registered metric, the sanity verdict, the mean
deletion and insertion curves, what it was measured on and how long each part took; its CSV and its lines of text.

The best cell of each column is marked (★): the highest or lowest value, as the column prefers, among the rows whose
cell has a value and no failure — never the reference (leave-one-out in the τ columns) nor the random order, which
are there to compare with. The sanity column's best is the lowest similarity among the methods that pass.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.files import atomic_output
from model.grading.faithfulness import FRACTIONS, GRID
from model.grading.metrics import METRICS, Cell
from model.grading.sanity import SanityResult

PERTURBATION = "pieces hidden in place by the pad id, which the model masks as padding (positions kept)"
SCORE = "p(reference piece) at each step, teacher-forced on the reference"
DIGITS = 3  # the card's decimals


@dataclass
class MethodRow:
    name: str
    label: str
    what: str
    baseline: bool  # a perturbation baseline or the random order (not one of the app's measures)
    reads_model: bool = True
    cells: dict[str, Cell] = field(default_factory=dict)  # metric name -> its cell
    sanity: SanityResult | None = None
    sanity_reason: str = ""  # why there is no sanity verdict
    sanity_best: bool = False
    deletion_curve: np.ndarray | None = None  # [len(GRID)] mean p with that share of pieces hidden
    insertion_curve: np.ndarray | None = None  # [len(GRID)] mean p with that share shown
    fractions: dict[str, list[float | None]] = field(default_factory=dict)  # comprehensiveness/sufficiency per fraction
    note: str = ""  # integrated gradients' convergence

    def sanity_text(self) -> str:
        """'pass 0.12' (the worst similarity), 'FAIL 0.93', '✗' (a similarity that could not be read) or '—'."""
        if self.sanity is None:
            return "—"
        similarity = self.sanity.similarity
        if not np.isfinite(similarity):
            return "✗"
        verdict = "pass" if self.sanity.passed else "FAIL"
        shown = f"{similarity + 0.0:.2f}".replace("-0.00", "0.00")  # no "-0.00"
        return f"{verdict} {shown}{' ★' if self.sanity_best else ''}"

    def sanity_note(self) -> str:
        if self.sanity is None:
            return self.sanity_reason
        parts = []
        if self.sanity.cascade:
            parts.append(f"cascade {self.sanity.cascade[-1]:.2f}")
        if self.sanity.data is not None:
            parts.append(f"shuffled targets {self.sanity.data:.2f}")
        return ", ".join(parts + self.sanity.failures)


@dataclass
class ReportCard:
    model: str  # the model's name
    corpus: str  # what the pairs were drawn from
    n_pairs: int
    n_steps: int
    rows: list[MethodRow]
    columns: list[str]  # metric names, in the card's order
    stages: list[str] = field(default_factory=list)  # the cascade's stages, from the output down
    data_randomisation: str = ""  # what the shuffled-target model was ('' when none was given)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per part (each method's maps, faithfulness, sanity)
    notes: list[str] = field(default_factory=list)
    removal: str = PERTURBATION  # how a piece is removed, or why no piece can be (a family that cannot hide one)
    pieces: str = "source"  # what the pieces hidden and attributed are: "source", a decoder-only model's "prompt", an
    # encoder-only model's "text"
    predicted: str = "reference"  # what each prediction scored is: the reference piece, or an encoder-only model's decided
    # "tag", "word" or "class"
    score: str = SCORE  # the score the curves read

    def row(self, name: str) -> MethodRow:
        return next(row for row in self.rows if row.name == name)

    def headers(self) -> list[str]:
        return [METRICS[name].header for name in self.columns] + ["Sanity"]

    def table(self) -> list[list[str]]:
        """The card as text: one row per method, its label then each column's cell and the sanity verdict."""
        return [[row.label] + [row.cells[name].text() for name in self.columns] + [row.sanity_text()] for row in self.rows]

    def caption(self) -> str:
        data = (
            f"data randomisation: {self.data_randomisation}"
            if self.data_randomisation
            else "no data randomisation (no model trained on shuffled targets was given)"
        )
        return (
            f"{self.model}: {self.n_pairs} held-out {'texts' if self.pieces == 'text' else 'pairs'} of {self.corpus} "
            f"({self.n_steps} predictions). Score: {self.score}; "
            f"removal: {self.removal}; {data}. ★ best in its column, ✗ a failure (see the notes)."
        )

    def mark_best(self) -> None:
        """Mark each column's best cell and the best sanity verdict (see the module's docstring)."""
        for name in self.columns:
            higher = METRICS[name].higher_is_better
            eligible = [
                row.cells[name]
                for row in self.rows
                if row.reads_model
                and row.cells[name].value is not None
                and not row.cells[name].failed
                and not row.cells[name].reference
            ]
            for cell in eligible:
                cell.best = False
            shown = {id(cell): cell.shown_value(DIGITS) for cell in eligible}  # ties as the card shows them
            if eligible:
                best = (max if higher else min)(shown.values())
                for cell in eligible:
                    cell.best = shown[id(cell)] == best
        passing = [row for row in self.rows if row.sanity is not None and row.sanity.passed]
        lowest = min((row.sanity.similarity for row in passing if row.sanity is not None), default=None)
        for row in self.rows:
            row.sanity_best = lowest is not None and row in passing and row.sanity is not None and row.sanity.similarity == lowest

    def notes_of(self, row: MethodRow) -> str:
        """Every reason and failure of a row's cells, named by the columns it holds for, with its sanity note and its
        own note."""
        columns: dict[str, list[str]] = {}
        for name in self.columns:
            if row.cells[name].note():
                columns.setdefault(row.cells[name].note(), []).append(METRICS[name].header)
        parts = [f"{', '.join(headers)}: {note}" for note, headers in columns.items()]
        if row.sanity_note():
            parts.append(f"Sanity: {row.sanity_note()}")
        return "; ".join(parts + ([row.note] if row.note else []))

    def write_csv(self, path: str | Path) -> None:
        """One row per method: each column's value (empty for "—" and "ref."), the comprehensiveness and sufficiency at
        each fraction, the sanity similarities, the best columns and every note (written atomically)."""
        fractions = [f"{kind}_{round(q * 100)}" for kind in ("comprehensiveness", "sufficiency") for q in FRACTIONS]
        header = ["method", "label", "kind", *self.columns, *fractions, "sanity", "sanity_similarity", "cascade_similarity"]
        header += ["data_similarity", "best", "notes", "pairs", "predictions", "corpus", "model"]
        with atomic_output(path) as temporary, open(temporary, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            for row in self.rows:
                writer.writerow(self._csv_row(row))

    def _csv_row(self, row: MethodRow) -> list:
        def number(value: float | None) -> str:
            return "" if value is None or not np.isfinite(value) else f"{value:.4f}"

        values = [number(None if row.cells[name].reference else row.cells[name].value) for name in self.columns]
        per_fraction = [number(v) for kind in ("comprehensiveness", "sufficiency") for v in row.fractions.get(kind, [None] * 3)]
        sanity = row.sanity
        verdict = "" if sanity is None else ("pass" if sanity.passed else "fail")
        similarities = ["", "", ""]
        if sanity is not None:
            similarities = [number(sanity.similarity), number(sanity.cascade[-1] if sanity.cascade else None), number(sanity.data)]
        best = [METRICS[name].header for name in self.columns if row.cells[name].best] + (["Sanity"] if row.sanity_best else [])
        kind = "baseline" if row.baseline else "measure"
        tail = [" | ".join(best), self.notes_of(row), self.n_pairs, self.n_steps, self.corpus, self.model]
        return [row.name, row.label, kind, *values, *per_fraction, verdict, *similarities, *tail]

    def lines(self) -> list[str]:
        """The card as aligned text (the command line prints it)."""
        table = [["Method", *self.headers()], *self.table()]
        widths = [max(len(line[column]) for line in table) for column in range(len(table[0]))]
        return ["  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip() for line in table]


def grid() -> np.ndarray:
    """The shares of pieces the mean curves are read at."""
    return GRID
