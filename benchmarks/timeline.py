"""The timeline (issue 29): what recording costs training, how large the file is, how fast a snapshot restores.

In one run:

1. training speed with and without recording: the same short run (the default recipe's model, toy-fr, fixed
   settings, one thread so that the trainer's core-following adds no noise), alternated ``--rounds`` times (in turn
   first and second, since a shared machine's speed drifts); steps/s of each and their ratio (target >= 0.95). On a
   busy machine the ratio of two runs moves by +-15% whatever they do, so the time spent inside the recorder is
   measured too, as a share of the recorded runs' training time: that is the cost itself. Short runs copy more often
   per step than a full one (the series is dense early), so both overstate it;
2. sizes: the timeline of the default recipe (its model's parameters x the default snapshot count; a full 10-minute
   run keeps exactly that many, the final one read from the model file), written for real in every storage, and the
   same for the shipped models that carry timelines (default, copy, rnn-bahdanau) against resources/'s budget;
3. restoring: opening the timeline, and switching to a snapshot (``bundle_at``) on one core, as the window runs it
   (target well under 50 ms);
4. slider redraw: the window's scrubber (benchmarks/timeline_slider.py, run from here): every visible view redrawn, target
   150 ms median.

    python benchmarks/timeline.py [--seconds 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from common import ROOT, print_table  # first: it puts the project on sys.path

# isort: split
import model as _app_policies  # noqa: F401  (before torch: the OpenMP policy of model/runtime.py)

# isort: split
import torch

import model.training.trainer
from model.data.corpora import CorpusSpec, load_corpus
from model.io import checkpoint
from model.io.shipped import TIMELINE_SUFFIX, shipped_models
from model.io.snapshots import Recording, Snapshot
from model.io.timeline import STORAGES, load_timeline, save_timeline, timeline_path
from model.runtime import CoreFollower, set_cpu_threads
from model.training.pipeline import TokenizerOptions
from model.training.presets import BUILTIN_PRESETS
from model.training.recording import DEFAULT_SNAPSHOTS, Recorder, TimelineOptions, trainable_names
from model.training.run import TrainingCallbacks, TrainingRequest, train
from model.training.trainer import TrainingOptions

RECIPE = BUILTIN_PRESETS["toy-fr"]  # the shipped default model's recipe
CORPUS = CorpusSpec("toy-fr", size=20000, seed=0)
RESOURCES_BUDGET_MB = 50.0
SHIPPED_WITH_TIMELINES = ("default", "copy", "rnn-bahdanau")


class RecorderClock:
    """Seconds spent inside the recorder's methods (the whole cost of recording to training)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        for name in ("start", "on_progress", "on_validation", "finish"):
            setattr(Recorder, name, self._timed(getattr(Recorder, name)))

    def _timed(self, method):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        return timed


def one_run(seconds: float, snapshots: int, splits) -> tuple[float, object]:
    """Steps/s (from the first step to the last, so preparing does not count) and the trained bundle."""
    training = dict(RECIPE.training, max_minutes=seconds / 60, valid_every=10**9, valid_decode_limit=20)
    request = TrainingRequest(
        CORPUS,
        TokenizerOptions(**RECIPE.tokenizer),
        dict(RECIPE.model),
        TrainingOptions.from_dict(training),
        "cpu",
        splits,
        timeline=TimelineOptions(snapshots),
    )
    times: list[tuple[float, int]] = []
    outcome = train(request, TrainingCallbacks(on_progress=lambda p: times.append((time.perf_counter(), p.step))))
    (t0, s0), (t1, s1) = times[0], times[-1]
    return (s1 - s0) / max(t1 - t0, 1e-9), outcome.bundle


def recording_cost(seconds: float, rounds: int) -> object:
    """Alternate runs without and with recording; print steps/s, ratios and the recorder's own time; return a
    recorded bundle."""
    splits = load_corpus(CORPUS)
    clock = RecorderClock()
    rows, ratios, bundle, recorded_seconds = [], [], None, 0.0
    for round_number in range(1, rounds + 1):
        rates = {}
        for snapshots in (0, DEFAULT_SNAPSHOTS) if round_number % 2 else (DEFAULT_SNAPSHOTS, 0):
            started = time.perf_counter()
            rates[snapshots], trained = one_run(seconds, snapshots, splits)
            if snapshots:
                bundle, recorded_seconds = trained, recorded_seconds + time.perf_counter() - started
        plain, recorded = rates[0], rates[DEFAULT_SNAPSHOTS]
        ratios.append(recorded / plain)
        rows.append([round_number, f"{plain:.2f}", f"{recorded:.2f}", f"{recorded / plain:.3f}"])
    print_table(["round", "steps/s without", "steps/s with", "ratio"], rows)
    print(f"recording: median ratio {statistics.median(ratios):.3f} (target >= 0.95); {len(bundle.recording.snapshots)} snapshots")
    share = clock.seconds / recorded_seconds
    spent = f"{clock.seconds * 1e3:.0f} ms of {recorded_seconds:.0f} s of recorded runs"
    print(f"  inside the recorder: {spent} ({share:.2%}: a ratio of {1 - share:.4f})\n")
    return bundle


