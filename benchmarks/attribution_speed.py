"""How long each contribution measure takes on the default model, and how soon the window shows it.

1. The core: ``compute_measure`` of every measure for a sentence of 40 source pieces decoded for 40 steps (the
   best of a few runs; integrated gradients once), next to the raw attention reading it replaces.
2. The window: choosing the measure in the Reading box until the focus view shows it and the window is painted
   (``window.grab()``), the measure's cache cleared first. Targets: within 200 ms for the norm-based measure,
   within 2 s for the gradient methods (computed in a worker; for the saliencies the current step's row comes
   first). Also checks that the window's thread is never blocked meanwhile: the longest gap between two event-loop
   turns while the worker computes.

Prints each time with its target and their ratio (below 1 meets it).

    QT_QPA_PLATFORM=offscreen python benchmarks/attribution_speed.py [--tokens 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import common  # noqa: E402,F401 - puts the project first on the path
import torch  # noqa: E402

from model.attribution.measures import MEASURES, NAMES, compute_measure  # noqa: E402
from model.data.corpora import toy_fr  # noqa: E402
from model.decoding.stepper import DecodingOptions, Stepper  # noqa: E402
from model.io.models import open_model  # noqa: E402

WINDOW_TARGET_MS = {"norm": 200.0}  # every other measure: 2 s (GRADIENT_TARGET_MS)
GRADIENT_TARGET_MS = 2000.0


def long_sentence(bundle, pieces: int) -> str:
    """Fresh toy-fr sentences joined with "and" until the source has at least ``pieces`` pieces, then cut to them."""
    words: list[str] = []
    for pair in toy_fr.generate(50, 2024):
        words += (["and"] if words else []) + pair.source.split()
        if len(bundle.source_tokenizer.encode(" ".join(words))) >= pieces:
            break
    while len(bundle.source_tokenizer.encode(" ".join(words))) > pieces:
        words.pop()
    return " ".join(words)


def core_times(bundle, stepper, repeats: int) -> dict[str, float]:
    trace = stepper.trace()
    chosen = [int(i) for i in trace.chosen_ids]
    times = {}
    for name in NAMES:
        runs = 1 if name == "ig" else repeats
        best = float("inf")
        for _ in range(runs + 1):  # the first is a warm-up
            started = time.perf_counter()
            compute_measure(bundle.model, list(stepper.source_ids), chosen, name)
            best = min(best, time.perf_counter() - started)
        times[name] = best * 1000
    return times


def window_times(bundle, text: str, tokens: int) -> dict[str, tuple[float, float]]:
    from PySide6.QtCore import QSettings

    from explorer.app import make_application
    from explorer.main_window import MainWindow

    app = make_application()
    window = MainWindow(QSettings(os.devnull, QSettings.IniFormat))
    window.resize(1600, 1000)
    window.show()
    window.explore.set_model(bundle)
    tab = window.explore_tab
    options = tab.controls.options()
    options.max_steps, options.stop_at_eos = tokens, False
    window.explore.translate(text, options, run=True)
    app.processEvents()
    window.grab()
    results = {}
    for name in NAMES[1:]:
        tab.measure_box.set_measure("attention")
        app.processEvents()
        tab.measures._results.clear()  # cold: computed again, as after a new sentence
        tab.measures._rows.clear()
        kind = MEASURES[name].kinds[-1]  # cross-attention where the measure has it
        tab.kind.setCurrentIndex(tab.kind.findData(kind))
        app.processEvents()
        window.grab()
        started = time.perf_counter()
        tab.measure_box.set_measure(name)  # the fast measures are computed and drawn within this call
        last_turn = time.perf_counter()
        longest_gap = last_turn - started
        while tab.shown is None or tab.shown.measure != name:
            app.processEvents()
            now = time.perf_counter()
            longest_gap, last_turn = max(longest_gap, now - last_turn), now
            time.sleep(0.001)
        window.grab()
        results[name] = ((time.perf_counter() - started) * 1000, longest_gap * 1000)
    window.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bundle = open_model("default")
    text = long_sentence(bundle, args.tokens - 1)  # and </s>
    stepper = Stepper(bundle, text, DecodingOptions(max_steps=args.tokens, stop_at_eos=False))
    stepper.run()
    print(
        f"default model, {len(stepper.source_ids)} source pieces, {stepper.trace().n_steps} steps, "
        f"{torch.get_num_threads()} threads"
    )
    core = core_times(bundle, stepper, args.repeats)
    window = window_times(bundle, text, args.tokens)
    print(
        f"{'measure':<24} {'core ms':>9} {'x attention':>11} {'window ms':>10} {'target':>7} {'ratio':>6} {'longest stall ms':>17}"
    )
    for name in NAMES:
        shown, gap = window.get(name, (float("nan"), float("nan")))
        target = WINDOW_TARGET_MS.get(name, GRADIENT_TARGET_MS) if name != "attention" else float("nan")
        print(
            f"{MEASURES[name].label:<24} {core[name]:>9.1f} {core[name] / core['attention']:>11.1f} {shown:>10.1f} "
            f"{target:>7.0f} {shown / target:>6.2f} {gap:>17.1f}"
        )
    print("window: from choosing the measure to the focus view showing it, painted; ratio = window ms / target (< 1 meets it)")


if __name__ == "__main__":
    main()
