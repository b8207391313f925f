"""The explanation report cards of the shipped models, timed (issue 32): each on N held-out sentences of its own corpus
with every registered method, the cascade on ``--sanity-pairs`` of them and a model trained on shuffled targets (the
data randomisation: trained first by the app's trainer, timed apart, and kept in ``--out`` for the next run).

Target: at most 10 minutes a card on 2 cores. Prints each card, its parts' seconds, the wall time against the target
and the load the machine carried meanwhile (the load average, and how many cores other programs left free, read from
/proc/stat as the command line's core follower reads it); writes each card's CSV and PDF (the first model's also as a
PNG) to ``--out``. ``--window`` also grades the first model through the window's controller and runner (offscreen),
while a 5 ms timer of the window's thread records the gaps between its ticks: the longest stall and the 99th percentile.

    python benchmarks/report_card.py [--models default,copy,reverse] [--n 100] [--sanity-pairs 10]
        [--shuffled-steps 300] [--out benchmarks/report_card_results] [--window]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import common  # noqa: F401 - puts the project first on the path

from model.figures.report_card import save_card
from model.grading.cases import grading_pairs
from model.grading.grader import CardSettings, grade
from model.grading.sanity import shuffled_targets_model
from model.io import checkpoint
from model.io.models import open_model
from model.runtime import follow_cores_in_this_thread, free_cores, read_cpu_sample

TARGET_S = 600.0


def shuffled_model(bundle, name: str, steps: int, folder: Path):
    """The model trained on shuffled targets, from ``folder`` when an earlier run trained it: (bundle, seconds)."""
    path = folder / f"{name}-shuffled-{steps}.safetensors"
    if path.exists():
        return checkpoint.load(path), 0.0
    started = time.perf_counter()
    shuffled = shuffled_targets_model(bundle, steps)
    checkpoint.save(shuffled, path)
    return shuffled, time.perf_counter() - started


def one_card(name: str, args, folder: Path) -> None:
    bundle = open_model(name)
    shuffled, training_s = shuffled_model(bundle, name, args.shuffled_steps, folder)
    corpus, pairs = grading_pairs(bundle, None, args.n, 0)
    note = f"{args.shuffled_steps} steps on shuffled {corpus.name} targets"
    settings = CardSettings(sanity_pairs=args.sanity_pairs, shuffled=shuffled, shuffled_note=note)
    load_before, sample_before = os.getloadavg()[0], read_cpu_sample()
    started = time.perf_counter()
    card = grade(bundle, pairs, settings, corpus=corpus, model_name=name)
    wall = time.perf_counter() - started
    sample_after = read_cpu_sample()
    free = free_cores(sample_before, sample_after) if sample_before and sample_after else float("nan")
    for suffix in (".csv", ".pdf") + ((".png",) if name == args.models.split(",")[0] else ()):
        save_card(card, folder / f"report-card-{name}{suffix}", dpi=110 if suffix == ".png" else 300)
    print(f"\n=== {name}: {card.n_pairs} pairs, {card.n_steps} predictions ===")
    print("\n".join(card.lines()))
    for row in card.rows:
        notes = card.notes_of(row)
        if notes:
            print(f"  {row.label}: {notes}")
    parts = ", ".join(f"{part} {seconds:.1f}" for part, seconds in sorted(card.timings.items(), key=lambda item: -item[1]))
    print(f"seconds per part: {parts}")
    print(
        f"{name}: {wall:.0f} s for the card ({wall / TARGET_S:.2f} of the {TARGET_S / 60:.0f}-minute target); the shuffled-target "
        f"model {training_s:.0f} s ({'read from ' + str(folder) if not training_s else 'trained now'}); load average "
        f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after; cores left free by other programs {free:.2f} of "
        f"{sample_after.cores if sample_after else '?'}"
    )


def window_stall(name: str, n: int) -> None:
    """The card graded through the window's controller while a 5 ms timer records the event loop's gaps."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np
    from PySide6.QtCore import QElapsedTimer, QTimer

    from explorer.app import make_application
    from explorer.controllers.window import WindowControllers
    from explorer.qt_runner import gui_runner

    app = make_application()
    controllers = WindowControllers.build(gui_runner())
    controllers.explore.set_model(open_model(name))
    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.elapsed()]

    def tick() -> None:
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(5)
    started = time.perf_counter()
    controllers.report_card.compute(n, 5)
    while controllers.report_card.running:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    controllers.close()
    found = np.array(gaps[1:])
    print(
        f"\nwindow ({name}, {n} sentences, {time.perf_counter() - started:.0f} s): longest gap of the event loop "
        f"{found.max():.0f} ms, 99th percentile {np.percentile(found, 99):.0f} ms over {len(found)} ticks"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="default,copy,reverse")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--sanity-pairs", type=int, default=10)
    parser.add_argument("--shuffled-steps", type=int, default=300)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "report_card_results"))
    parser.add_argument("--window", action="store_true", help="also the window's responsiveness while it grades")
    args = parser.parse_args()
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    follow_cores_in_this_thread()  # as the command line does: the free cores, one when the machine is busy
    for name in args.models.split(","):
        one_card(name, args, folder)
    if args.window:
        window_stall(args.models.split(",")[0], 20)


if __name__ == "__main__":
    main()
