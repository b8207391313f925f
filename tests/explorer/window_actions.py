"""The main window driven through random sequences of a user's actions (issue 39): a Hypothesis rule-based state
machine, ``WindowStates``, that opens one real window (offscreen) per sequence and, after every action, checks the
invariants of tests/explorer/window_invariants.py.

The actions are the user's: a model opened (each shipped model, and one tiny Hugging Face folder built here), a
sentence typed and Enter pressed (1 to 200 pieces, words the models know and words they do not), the Attention
boxes (kind, layer, head or aggregate, words), the Reading box, the steps (back, forward, run, reset, the slider, a
target token clicked), a candidate clicked (what-if), beam search and a hypothesis clicked, sampling, a snapshot of
training (the timeline's slider), a phase change clicked in Over training, a view's tab, and the window's size
(1024×640 to 2560×1440). Background work (opening, measures, snapshots, curves) is waited for as a user would wait.

CI runs a bounded number of sequences (tests/explorer/test_window_states.py); the long run is
benchmarks/window_states.py. ``SURVEY`` (set by the benchmark's --survey) records every problem met instead of
failing at the first, with the actions that led to it.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from PySide6.QtCore import QSettings
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.explorer import window_invariants as checks
from tests.explorer.gui_helpers import shut

SHIPPED = ("default", "copy", "reverse", "rnn-bahdanau", "tagger")
HF_LAYOUT = "gpt2"  # the tiny Hugging Face folder: a decoder-only family (the shipped ones cover the others)
MODELS = (*SHIPPED, HF_LAYOUT)
SETTLE_TIMEOUT_S = 180.0  # background work that delivers nothing (no part, no progress) for this long has stalled...
SETTLE_LIMIT_S = 900.0  # ...and an action's work that goes on delivering must still end within this (integrated
# gradients of a 128-piece sentence refine each row for 10 s or more on a busy machine: minutes for every row)
KNOWN = (
    "the black cat sees the small dog and a red bird eats apples in our garden she sings he walks "
    "my mother loves the old horse they want blue shoes we cook"
).split()
UNKNOWN = ["who", "costs", "5", "euros", ",", ".", "Zürich", "xylophone", "!", "42", "The", "«quoted»", "漢字", "🙂"]
# The sentences of the defect known before this test (issue 39): a sentence with <unk> pieces, a long one, the example.
NAMED = (
    "The black cat, who costs 5 euros, sees the small dog.",
    " ".join(["the black cat sees the small dog and"] * 20),
    "the black cat sees the small dog",
)
SIZES = st.tuples(st.integers(1024, 2560), st.integers(640, 1440))

_folders: dict[str, str] = {}
TIMES: dict[str, float] = {}  # seconds spent per kind of action (and in the checks), for the benchmark
SURVEY: dict[str, tuple[str, list[str]]] | None = None  # problem (numbers dropped) -> (first text, actions)


def model_path(name: str) -> str:
    """A shipped model's name, or the tiny Hugging Face folder (built once per process, removed at exit)."""
    if name != HF_LAYOUT:
        return name
    if name not in _folders:
        from model.pretrained.tiny import build

        root = tempfile.mkdtemp(prefix="window-states-hf-")
        atexit.register(shutil.rmtree, root, True)
        _folders[name] = str(build(HF_LAYOUT, Path(root) / HF_LAYOUT))
    return _folders[name]


def sentences() -> st.SearchStrategy[str]:
    """1 to 200 pieces: the known defect's sentences, or words drawn from ones the models know and ones they do not."""
    words = st.lists(st.sampled_from(KNOWN + UNKNOWN), min_size=1, max_size=200).map(" ".join)
    repeated = st.builds(lambda n: " ".join(["the black cat sees the small dog and"] * n), st.integers(1, 25))
    return st.one_of(st.sampled_from(NAMED), words, repeated)


