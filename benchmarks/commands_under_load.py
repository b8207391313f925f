"""The command line's long loops on a busy machine: ``heads`` and ``evaluate`` alone and beside busy processes,
with the command following the free cores (model/runtime.py ``follow_free_cores``) and without it.

A busy process is ``python3 -c "while True: pass"``. Without following, torch's two OpenMP threads wait for each
other at every operation while the busy programs hold the cores, and ``heads --n 30`` took about 150 times as long
as alone. Target (2 cores): beside 2 busy processes, following, at most 4 times as long as alone (the command's fair
share of the cores is a third, and one thread that keeps running does better than two that wait).

    python benchmarks/commands_under_load.py [--busy 2] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "heads": ["heads", "--model", "default", "--corpus", "toy-fr", "--n", "30", "--importance", "OUT/importance.csv"],
    "evaluate": ["evaluate", "--model", "default", "--corpus", "toy-fr", "--n", "200", "--aer-pairs", "0"],
}
# Runs a command as the CLI does; with "off" the command's thread does not follow the free cores.
PROBE = (
    "import sys; from model.cli import commands\n"
    "if sys.argv[1] == 'off': commands.follow_cores_in_this_thread = lambda: None\n"
    "sys.exit(commands.main(sys.argv[2:]))"
)


def seconds(command: list[str], following: bool, busy: int, limit: float) -> float:
    """Wall-clock seconds of one run (``limit`` when it had not ended by then)."""
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(0.5 if busy else 0.0)
        started = time.perf_counter()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        folder = tempfile.mkdtemp()
        try:
            done = subprocess.run(
                [sys.executable, "-c", PROBE, "on" if following else "off", *(part.replace("OUT", folder) for part in command)],
                env=env,
                capture_output=True,
                text=True,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:
            return limit
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        return time.perf_counter() - started
    finally:
        for process in load:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the command")
    parser.add_argument("--runs", type=int, default=1, help="runs of each condition (the worst counts)")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds after which a run is stopped")
    parser.add_argument("--only", choices=sorted(COMMANDS), help="one command only")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; beside {args.busy} busy processes; worst of {args.runs} run(s)")
    failed = False
    for name, command in COMMANDS.items():
        if args.only and name != args.only:
            continue
        alone = min(seconds(command, True, 0, args.limit) for _ in range(args.runs))
        following = max(seconds(command, True, args.busy, args.limit) for _ in range(args.runs))
        not_following = max(seconds(command, False, args.busy, args.limit) for _ in range(args.runs))
        ok = following <= 4 * alone
        failed |= not ok
        capped = " (stopped at the limit)" if not_following >= args.limit else ""
        print(
            f"{name}: alone {alone:.1f} s; beside busy: following the free cores {following:.1f} s "
            f"({following / alone:.1f}x alone, target <= 4x: {'ok' if ok else 'MISSED'}), "
            f"not following {not_following:.1f} s{capped} ({not_following / alone:.1f}x)",
            flush=True,
        )
    print("all targets met" if not failed else "some targets missed")


if __name__ == "__main__":
    main()
