"""The circuits' speed targets (issue 43), the core's and the window's, in one run.

Every edge of the shipped default model scored on a 12-piece pair (target 30 s on 2 cores), the faithfulness curve
and its circuit (target 2 minutes), and the window's longest event-loop gap while the Circuits sub-tab finds the same
circuit in the background, its result drawn (target 100 ms).

Prints each measure, its target and the ratio (below 1 meets it), and the circuit found. The core's times are the
median of ``--repeats`` runs; the window's gap is the longest of ``--rounds`` rounds.

    QT_QPA_PLATFORM=offscreen python benchmarks/circuits.py [--repeats 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from common import print_table  # noqa: E402
from patching_window import CLEAN, CORRUPTED, TARGET_MS, GapRecorder, default_window, wait  # noqa: E402

from model.circuits.scores import edge_scores, exact_scores, prepare_circuit  # noqa: E402
from model.circuits.search import find_circuit  # noqa: E402
from model.interventions.patching_setup import prepare_bundle_patching  # noqa: E402
from model.io.models import open_model  # noqa: E402

SCORES_TARGET_S, CURVE_TARGET_S = 30.0, 120.0


def timed(work) -> tuple[float, object]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def core_rows(repeats: int) -> tuple[list[list[str]], str]:
    bundle = open_model("default")
    setup = prepare_bundle_patching(bundle, CLEAN, CORRUPTED)
    pieces = setup.clean_source.shape[1]
    times: dict[str, list[float]] = {}
    found = ""
    for _ in range(repeats):
        seconds, circuit = timed(lambda: prepare_circuit(setup, split_positions=True))  # the app's graph
        times.setdefault("reference runs", []).append(seconds)
        for method, steps in (("EAP", 1), ("EAP-IG", 5)):
            seconds, scores = timed(lambda c=circuit, m=method, k=steps: edge_scores(c, m, k))
            times.setdefault(f"{method} scores, every edge", []).append(seconds)
        seconds, _exact = timed(lambda c=circuit: exact_scores(c))
        times.setdefault("every edge patched exactly (the check)", []).append(seconds)
        seconds, (best, curve) = timed(lambda c=circuit, s=scores: find_circuit(c, s))
        times.setdefault("faithfulness curve and circuit", []).append(seconds)
        edges = len(circuit.graph.edges)
        found = f"{best.size} of {edges} edges keep {best.faithfulness:.1%} ({len(curve)} sizes evaluated); {pieces} pieces"
    targets = {"EAP-IG scores, every edge": SCORES_TARGET_S, "EAP scores, every edge": SCORES_TARGET_S}
    targets["faithfulness curve and circuit"] = CURVE_TARGET_S
    rows = []
    for name, values in times.items():
        median = statistics.median(values)
        target = targets.get(name)
        rows.append([name, f"{median:.2f}", f"{target:.0f}" if target else "—", f"{median / target:.3f}" if target else "—"])
    return rows, found


def window_rows(rounds: int) -> list[list[str]]:
    app, window = default_window()
    tab, circuits = window.explore_tab, window.controllers.circuits
    view = tab.interventions.view
    tab.views.setCurrentWidget(view)
    wait(app, lambda: not window.controllers.interventions.running)
    view.patching.clean.setText(CLEAN)
    view.patching.corrupted.setText(CORRUPTED)
    view.patching.corrupted.editingFinished.emit()  # the pair typed: the Patching sub-tab shows it
    view.show_tool("circuits")
    wait(app, lambda: not circuits.running and circuits.result is not None)  # found on its own, once shown
    recorder, rows = GapRecorder(), []
    for index in range(rounds):
        recorder.start()
        before = circuits.result
        view.circuits.find_button.click()
        seconds = wait(app, lambda old=before: not circuits.running and circuits.result not in (None, old))
        wait(app, lambda: view.circuits.drawn)  # drawn in turns of the event loop
        wait(app, lambda: False, 0.3)  # and painted: its slices count too
        gaps = recorder.stop()
        longest = max(gaps) if gaps else 0.0
        rows.append([f"window, round {index + 1}: the circuit found in a job", f"{seconds:.2f}", f"{longest:.1f} ms",
                     f"{longest / TARGET_MS:.2f}"])  # fmt: skip
    window.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows, found = core_rows(args.repeats)
    print(f"default model, pair {CLEAN!r} / {CORRUPTED!r}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print_table(["measure", "seconds (median)", "target s", "ratio"], rows)
    print(f"circuit: {found}")
    print_table(["window", "seconds", "longest event-loop gap", f"ratio to {TARGET_MS:.0f} ms"], window_rows(args.rounds))


if __name__ == "__main__":
    main()
