"""The long run of the window's invariants after random sequences of actions (issue 39): the state machine of
tests/explorer/window_actions.py, with as many sequences as asked (CI runs 30 of 20 actions,
tests/explorer/test_window_states.py). Each sequence opens one real window offscreen; after every action the views
must hold the trace for the selection the boxes show, labels sit on their cells, titles name what is drawn and
nothing holding data be clipped without a sign. A failure is shrunk by Hypothesis to its minimal sequence of
actions and printed.

``--survey`` records every problem met instead of stopping at the first (no shrinking): one line per kind of
problem, with the actions that first led to it, for a list of what is wrong before fixing.

    QT_QPA_PLATFORM=offscreen nice -n 19 python benchmarks/window_states.py --examples 1000 [--steps 20] [--random]
    QT_QPA_PLATFORM=offscreen python benchmarks/window_states.py --examples 1000 --minutes 60   # random, in rounds of 50

``--minutes``: a time budget; the sequences run in rounds of ``--round`` (other sequences each round) and no round
starts once the budget is spent, so a cut-off run still prints its summary. The progress lines give the process's
resident memory, and what is left of it once freed memory is given back (a full collection, then glibc's
``malloc_trim``): a window that outlived its sequence would show as steady growth of the second. The first grows by
itself (20 MB a sequence at first): glibc keeps the heap that closed windows and their models freed; given back, the
second grew 1 MB a sequence (8 sequences, 45 widgets alive after each: no window survives).
    QT_QPA_PLATFORM=offscreen python benchmarks/window_states.py --examples 30 --survey
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from common import ROOT  # noqa: E402,F401  (puts the project on sys.path)
from hypothesis import HealthCheck, Phase, seed, settings  # noqa: E402
from hypothesis.errors import FlakyStrategyDefinition  # noqa: E402
from hypothesis.stateful import get_state_machine_test, run_state_machine_as_test  # noqa: E402

from tests.explorer import window_actions  # noqa: E402


def resident_mb() -> float:
    """This process's resident memory (Linux), in MB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def live_mb() -> float:
    """Resident memory once garbage is collected and glibc has given its free heap back (``malloc_trim``), in MB; the
    plain resident figure where there is no glibc."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return resident_mb()


def run_round(
    machine: type, examples: int, steps: int, randomized: bool, shrink: bool = True, seed_value: int | None = None
) -> bool:
    """``examples`` sequences of up to ``steps`` actions; False when one broke an invariant (each distinct failure is
    printed with the actions that led to it). ``seed_value``: a seed Hypothesis printed, to run its sequences again."""
    chosen = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=not randomized,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
        phases=list(Phase) if shrink else [phase for phase in Phase if phase is not Phase.shrink],
    )
    try:
        if seed_value is None:
            run_state_machine_as_test(machine, settings=chosen)
        else:  # the same test Hypothesis builds, with its seed
            seed(seed_value)(get_state_machine_test(machine, settings=chosen))()
    except Exception as error:  # noqa: BLE001 - the minimal failing sequence is printed by Hypothesis
        failures = getattr(error, "exceptions", [error])
        if all(isinstance(failure, FlakyStrategyDefinition) for failure in failures):
            # Hypothesis replayed a sequence and the window offered other choices (a job had ended sooner or later):
            # its own bookkeeping, not an invariant broken; every sequence it ran was checked
            print(f"harness: {type(error).__name__} (a replay drew differently; no invariant broken): round ended", flush=True)
            HARNESS_FLAKES[0] += 1
            return True
        print(f"FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        for index, failure in enumerate(failures):  # each distinct failure, with its actions
            print(f"failure {index + 1}: {type(failure).__name__}: {failure}", file=sys.stderr)
        return False
    return True


HARNESS_FLAKES = [0]  # rounds Hypothesis ended because a replay drew differently (see run_round)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=int(os.environ.get("WINDOW_STATES_EXAMPLES", "1000")))
    parser.add_argument("--steps", type=int, default=int(os.environ.get("WINDOW_STATES_STEPS", "20")))
    parser.add_argument("--random", action="store_true", help="other sequences at each run (default: derandomized, as CI)")
    parser.add_argument("--no-curves", action="store_true", help="never compute the curves over training (as CI)")
    parser.add_argument("--minutes", type=float, default=None, help="a time budget: rounds of random sequences")
    parser.add_argument("--round", type=int, default=50, help="sequences per round with --minutes")
    parser.add_argument("--no-shrink", action="store_true", help="a failing sequence as met")
    parser.add_argument("--survey", action="store_true", help="list every problem met instead of failing at the first")
    parser.add_argument("--seed", type=int, help="the seed Hypothesis printed for a failing run: its sequences again")
    options = parser.parse_args(argv)
    if options.survey:
        window_actions.SURVEY = {}
    counted = {"sequences": 0}
    started = time.perf_counter()

    class Counted(window_actions.WindowStates):
        compute_curves = not options.no_curves

        def __init__(self) -> None:
            counted["sequences"] += 1
            if counted["sequences"] % 50 == 0:  # progress, for a long run
                elapsed = time.perf_counter() - started
                resident = resident_mb()
                print(
                    f"{counted['sequences']} sequences, {elapsed:.0f} s, {resident:.0f} MB resident, "
                    f"{live_mb():.0f} MB once freed memory is given back",
                    flush=True,
                )
            super().__init__()

    budget_s = None if options.minutes is None else options.minutes * 60
    failed = False
    while not failed and counted["sequences"] < options.examples:
        if budget_s is not None and time.perf_counter() - started > budget_s:
            print(f"the time budget ({options.minutes:g} min) is spent: no more rounds", flush=True)
            break
        chunk = options.examples if budget_s is None else min(options.round, options.examples - counted["sequences"])
        randomized = options.random or budget_s is not None
        failed = not run_round(Counted, chunk, options.steps, randomized, not options.no_shrink, options.seed)
        if budget_s is None:
            break
    elapsed = time.perf_counter() - started
    print(
        f"{counted['sequences']} sequences of up to {options.steps} actions in {elapsed:.0f} s: {'FAILED' if failed else 'passed'}"
        f" ({HARNESS_FLAKES[0]} round(s) ended early by a replay that drew differently)"
    )
    print("seconds per kind of action (its settling included):", {k: round(v, 1) for k, v in sorted(window_actions.TIMES.items())})
    if window_actions.SURVEY is not None:
        print(f"{len(window_actions.SURVEY)} kinds of problem:")
        for _key, (problem, actions) in sorted(window_actions.SURVEY.items()):
            print(f"- {problem}\n    after: {' → '.join(actions)}")
    return 1 if failed or (window_actions.SURVEY or None) else 0


if __name__ == "__main__":
    sys.exit(main())
