"""The alignment table: every measure of cross-attention and every head against toy-fr's gold alignments.

One column per measure (its label; its header's tooltip says how it is computed) and one row per reading:
each head of the measures defined per head ("L1 H1" ...), then each layer ("L1 (layer)" ...: the mean of a
per-head measure's heads, a layer-wide measure's map, a rollout read through that layer), then "one map" for
the saliencies. A cell is the reading's AER on the pairs scored (lower is better), empty where the measure has
no such reading; each column's best cell is bold on a highlighted background, and the last row names it.

The pairs are the app's one AER set (model/inspection/alignment.py): N held-out toy-fr test pairs drawn with a
seed, 200 and 0 by default as on the command line; the status line names the best cross-attention head with its AER,
the count and the seed ("layer 3, head 1: AER 0.126 on 200 toy-fr test pairs, seed 0"), and every cell's tooltip
says them too.

The view shows plain data: its buttons ask for a run (``score_requested(pairs, seed)``) or its end
(``cancel_requested``), and the Explore tab calls ``set_running``, ``set_progress``, ``show_table`` and
``show_message`` with what the alignment controller (explorer/controllers/alignment.py) reports. ``message``
carries what the view itself has to say (saving the CSV); the label under the buttons shows those and the
controller's messages.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from model.attribution.alignment_table import AlignmentTable
from model.attribution.measures import MEASURES
from model.inspection.alignment import AER_PAIRS, AER_SEED

DEFAULT_PAIRS, MIN_PAIRS, MAX_PAIRS = AER_PAIRS, 5, 1000
MAX_SEED = 999_999
BEST_ROW = "best"
BEST_BACKGROUND = QColor("#cfe8cf")  # pale green: the best reading of a column
BEST_FOREGROUND = QColor("#000000")  # readable on it in a dark theme too
AER_ROLE = Qt.ItemDataRole.UserRole + 1  # the cell's AER as a float (the text is rounded)
NOTE = (
    "AER of each reading of cross-attention against toy-fr's gold word alignments, on {n} toy-fr test pairs (held "
    "out of training) drawn with seed {seed}, teacher-forced on their references; lower is better. The same count "
    "and seed give the same best head as evaluate, heads and compare (--aer-pairs {n} --aer-seed {seed}). "
    "Integrated gradients and the gradient methods take longest."
)

# A reading: ("head", layer, head), ("layer", layer) or ("one",), 0-based.
Reading = tuple


def table_readings(table) -> list[tuple[str, Reading]]:
    """(row name, reading) of every row of ``table``: heads, then layers, then the one map."""
    n_layers = max((len(m.layer_aer) for m in table.measures if not MEASURES[m.measure].single), default=0)
    n_heads = max((m.head_aer.shape[1] for m in table.measures if MEASURES[m.measure].per_head), default=0)
    rows: list[tuple[str, Reading]] = []
    rows += [(f"L{layer + 1} H{head + 1}", ("head", layer, head)) for layer in range(n_layers) for head in range(n_heads)]
    rows += [(f"L{layer + 1} (layer)", ("layer", layer)) for layer in range(n_layers)]
    if any(MEASURES[m.measure].single for m in table.measures):
        rows.append(("one map", ("one",)))
    return rows


def reading_aer(result, reading: Reading) -> float | None:
    """The AER of one reading of a MeasureAlignment; None where the measure has no such reading."""
    measure = MEASURES[result.measure]
    if reading[0] == "head":
        _, layer, head = reading
        if measure.per_head and layer < result.head_aer.shape[0] and head < result.head_aer.shape[1]:
            return float(result.head_aer[layer, head])
        return None
    if reading[0] == "layer":
        layer = reading[1]
        return None if measure.single or layer >= len(result.layer_aer) else float(result.layer_aer[layer])
    return float(result.layer_aer[0]) if measure.single and len(result.layer_aer) else None


def describe_reading(result, reading: Reading) -> str:
    """What a cell reads, for its tooltip."""
    measure = MEASURES[result.measure]
    if reading[0] == "head":
        return f"{measure.label}, layer {reading[1] + 1}, head {reading[2] + 1}"
    if reading[0] == "layer":
        layer = reading[1] + 1
        if measure.per_head:
            return f"{measure.label}: layer {layer}'s mean over heads (the heads' weights averaged, then read)"
        return f"{measure.label}: read through layers 1 to {layer}" if measure.rollout else f"{measure.label}: layer {layer}"
    return f"{measure.label}: its one map of the source"


class AlignmentView(QWidget):
    message = Signal(str)  # what the view has to say itself (a CSV saved, or why it was not)
    score_requested = Signal(int, int)  # score every measure on this many held-out pairs, drawn with this seed
    cancel_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.running = False
        self.table_shown: AlignmentTable | None = None  # the AlignmentTable the table shows, or None
        self.best_cells: dict[int, int] = {}  # column -> row of its best reading

        self.score_button = QPushButton("Score every measure")
        self.score_button.setToolTip("Compute the AER of every measure and head on held-out toy-fr test pairs (in the background)")
        self.pairs = QSpinBox()
        self.pairs.setRange(MIN_PAIRS, MAX_PAIRS)
        self.pairs.setValue(DEFAULT_PAIRS)
        self.pairs.setToolTip(
            f"How many toy-fr test pairs (held out of training, with gold alignments) to score on; {AER_PAIRS} as "
            "evaluate, heads and compare by default"
        )
        self.seed = QSpinBox()
        self.seed.setRange(0, MAX_SEED)
        self.seed.setValue(AER_SEED)
        self.seed.setToolTip(f"The seed that draws the pairs from the test split ({AER_SEED} by default, as on the command line)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m pairs")
        self.progress.setValue(0)
        self.save_button = QPushButton("Save CSV…")
        self.save_button.setEnabled(False)
        self.save_button.setToolTip("Write measure, reading and AER of every cell to a CSV file")
        controls = QHBoxLayout()
        controls.addWidget(self.score_button)
        controls.addWidget(QLabel("Pairs:"))
        controls.addWidget(self.pairs)
        controls.addWidget(QLabel("Seed:"))
        controls.addWidget(self.seed)
        controls.addWidget(self.cancel_button)
        controls.addWidget(self.progress, 1)
        controls.addWidget(self.save_button)

        self.note = QLabel()
        self.note.setWordWrap(True)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)

        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.note)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)

        self.score_button.clicked.connect(self._on_score_clicked)
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.save_button.clicked.connect(self._on_save_clicked)
        self.pairs.valueChanged.connect(self._on_pairs_changed)
        self.seed.valueChanged.connect(lambda _seed: self._on_pairs_changed(self.pairs.value()))
        self._on_pairs_changed(self.pairs.value())

    # --- the controls ---------------------------------------------------------------------------
    def _on_score_clicked(self) -> None:
        self.status.clear()
        self.score_requested.emit(self.pairs.value(), self.seed.value())

    def _on_cancel_clicked(self) -> None:
        self.cancel_requested.emit()

    def _on_pairs_changed(self, value: int) -> None:
        self.note.setText(NOTE.format(n=value, seed=self.seed.value()))
        if not self.running:
            self.progress.setRange(0, value)
            self.progress.setValue(0)

    def set_running(self, running: bool) -> None:
        """A run started (True) or ended, whatever its outcome (False)."""
        self.running = running
        self.score_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        if running:
            self.progress.setRange(0, self.pairs.value())
            self.progress.setValue(0)

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)

    def show_message(self, text: str) -> None:
        self.status.setText(text)

    def _on_save_clicked(self) -> None:
        if self.table_shown is None:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Save the alignment table", str(Path.home() / "alignment-aer.csv"), "CSV (*.csv)"
        )
        if path:
            self.save_csv(path)

    def save_csv(self, path: str) -> bool:
        """Write the table shown to ``path``; False (and a message) when it cannot be written."""
        if self.table_shown is None:
            return False
        try:
            self.table_shown.write_csv(path)
        except Exception as error:  # noqa: BLE001 - a file that cannot be written is a message, not a traceback
            text = f"The table could not be saved: {str(error) or type(error).__name__}"
            self.status.setText(text)
            self.message.emit(text)
            return False
        text = f"Saved the alignment table to {path}."
        self.status.setText(text)
        self.message.emit(text)
        return True

    # --- the table ------------------------------------------------------------------------------
    def show_table(self, table: AlignmentTable | None, why_none: str = "") -> None:
        """A table to show (None: clear it, and say ``why_none``)."""
        self.table_shown = table
        self.best_cells = {}
        self.save_button.setEnabled(table is not None)
        self.table.clear()
        if table is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.progress.setValue(0)
            self.status.setText(why_none)
            return
        readings = table_readings(table)
        self.table.setUpdatesEnabled(False)
        self.table.setColumnCount(len(table.measures))
        self.table.setRowCount(len(readings) + 1)
        for column, result in enumerate(table.measures):
            measure = MEASURES[result.measure]
            header = QTableWidgetItem(measure.label + (" *" if result.note else ""))
            header.setToolTip(measure.what + (f"\n* {result.note}" if result.note else ""))
            self.table.setHorizontalHeaderItem(column, header)
            self._fill_column(column, result, readings, table.where())
        for row, (name, _) in enumerate(readings):
            self.table.setVerticalHeaderItem(row, QTableWidgetItem(name))
        best = QTableWidgetItem(BEST_ROW)
        best.setToolTip("Each measure's reading with the lowest AER")
        self.table.setVerticalHeaderItem(len(readings), best)
        self.table.setUpdatesEnabled(True)
        best_head = table.best_head()
        head = f" Best cross-attention head: {best_head}." if best_head else ""
        notes = "".join(f" * {MEASURES[m.measure].label}: {m.note}." for m in table.measures if m.note)
        self.status.setText(f"Scored on {table.where()}; the best reading of each measure is in bold.{head}{notes}")

    def _fill_column(self, column: int, result, readings: list[tuple[str, Reading]], where: str) -> None:
        """One measure's cells, its best one marked, and its best reading in the last row."""
        best_row, best_aer, best_cell = -1, float("inf"), None
        for row, (_, reading) in enumerate(readings):
            aer = reading_aer(result, reading)
            if aer is None:
                continue
            item = QTableWidgetItem(f"{aer:.3f}")
            item.setData(AER_ROLE, aer)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setToolTip(f"{describe_reading(result, reading)}: AER {aer:.4f} on {where}")
            self.table.setItem(row, column, item)
            if aer < best_aer:  # the first of equals, as MeasureAlignment.best() chooses
                best_row, best_aer, best_cell = row, aer, item
        if best_cell is None:
            return
        self.best_cells[column] = best_row
        font = QFont(best_cell.font())
        font.setBold(True)
        best_cell.setFont(font)
        best_cell.setBackground(QBrush(BEST_BACKGROUND))
        best_cell.setForeground(QBrush(BEST_FOREGROUND))
        summary = QTableWidgetItem(f"{readings[best_row][0]}: {best_aer:.3f}")
        summary.setData(AER_ROLE, best_aer)
        summary.setFont(font)
        summary.setToolTip(f"{describe_reading(result, readings[best_row][1])} aligns best: AER {best_aer:.4f} on {where}")
        self.table.setItem(len(readings), column, summary)