def open_window(folder: str, size: tuple[int, int]):
    """The main window as a user opens it (its own settings file in ``folder``), shown at ``size``; the closing
    questions answered."""
    from explorer.app import make_application
    from explorer.main_window import MainWindow

    make_application()
    window = MainWindow(QSettings(str(Path(folder) / "settings.ini"), QSettings.IniFormat), build=True)
    window.ask_to_stop_training = lambda: QMessageBox.Yes
    window.ask_to_keep_trained_model = lambda *_args: QMessageBox.Discard
    window.resize(*size)
    window.show()
    count_deliveries(window)
    return window


def count_deliveries(window) -> None:
    """Count what the window's jobs hand to its thread (parts, progress): ``settle`` tells a slow job from a stalled one."""
    runner, delivered = window.runner, [0]
    post = runner.post

    def counted(*args, **kwargs):
        delivered[0] += 1
        return post(*args, **kwargs)

    runner.post, window.delivered = counted, delivered


def busy(window) -> bool:
    """Whether a job of the window still runs (opening, a measure, a snapshot's decoding, curves...), or a circuit
    found is still being drawn (in turns of the event loop)."""
    drawing = not window.explore_tab.interventions.view.circuits.drawn
    return bool(window.runner._current) or window.is_opening() or drawing  # the runner's live jobs (tests may read them)


def settle(window, timeout_s: float = SETTLE_TIMEOUT_S, limit_s: float = SETTLE_LIMIT_S) -> None:
    """Wait as a user waits: every background job done and its result drawn, then what Qt has left to lay out and
    paint. A job that delivers nothing for ``timeout_s`` has stalled; one that goes on delivering may take ``limit_s``."""
    started = time.monotonic()
    delivered = list(getattr(window, "delivered", [0]))
    deadline = started + timeout_s
    QApplication.processEvents()
    while busy(window):
        now = time.monotonic()
        if list(getattr(window, "delivered", [0])) != delivered:  # a part or progress arrived: the work goes on
            delivered, deadline = list(window.delivered), min(now + timeout_s, started + limit_s)
        if now > deadline:
            running = ", ".join(window.runner._current) or "opening a model"  # the jobs' channels: which work was slow
            how = f"delivered nothing for {timeout_s:.0f} s" if deadline < started + limit_s else f"ran past {limit_s:.0f} s"
            raise AssertionError(f"the window's background work {how} (still running: {running})")
        QTest.qWait(5)
    QTest.qWait(1)
    window.grab()  # paint, as the screen would: what each axis painted last is what is seen
    QApplication.processEvents()


