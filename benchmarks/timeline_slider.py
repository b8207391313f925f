"""Moving the timeline slider between snapshots on the default model: the time from the slider's move to every visible
view redrawn and painted (issue 29: median within 150 ms). Each move loads the snapshot's model (unless it is one of
the last few kept), decodes the sentence with it in the runner's job, shows it in every view and paints the window
(``window.grab()``). Printed per views tab shown (model grid, lines, heads table; the focus heatmap, tokens and
candidates are always shown), and with the focus and grid as the difference of two snapshots: median and p90 over
``--moves`` moves to snapshots drawn at random (seeded), and the median CPU time of the process.

Until the recorder's timeline files land, no shipped model has a timeline: the snapshots are the shipped default
model with its weights perturbed (Gaussian noise, largest for the earliest snapshot), kept in half precision and
restored to float32 on each load as a timeline file is. The output says so.

    QT_QPA_PLATFORM=offscreen python benchmarks/timeline_slider.py [--moves 20] [--snapshots 12]
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import statistics
import time
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from model.io.models import open_model  # noqa: E402
from model.io.snapshots import Snapshot  # noqa: E402
from model.timeline.source import timeline_for  # noqa: E402

SENTENCE = "the black cat sees the small dog"


class PerturbedTimeline:
    """A fake timeline of ``bundle``: snapshot i is its weights plus noise (std ``scale`` x (1 - i / last) x each
    tensor's std), in half precision; the last is the model itself."""

    def __init__(self, bundle, count: int, scale: float = 0.5):
        self.bundle = bundle
        steps = sorted({round(9000 ** (k / (count - 1))) for k in range(count)})
        self.records = [
            Snapshot(i, step, step * 0.05, 8.0 / (1 + i), {"bleu": 3.0 * i} if i % 3 == 2 else None) for i, step in enumerate(steps)
        ]
        generator = torch.Generator().manual_seed(0)
        state = bundle.model.state_dict()
        self.states = []
        for index in range(len(steps)):
            share = scale * (1 - index / (len(steps) - 1))
            self.states.append(
                {
                    name: (value + share * value.float().std().nan_to_num() * torch.randn(value.shape, generator=generator)).half()
                    if value.is_floating_point() and value.numel() > 1
                    else value.clone()
                    for name, value in state.items()
                }
            )

    @property
    def snapshots(self) -> list[Snapshot]:
        return self.records

    def bundle_at(self, index: int):
        model = copy.deepcopy(self.bundle.model)
        model.load_state_dict(
            {name: value.float() if value.is_floating_point() else value for name, value in self.states[index].items()}
        )
        return replace(self.bundle, model=model.eval())


def wait(app, predicate) -> None:
    while not predicate():
        app.processEvents()
        time.sleep(0.0005)


def measure(window, app, moves: list[int], view: str, difference: bool) -> tuple[list[float], list[float]]:
    """Milliseconds (wall, CPU) of each move: slider moved -> decoded -> every visible view drawn and painted."""
    tab, line = window.explore_tab, window.controllers.timeline
    tab.views.setCurrentWidget({"grid": tab.grid, "lines": tab.lines, "heads": tab.head_table}[view])
    line.compare_with(0 if difference else None)
    wait(app, lambda: not line.running)
    window.grab()
    walls, cpus = [], []
    for index in moves:
        started, cpu = time.perf_counter(), time.process_time()
        tab.over_training.bar.slider.setValue(index)
        wait(app, lambda: not line.running)
        app.processEvents()
        window.grab()  # paint everything visible now
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--snapshots", type=int, default=12)
    args = parser.parse_args()

    from PySide6.QtCore import QSettings

    from explorer.app import make_application
    from explorer.main_window import MainWindow

    app = make_application()
    bundle = open_model("default")
    recorded = timeline_for(bundle)  # the shipped model's own timeline, once it has one
    source = recorded if recorded is not None else PerturbedTimeline(bundle, args.snapshots)
    window = MainWindow(QSettings(os.devnull, QSettings.IniFormat))
    window.resize(1600, 1000)
    window.show()
    window.controllers.timeline.find = lambda opened: source if opened is bundle else None
    window.explore.set_model(bundle)
    window.explore_tab.controls.source.setText(SENTENCE)
    window.explore_tab.controls.source.returnPressed.emit()
    wait(app, lambda: window.controllers.timeline.source is not None)
    last = len(source.snapshots) - 1
    rng = random.Random(0)
    moves = [last]
    for _ in range(args.moves):  # each move to another snapshot than the one shown
        moves.append(rng.choice([index for index in range(last + 1) if index != moves[-1]]))
    moves = moves[1:] + [last]  # back at the model as opened for the next run
    what = (
        f"the shipped default model's recorded timeline, {len(source.snapshots)} snapshots"
        if recorded is not None
        else "NO REAL TIMELINE YET: the snapshots are the shipped default model with perturbed weights (half precision, "
        f"restored on each load), {len(source.snapshots)} of them"
    )
    print(
        f"{what}; {bundle.config.describe()}; sentence “{SENTENCE}”; "
        f"window 1600x1000, {torch.get_num_threads()} threads, {os.environ.get('QT_QPA_PLATFORM')} platform"
    )
    print("ms per slider move: load + decode in the runner + every visible view + paint")
    print(f"{'views tab':>10} {'difference':>10} {'median':>7} {'p90':>7} {'max':>7} {'median cpu':>10}")
    every = []
    for view in ("grid", "lines", "heads"):
        for difference in (False, True):
            walls, cpus = measure(window, app, moves, view, difference)
            every += walls
            p90 = float(np.percentile(walls, 90))
            print(
                f"{view:>10} {('yes' if difference else 'no'):>10} {statistics.median(walls):>7.1f} {p90:>7.1f} "
                f"{max(walls):>7.1f} {statistics.median(cpus):>10.1f}"
            )
    median, p90 = statistics.median(every), float(np.percentile(every, 90))
    print(f"all moves: median {median:.1f} ms, p90 {p90:.1f} ms (target: median <= 150 ms)")
    window.close()


if __name__ == "__main__":
    main()
