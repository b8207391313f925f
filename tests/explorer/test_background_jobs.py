"""Every tool that runs in the background, in the window: cancelled mid-run, the window closed mid-run (the job is
joined, nothing it reports afterwards reaches the window), and an unexpected error inside the job (shown as an
internal error, its traceback logged). The core's slow function is replaced by one that waits, polling the job's
cancellation, so "mid-run" is a state the test waits for, never a guess of time."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from PySide6.QtWidgets import QApplication

import explorer.controllers.alignment as alignment_module
import explorer.controllers.compare as compare_module
import explorer.controllers.importance as importance_module
import explorer.controllers.measures as measures_module
import explorer.controllers.training as training_module
from explorer.controllers.runner import Cancelled
from model.attribution.alignment_table import AlignmentTable
from model.kinds import StopReason
from model.training.evaluation import Interrupted
from model.training.run import TrainingOutcome
from tests.explorer.gui_helpers import explore_window

WAIT_MS = 60_000  # a bound on waiting for a state, not a timing claim


class Blocker:
    """A stand-in for a slow core function: says it started, then waits until ``stop()`` (the job's cancellation,
    read through the argument the core function takes) or ``release``."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        self.job = None  # the job to watch, for a stand-in whose core function takes no stop flag

    def wait(self, stop=lambda: False) -> bool:
        """True when stopped, False when released."""
        self.calls += 1
        self.started.set()
        while not self.release.is_set():
            if stop():
                return True
            time.sleep(0.001)  # polling the flag, as the core polls it between pairs and steps
        return False

    def wait_for_job(self) -> bool:
        """``wait`` on the cancellation of ``self.job`` (set by the test once submitted)."""
        return self.wait(lambda: self.job is not None and self.job.cancelled)


def internal_errors(caplog) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.name == "explorer" and record.exc_info and "internal error" in record.getMessage()
    ]


def closed_mid_run(qtbot, window, channel: str, blocker: Blocker, joined: bool = True) -> threading.Thread:
    """Close the window while the channel's job waits in ``blocker``; returns its (ended) thread. ``joined=False``:
    a job of work that cannot poll its token (a file read), which closing cancels but does not wait for."""
    qtbot.waitUntil(blocker.started.is_set, timeout=WAIT_MS)
    job = window.runner.current(channel)
    assert job is not None and job.thread.is_alive()
    assert window.close()
    assert job.cancelled and window.runner.closed
    if joined:
        assert not job.thread.is_alive()  # joined by the close
    else:
        job.thread.join(WAIT_MS / 1000)  # it ends on its own (here: the stand-in reads the token)
    return job.thread


# --- the alignment table -------------------------------------------------------------------------------
@pytest.fixture
def slow_alignment(monkeypatch):
    blocker = Blocker()

    def alignment_table(bundle, pairs, names, on_progress=None, cancelled=None, corpus="", seed=None):
        on_progress(1, len(pairs))
        if blocker.wait(cancelled):
            return AlignmentTable([], n_pairs=1)  # as the core does: the pairs scored before it stopped
        raise AssertionError("released: not used here")

    monkeypatch.setattr(alignment_module, "alignment_table", alignment_table)
    return blocker


def test_alignment_cancelled_mid_run(qtbot, open_window, toy_fr_bundle, slow_alignment):
    window = open_window(toy_fr_bundle[0])
    alignment, view = window.controllers.alignment, window.explore_tab.readings.alignment_view
    view.score_button.click()
    qtbot.waitUntil(lambda: slow_alignment.started.is_set() and view.progress.value() == 1, timeout=WAIT_MS)
    with qtbot.waitSignal(alignment.running_changed, timeout=WAIT_MS, check_params_cb=lambda running: not running):
        view.cancel_button.click()
    assert "Scoring cancelled after 1 pairs" in view.status.text() and view.score_button.isEnabled()
    assert alignment.table is None and view.table.rowCount() == 0


def test_alignment_window_closed_mid_run(qtbot, open_window, toy_fr_bundle, slow_alignment):
    window = open_window(toy_fr_bundle[0])
    window.controllers.alignment.ready.connect(lambda table: pytest.fail("a report after the window closed"))
    assert window.controllers.alignment.compute(5)
    closed_mid_run(qtbot, window, alignment_module.CHANNEL, slow_alignment)
    QApplication.processEvents()  # whatever the job queued is dropped


def test_alignment_internal_error(qtbot, open_window, toy_fr_bundle, monkeypatch, caplog):
    monkeypatch.setattr(alignment_module, "aer_pairs", lambda corpus, n, seed: 1 / 0)
    window = open_window(toy_fr_bundle[0])
    view = window.explore_tab.readings.alignment_view
    view.score_button.click()
    qtbot.waitUntil(lambda: "internal error" in view.status.text(), timeout=WAIT_MS)
    assert view.status.text() == "The alignment table could not be computed: internal error: division by zero"
    assert view.score_button.isEnabled() and "internal error" in window.statusBar().currentMessage()
    [record] = internal_errors(caplog)
    assert record.exc_info[0] is ZeroDivisionError and "alignment-table" in record.getMessage()