def synthetic_recording(bundle, count: int, storage: str) -> Recording:
    """``count`` snapshots of ``bundle``'s size (its own weights, noised), the last the model's: a full run's shape."""
    names = trainable_names(bundle.model)
    flat = torch.cat([p.detach().reshape(-1) for n, p in bundle.model.named_parameters() if n in names])  # [P]
    weights = [(flat + 0.01 * torch.randn_like(flat)).half() for _ in range(count - 1)] + [None]
    snapshots = [Snapshot(i, 10 * i, float(i), 1.0, None, final=i == count - 1, from_model=i == count - 1) for i in range(count)]
    return Recording(snapshots, weights, names, storage)


def sizes() -> None:
    """Timeline sizes per storage and count, written for real: the default recipe's, and the shipped models'."""
    shipped = {name: checkpoint.load(path) for name, path in shipped_models().items() if name in SHIPPED_WITH_TIMELINES}
    counts = (DEFAULT_SNAPSHOTS, 8, 6)
    measured: dict[tuple[str, str, int], float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, bundle in shipped.items():
            for storage in STORAGES:
                for count in counts:
                    path = save_timeline(synthetic_recording(bundle, count, storage), bundle, Path(folder) / f"{name}.t")
                    measured[name, storage, count] = path.stat().st_size / 1e6
    default_parameters = shipped["default"].model.parameter_count()
    print(f"default recipe ({default_parameters:,} parameters), {DEFAULT_SNAPSHOTS} snapshots (the final one not stored):")
    for storage in STORAGES:
        print(f"  {storage}: {measured['default', storage, DEFAULT_SNAPSHOTS]:.1f} MB (target <= 40 MB)")
    files = [p for p in (ROOT / "resources").rglob("*") if p.is_file()]
    shipped_now = sum(p.stat().st_size for p in files if p.name.endswith(TIMELINE_SUFFIX)) / 1e6
    resources = sum(p.stat().st_size for p in files) / 1e6 - shipped_now  # everything but the timelines shipped now
    rows = []
    for storage in STORAGES:
        for count in counts:
            total = sum(measured[name, storage, count] for name in shipped)
            each = ", ".join(f"{name} {measured[name, storage, count]:.1f}" for name in shipped)
            rows.append([storage, count, each, f"{total:.1f}", f"{resources + total:.1f}"])
    print(
        f"\nshipped timelines (MB); resources/ holds {resources:.1f} MB besides them (the timelines shipped now: "
        f"{shipped_now:.1f} MB), budget {RESOURCES_BUDGET_MB:g} MB:"
    )
    print_table(["storage", "snapshots", "each", "three", "resources then"], rows)
    print()


def restoring(bundle, folder: Path) -> None:
    """Open the recorded run's timeline and switch between its snapshots on one core, as the window does."""
    path = checkpoint.save(bundle, folder / "recorded.safetensors")
    set_cpu_threads(1)
    loaded = checkpoint.load(path)
    started = time.perf_counter()
    timeline = load_timeline(path, loaded)
    opened = time.perf_counter() - started
    switches = []
    for _ in range(3):
        for index in range(len(timeline)):
            started = time.perf_counter()
            timeline.bundle_at(index)
            switches.append(time.perf_counter() - started)
    size = timeline_path(path).stat().st_size / 1e6
    print(f"restoring ({len(timeline)} snapshots, {size:.1f} MB file): opening the timeline {opened * 1e3:.0f} ms;")
    median, fastest = statistics.median(switches) * 1e3, min(switches) * 1e3
    print(f"  switching to a snapshot: median {median:.1f} ms, fastest {fastest:.1f} ms, slowest {max(switches) * 1e3:.1f} ms")
    print("  (target: well under 50 ms)\n")


def slider_redraw(moves: int) -> None:
    """The window's scrubber: ``benchmarks/timeline_slider.py`` in a process of its own (a Qt application), the slider
    moved between snapshots of the default model, every visible view redrawn and painted (target: 150 ms median)."""
    script = Path(__file__).with_name("timeline_slider.py")
    environment = {
        **os.environ,
        "PYTHONPATH": str(script.parent.parent),
        "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
    }
    done = subprocess.run([sys.executable, str(script), "--moves", str(moves)], capture_output=True, text=True, env=environment)
    print("slider redraw (benchmarks/timeline_slider.py):")
    print(done.stdout if done.returncode == 0 else f"  failed (exit {done.returncode}): {done.stderr[-1500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="training seconds per run")
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs (without, with recording)")
    parser.add_argument("--moves", type=int, default=20, help="slider moves per views tab")
    args = parser.parse_args()
    # One thread: the trainer otherwise follows the cores other programs leave free, which moves more than recording.
    model.training.trainer.CoreFollower = partial(CoreFollower, most=1, sample=lambda: None)  # type: ignore[misc]
    bundle = recording_cost(args.seconds, args.rounds)
    sizes()
    with tempfile.TemporaryDirectory() as folder:
        restoring(bundle, Path(folder))
    slider_redraw(args.moves)


if __name__ == "__main__":
    main()
