"""Fault injection: `train` killed (SIGKILL) or interrupted (SIGINT) at random moments — during the
imports, the corpus and tokenizer preparation, training, or the save — 50 times over an existing
good model file. Afterwards the file is always either the old model, byte for byte, or a complete
new one that loads with finite weights and at least one training step: never an untrained or a
half-written one. A later save to the same folder leaves no temporary file behind."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from model.io import checkpoint
from tests.cli.test_cli import ROOT

RUNS = 50  # in total, over two files trained side by side
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
    "60",
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
    time.sleep(delay)
    if process.poll() is None:
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
    if data == old:
        return "old"
    bundle = checkpoint.load(out)  # complete: it loads (checksum, shapes, finite weights all checked)
    assert len(bundle.history.get("steps", [])) > 0, f"an untrained model was written (exit {code}): {err}"
    assert all(torch.isfinite(p).all() for p in bundle.model.parameters())
    return "new"


def test_kills_and_interrupts_never_lose_the_model(tmp_path, copy_bundle):
    rng = random.Random(2026)
    outs = [tmp_path / "first" / "model.safetensors", tmp_path / "second" / "model.safetensors"]
    for out in outs:
        out.parent.mkdir()
        checkpoint.save(copy_bundle[0], out)
    plans = [
        (outs[i % 2], i, rng.uniform(0.2, 6.0), signal.SIGKILL if i % 2 == rng.randint(0, 1) else signal.SIGINT)
        for i in range(RUNS)
    ]

    def worker(index: int) -> list[str]:
        results = []
        for out, seed, delay, how in plans[index::2]:
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