class _ErrorRecords(logging.Handler):
    """The error records the window's logger receives during one sequence (a job's internal error, its traceback's
    last line kept)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        last = str(record.exc_info[1]) if record.exc_info and record.exc_info[1] else ""
        self.found.append(f"{record.getMessage()}: {last}" if last else record.getMessage())


class WindowStates(RuleBasedStateMachine):
    """One window per sequence; the invariants after every action. ``compute_curves``: a phase change may be
    clicked after computing the curves over training (seconds each: the long run does, CI's bounded run leaves it to
    test_window_states.py's own sequence)."""

    compute_curves = True
    skipped_measures: tuple[str, ...] = ()  # readings never chosen (CI's bounded run: the slowest, seconds each)

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="window-states-")
        self.size = (1300, 850)
        self.window = open_window(self.folder, self.size)
        self.tab = self.window.explore_tab
        self.actions: list[str] = []
        self.since = time.perf_counter()  # the end of the last checks: what an action took is counted from there
        self.errors = _ErrorRecords()  # an internal error of a background job (the runner logs it): a broken invariant
        logging.getLogger("explorer").addHandler(self.errors)

    def teardown(self) -> None:
        logging.getLogger("explorer").removeHandler(self.errors)
        problems = shut(self.window)
        shutil.rmtree(self.folder, ignore_errors=True)
        assert not problems, "; ".join(problems)

    def did(self, what: str) -> None:
        self.actions.append(what)
        try:
            settle(self.window)
        except AssertionError as stalled:
            raise AssertionError(f"{stalled}\n    after: {' → '.join(self.actions)}") from None
        name = what.split(" ")[0].rstrip(":")
        TIMES[name] = TIMES.get(name, 0.0) + time.perf_counter() - self.since

    # --- models and sentences --------------------------------------------------------------------------------
    @initialize(model=st.sampled_from(MODELS))
    def first_model(self, model: str) -> None:
        self.open_model(model)

    @rule(model=st.sampled_from(MODELS))
    def open_model(self, model: str) -> None:
        self.window.open_model(model_path(model))
        self.did(f"open {model}")

    @rule(text=sentences())
    def type_sentence(self, text: str) -> None:
        source = self.tab.controls.source
        source.setText(text)
        source.returnPressed.emit()
        self.did(f"type {text!r} + Enter")

    # --- the Attention and Reading boxes ---------------------------------------------------------------------
    @rule(index=st.integers(0, 2))
    def choose_kind(self, index: int) -> None:
        box = self.tab.kind
        if box.count():
            box.setCurrentIndex(index % box.count())
            self.did(f"kind {box.currentText()!r}")

    @rule(layer=st.integers(1, 6))
    def choose_layer(self, layer: int) -> None:
        box = self.tab.layer_box
        box.setValue(min(layer, box.maximum()))
        self.did(f"layer {box.value()}")

    @rule(index=st.integers(0, 15))
    def choose_head(self, index: int) -> None:
        box = self.tab.head_box
        if box.count():
            box.setCurrentIndex(index % box.count())
            self.did(f"head {box.currentText()!r}")

    @rule()
    def toggle_words(self) -> None:
        self.tab.word_level.toggle()
        self.did(f"words {self.tab.word_level.isChecked()}")

    @rule(index=st.integers(0, 8))
    def choose_measure(self, index: int) -> None:
        box = self.tab.measure_box
        skipped = self.skipped_measures
        enabled = [i for i in range(box.count()) if box.model().item(i).isEnabled() and box.itemText(i) not in skipped]
        if enabled:
            box.setCurrentIndex(enabled[index % len(enabled)])
            self.did(f"reading {box.currentText()!r}")

    # --- decoding --------------------------------------------------------------------------------------------
    @rule(action=st.sampled_from(["back", "forward", "run", "reset", "slider", "token"]), where=st.integers(0, 300))
    def step(self, action: str, where: int) -> None:
        controls, trace = self.tab.controls, self.window.explore.trace
        if action == "slider":
            controls.slider.setValue(where % (controls.slider.maximum() + 1))
        elif action == "token":
            if trace is None or not trace.n_steps:
                return
            self.tab.target_tokens.token_clicked.emit(where % trace.n_steps)
        else:
            button = {"back": controls.back_button, "forward": controls.forward_button, "run": controls.run_button}
            button.get(action, controls.reset_button).click()
        self.did(f"step {action} {where}")

    @rule(row=st.integers(0, 9))
    def what_if(self, row: int) -> None:
        candidates = self.tab.candidates
        if candidates.isVisible() and len(candidates.token_ids):
            candidates.click_candidate(row % len(candidates.token_ids))
            self.did(f"what-if: candidate row {row % len(candidates.token_ids)}")

    @rule(strategy=st.sampled_from(["greedy", "beam", "sample"]), width=st.integers(1, 6), seed=st.integers(0, 3))
    def choose_strategy(self, strategy: str, width: int, seed: int) -> None:
        controls = self.tab.controls
        controls.strategy.setCurrentText(strategy)
        (controls.beam_width if strategy == "beam" else controls.seed).setValue(width if strategy == "beam" else seed)
        self.did(f"strategy {strategy} {width if strategy == 'beam' else seed}")

    @rule(rank=st.integers(0, 5))
    def beam_hypothesis(self, rank: int) -> None:
        tree = self.tab.beam_tree
        if tree.isVisible() and tree.ranks:
            tree.click_hypothesis(rank % len(tree.ranks))
            self.did(f"beam hypothesis {rank % len(tree.ranks)}")

    # --- training's snapshots ------------------------------------------------------------------------------
    @rule(index=st.integers(0, 20))
    def snapshot(self, index: int) -> None:
        bar = self.tab.over_training.bar
        if bar.isVisible():
            bar.slider.setValue(index % (bar.slider.maximum() + 1))
            self.did(f"snapshot {bar.slider.value()}")

    @rule(index=st.integers(0, 10))
    def phase_change(self, index: int) -> None:
        view = self.tab.over_training.curves_view
        if self.tab.views.indexOf(view) < 0:
            return
        self.tab.views.setCurrentWidget(view)
        if view.curves is None:
            if not self.compute_curves:
                return
            view.compute_button.click()
            self.did("Over training: Compute curves")
        if view.changes.count():
            item = view.changes.item(index % view.changes.count())
            view.changes.itemClicked.emit(item)
            self.did(f"Over training: click phase change {index % view.changes.count()}")

    # --- the window ------------------------------------------------------------------------------------------
    @rule(name=st.sampled_from(["Model grid", "Lines", "Heads", "Side by side", "Over training", "Interventions"]))
    def choose_view(self, name: str) -> None:
        views = self.tab.views
        titles = [views.tabText(i) for i in range(views.count())]
        if name in titles:
            views.setCurrentIndex(titles.index(name))
            self.did(f"view {name!r}")

    @rule(index=st.integers(0, 4))
    def choose_tool(self, index: int) -> None:
        """A tool of the Interventions view (its sub-tab; a greyed one is not chosen), shown or not."""
        tools = self.tab.interventions.view.tools
        enabled = [i for i in range(tools.count()) if tools.isTabEnabled(i)]
        if enabled:
            tools.setCurrentIndex(enabled[index % len(enabled)])
            self.did(f"tool {tools.tabText(tools.currentIndex())!r}")

    @rule(feature=st.sampled_from(["number", "gender", "noun", "typed"]), text=sentences())
    def patching_pair(self, feature: str, text: str) -> None:
        """The pair the Patching and Circuits sub-tabs read: a minimal pair of a feature, or a corrupted sentence typed."""
        patching = self.tab.interventions.view.patching
        if feature == "typed":
            patching.feature.setCurrentText("typed")
            patching.corrupted.setText(text)
            patching.corrupted.editingFinished.emit()
            self.did(f"corrupted sentence {text!r}")
        else:
            patching.feature.setCurrentText(feature)
            self.did(f"minimal pair {feature!r}")

    @rule(size=SIZES)
    def resize(self, size: tuple[int, int]) -> None:
        self.size = size
        self.window.resize(*size)
        self.did(f"window {size[0]}×{size[1]}")

    # --- the invariants (each its own line: Hypothesis reports each kind of failure apart) --------------------
    def check(self, what: str, found: list[str]) -> list[str]:
        if SURVEY is not None:
            for problem in found:
                key = what + ": " + "".join(c if not c.isdigit() else "#" for c in problem)
                if key not in SURVEY:  # printed as met: a long run cut off still shows what it found
                    SURVEY[key] = (problem, list(self.actions))
                    print(f"problem met: {what}: {problem}\n    after: {' → '.join(self.actions)}", file=sys.stderr, flush=True)
            return []
        return found

    @invariant()
    def invariants_hold(self) -> None:
        """Each kind of invariant asserted on a line of its own: Hypothesis reports each kind of failure apart."""
        started = time.perf_counter()
        matrix = self.check("matrix", checks.matrix_problems(self.window))
        labels = self.check("labels", checks.label_problems(self.window))
        titles = self.check("titles", checks.title_problems(self.window))
        clipped = self.check("clipping", checks.clipping_problems(self.window, self.size))
        errors = self.check("internal errors", list(self.errors.found))
        TIMES["(the checks)"] = TIMES.get("(the checks)", 0.0) + time.perf_counter() - started
        self.since = time.perf_counter()
        after = f"\n    after: {' → '.join(self.actions)}"  # the sequence, even when shrinking is cut short
        assert not matrix, "\n".join(matrix) + after
        assert not labels, "\n".join(labels) + after
        assert not titles, "\n".join(titles) + after
        assert not clipped, "\n".join(clipped) + after
        assert not errors, "\n".join(errors) + after


__all__ = ["WindowStates", "settle"]