# --- head importance -----------------------------------------------------------------------------------
@pytest.fixture
def slow_importance(monkeypatch):
    blocker = Blocker()

    def head_importance(bundle, pairs, progress=None, stop=None):
        progress(1, len(pairs))
        if blocker.wait(stop):
            raise Interrupted
        raise AssertionError("released: not used here")

    monkeypatch.setattr(importance_module, "head_importance", head_importance)
    monkeypatch.setattr(importance_module, "measured_pairs", lambda corpus, n, seed: [None] * n)
    return blocker


def test_importance_cancelled_mid_run(qtbot, open_window, toy_fr_bundle, slow_importance):
    window = open_window(toy_fr_bundle[0])
    importance, view = window.controllers.importance, window.explore_tab.readings.importance_view
    view.compute_button.click()
    qtbot.waitUntil(lambda: view.progress_bar.format() == "importance 1/10" or view.progress_bar.value() == 1, timeout=WAIT_MS)
    thread = window.runner.current(importance_module.CHANNEL).thread
    view.cancel_button.click()
    assert not importance.running and view.note.text() == "Head importance cancelled." and not view.cancel_button.isEnabled()
    thread.join(WAIT_MS / 1000)
    QApplication.processEvents()  # the cancelled job's end is dropped
    assert not thread.is_alive() and view.note.text() == "Head importance cancelled." and importance.importance is None


def test_importance_window_closed_mid_run(qtbot, open_window, toy_fr_bundle, slow_importance):
    window = open_window(toy_fr_bundle[0])
    importance = window.controllers.importance
    importance.importance_ready.connect(lambda value: pytest.fail("a report after the window closed"))
    assert importance.compute(10)
    closed_mid_run(qtbot, window, importance_module.CHANNEL, slow_importance)
    QApplication.processEvents()


def test_importance_internal_error(qtbot, open_window, toy_fr_bundle, monkeypatch, caplog):
    monkeypatch.setattr(importance_module, "measured_pairs", lambda corpus, n, seed: {}["no such corpus"])
    window = open_window(toy_fr_bundle[0])
    view = window.explore_tab.readings.importance_view
    view.compute_button.click()
    qtbot.waitUntil(lambda: not view.cancel_button.isEnabled(), timeout=WAIT_MS)
    assert view.note.text() == "Head importance could not be measured: internal error: 'no such corpus'"
    [record] = internal_errors(caplog)
    assert record.exc_info[0] is KeyError and "head-importance" in record.getMessage()


# --- the measures ----------------------------------------------------------------------------------------
@pytest.fixture
def slow_measure(monkeypatch):
    """value-zeroing (computed in a job) waits; the other measures are the core's."""
    blocker = Blocker()
    real = measures_module.compute_measure

    def compute_measure(model, source_ids, chosen, name, steps=None, progress=None):
        if name == "value-zeroing" and blocker.wait_for_job():
            raise Cancelled  # as a part boundary would
        return real(model, source_ids, chosen, name, steps=steps, progress=progress)

    monkeypatch.setattr(measures_module, "compute_measure", compute_measure)
    return blocker


def test_a_measure_superseded_mid_run_is_dropped(qtbot, open_window, toy_fr_bundle, slow_measure):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    measures = window.controllers.measures
    tab.measure_box.set_measure("value-zeroing")
    slow_measure.job = window.runner.current(measures_module.MEASURE)
    qtbot.waitUntil(slow_measure.started.is_set, timeout=WAIT_MS)
    assert measures.running and "Value zeroing" in tab.readings.status.text()
    tab.measure_box.set_measure("norm")  # the user moves on: the job is cancelled, its result never shown
    assert tab.shown.measure == "norm"
    window.explore.step_back()  # a new request for value zeroing would start after the cancelled one ends
    qtbot.waitUntil(lambda: not measures.running, timeout=WAIT_MS)
    assert tab.readings.status.text() == "" and tab.shown.measure == "norm"


def test_a_measure_window_closed_mid_run(qtbot, open_window, toy_fr_bundle, slow_measure):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    changed = []
    window.controllers.measures.changed.connect(lambda: changed.append(True))
    tab.measure_box.set_measure("value-zeroing")
    changed.clear()
    slow_measure.job = window.runner.current(measures_module.MEASURE)
    closed_mid_run(qtbot, window, measures_module.MEASURE, slow_measure)
    QApplication.processEvents()
    assert changed == []


