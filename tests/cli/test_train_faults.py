"""Fault injection: `train` killed (SIGKILL) or interrupted (SIGINT) at random moments — during the
imports, the corpus and tokenizer preparation, training, or the save — over an existing good model file.
The moments are stratified over the span of a run measured on the spot: each eighth of it is hit by both
signals (16 runs). Afterwards the file is always either the old model, byte for byte, or a complete new one
that loads with finite weights and consecutive training steps (all of them, or those before a Ctrl-C):
never an untrained or a half-written one, and its timeline is the one written with it (issue 39: the pair is written
both or neither, model/io/pair.py). A later save to the same folder leaves no temporary file behind."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from model.io import checkpoint
from model.io.timeline import find_timeline, load_timeline
from tests.cli.test_cli import ROOT

pytestmark = pytest.mark.long  # tests/conftest.py: run first

STRATA = 8  # parts of a run's span, each hit once per file: 16 runs over two files trained side by side
RUNS = 2 * STRATA
MAX_STEPS = 60
TINY = [
    "--layers",
    "1",
    "--d-model",
    "16",
    "--heads",
    "2",
    "--d-ff",
    "32",
    "--vocab-size",
    "40",
    "--corpus-size",
    "300",
    "--max-steps",
    str(MAX_STEPS),
    "--valid-decode",
    "5",
    "--quiet",
]


def run_and_interrupt(out: Path, seed: int, delay: float, how: int) -> tuple[int, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "model", "train", "--corpus", "copy", "--out", str(out), "--seed", str(seed), *TINY],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        process.wait(timeout=delay)  # a run that ends sooner (a complete new model) is not waited for any longer
    except subprocess.TimeoutExpired:
        process.send_signal(how)
    try:
        _out, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"train did not end within 120 s after signal {how} at {delay:.2f} s") from None
    return process.returncode, err


def check_file(out: Path, old: bytes, code: int, err: str) -> str:
    """'old' or 'new'; fails on anything else (a traceback, an untrained or unreadable model)."""
    assert "Traceback" not in err, err
    data = out.read_bytes()
    timeline = find_timeline(out)  # a save killed between its two renames is finished here (model/io/pair.py)
    if data == old:
        if timeline is not None:  # the old model's own (an earlier run's), never the killed run's
            load_timeline(out, checkpoint.load(out))
        return "old"
    bundle = checkpoint.load(out)  # complete: it loads (checksum, shapes, finite weights all checked)
    assert timeline is not None and len(load_timeline(out, bundle)) >= 2  # its own timeline, written with it
    steps = [row[0] for row in bundle.history.get("steps", [])]
    assert steps, f"an untrained model was written (exit {code}): {err}"
    assert steps == list(range(1, len(steps) + 1)) and len(steps) <= MAX_STEPS
    # Finished (every step), or stopped by Ctrl-C and saved with what it had learnt: nothing else writes a model.
    assert bundle.history["stopped"] == ("max steps" if len(steps) == MAX_STEPS else "cancelled"), bundle.history["stopped"]
    assert all(torch.isfinite(p).all() for p in bundle.model.parameters())
    return "new"


def complete_run(out: Path, seed: int) -> float:
    """Seconds that one train run, left alone, takes here and now; it writes a complete new model."""
    old = out.read_bytes()
    started = time.monotonic()
    code, err = run_and_interrupt(out, seed, 600.0, signal.SIGKILL)
    seconds = time.monotonic() - started
    assert code == 0 and check_file(out, old, code, err) == "new", err
    return seconds


def test_kills_and_interrupts_never_lose_the_model(tmp_path, copy_bundle):
    rng = random.Random(2026)
    outs = [tmp_path / "first" / "model.safetensors", tmp_path / "second" / "model.safetensors"]
    for out in outs:
        out.parent.mkdir()
        checkpoint.save(copy_bundle[0], out)
    # The signals land while the command runs, from its start (imports) to about its end (the save): the span is
    # that of a run left alone beside another one, measured here, since a run that ended first injects no fault.
    with ThreadPoolExecutor(max_workers=2) as pool:
        span = 1.1 * max(pool.map(complete_run, outs, [RUNS, RUNS + 1]))
    # Stratified: the span cut into STRATA equal parts, and each file gets one moment drawn in every part, with
    # SIGKILL on one file and SIGINT on the other (which one, drawn per part): every part of a run is hit by both.
    width = (span - 0.2) / STRATA
    plans = []
    for part in range(STRATA):
        kill = rng.randint(0, 1)
        for i, out in enumerate(outs):
            delay = 0.2 + (part + rng.random()) * width
            plans.append((out, len(plans), delay, signal.SIGKILL if i == kill else signal.SIGINT))
    rng.shuffle(plans)
    plans.sort(key=lambda plan: plan[0] == outs[1])  # each worker runs one file's plans, in a random order

    def worker(index: int) -> list[str]:
        results = []
        for out, seed, delay, how in plans[index * STRATA : (index + 1) * STRATA]:
            old = out.read_bytes()
            code, err = run_and_interrupt(out, seed, delay, how)
            results.append(check_file(out, old, code, err))
        return results

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = [result for results in pool.map(worker, range(2)) for result in results]
    assert len(outcomes) == RUNS
    print(f"{RUNS} runs: the old model kept {outcomes.count('old')} times, a complete new one {outcomes.count('new')} times")
    assert "old" in outcomes and "new" in outcomes  # stopped before learning, and after (or finished)
    for out in outs:
        checkpoint.save(copy_bundle[0], out)  # the next save to the folder tidies what kills left
        assert not [path.name for path in out.parent.iterdir() if path.name.endswith(".partial")]