def test_a_measure_internal_error(qtbot, open_window, toy_fr_bundle, monkeypatch, caplog):
    def broken(model, source_ids, chosen, name, steps=None, progress=None):
        raise IndexError("row out of range")

    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    messages = []
    window.explore.message.connect(messages.append)
    monkeypatch.setattr(measures_module, "compute_measure", broken)
    tab.measure_box.set_measure("value-zeroing")
    qtbot.waitUntil(lambda: not window.controllers.measures.running, timeout=WAIT_MS)
    assert messages[-1] == "The measure could not be computed: internal error: row out of range"
    assert "being computed" in tab.hint.text()  # the weights are still shown
    [record] = internal_errors(caplog)
    assert record.exc_info[0] is IndexError and "measure" in record.getMessage()


# --- side by side ---------------------------------------------------------------------------------------
@pytest.fixture
def slow_open(monkeypatch, toy_fr_rnn_bundle):
    blocker = Blocker()

    def open_model(path):
        blocker.wait_for_job()
        return toy_fr_rnn_bundle[0]

    monkeypatch.setattr(compare_module, "open_model", open_model)
    return blocker


def test_side_by_side_open_cancelled_mid_run(qtbot, open_window, toy_fr_bundle, slow_open):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    compare = window.controllers.compare
    compare.open("rnn-bahdanau")
    slow_open.job = job = window.runner.current(compare_module.OPEN_CHANNEL)
    qtbot.waitUntil(slow_open.started.is_set, timeout=WAIT_MS)
    assert compare.running
    compare.cancel()
    job.thread.join(WAIT_MS / 1000)
    QApplication.processEvents()
    assert not job.thread.is_alive() and compare.bundle is None and not compare.running


def test_side_by_side_window_closed_mid_run(qtbot, open_window, toy_fr_bundle, slow_open):
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    compare = window.controllers.compare
    compare.changed.connect(lambda *args: pytest.fail("a report after the window closed"))
    compare.open("rnn-bahdanau")
    slow_open.job = window.runner.current(compare_module.OPEN_CHANNEL)
    closed_mid_run(qtbot, window, compare_module.OPEN_CHANNEL, slow_open, joined=False)
    QApplication.processEvents()
    assert compare.bundle is None


def test_side_by_side_internal_error(qtbot, open_window, toy_fr_bundle, toy_fr_rnn_bundle, monkeypatch, caplog):
    monkeypatch.setattr(compare_module, "best_alignment_head", lambda bundle, count, seed: None.layer)
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the small cat sees the dog")
    messages = []
    window.explore.message.connect(messages.append)
    assert tab.compare.set_model(toy_fr_rnn_bundle[0])
    qtbot.waitUntil(lambda: not window.controllers.compare.running, timeout=WAIT_MS)
    assert any("could not be measured: internal error: 'NoneType' object has no attribute 'layer'" in m for m in messages)
    assert len(tab.compare_view.panels) == 2  # the last layer's mean is shown instead
    assert {record.exc_info[0] for record in internal_errors(caplog)} == {AttributeError}


# --- training -------------------------------------------------------------------------------------------
@pytest.fixture
def slow_training(monkeypatch):
    blocker = Blocker()

    def train(request, callbacks, control):
        callbacks.on_stage("Training the tokenizer…")
        blocker.wait(lambda: control.cancelled)
        return TrainingOutcome(StopReason.CANCELLED, None)

    monkeypatch.setattr(training_module, "train", train)
    return blocker


def test_training_cancelled_mid_run(qtbot, window, slow_training):
    tab = window.training_tab
    tab.start_button.click()
    qtbot.waitUntil(
        lambda: slow_training.started.is_set() and tab.progress_label.text() == "Training the tokenizer…", timeout=WAIT_MS
    )
    with qtbot.waitSignal(window.controllers.training.finished, timeout=WAIT_MS) as finished:
        tab.cancel_button.click()
    assert finished.args[0].bundle is None and "nothing was kept" in tab.progress_label.text()
    qtbot.waitUntil(tab.start_button.isEnabled, timeout=WAIT_MS)


def test_training_window_closed_mid_run(qtbot, window, slow_training):
    tab = window.training_tab
    window.controllers.training.finished.connect(lambda outcome: pytest.fail("a report after the window closed"))
    tab.start_button.click()
    closed_mid_run(qtbot, window, training_module.TRAINING, slow_training)
    QApplication.processEvents()


def test_training_internal_error(qtbot, window, monkeypatch, caplog):
    def train(request, callbacks, control):
        raise RuntimeError("CUDA error: an illegal memory access\nmore detail")

    monkeypatch.setattr(training_module, "train", train)
    tab = window.training_tab
    tab.start_button.click()
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=WAIT_MS)
    assert window.error_box.text() == "internal error: CUDA error: an illegal memory access"
    assert tab.progress_label.text() == "Training failed: internal error: CUDA error: an illegal memory access"
    assert tab.start_button.isEnabled()
    [record] = internal_errors(caplog)
    assert record.exc_info[0] is RuntimeError and "training" in record.getMessage()
