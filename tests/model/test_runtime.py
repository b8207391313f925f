"""The thread and OpenMP settings that keep training fast on a busy machine (model/runtime.py).

No timing here (benchmarks/train_under_load.py measures): these tests check that the settings the fix
relies on are in place: OpenMP's short barrier spin is set before torch loads, a user's own choice is
kept, and a training thread follows the cores other programs leave free.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import torch

from model import runtime
from model.cli import commands
from model.runtime import SPIN_COUNT, CoreFollower, CpuSample, apply_process_policies, free_cores, threads_for


def _fresh(code: str, **env) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    environment.update(env)
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True)
    return completed.stdout.strip()


def test_importing_the_core_sets_a_short_openmp_spin_before_torch_loads():
    code = (
        "import sys, os; import model; print('torch' in sys.modules, os.environ.get('GOMP_SPINCOUNT')); "
        "import torch; print(torch.get_num_threads() >= 1)"
    )
    assert _fresh(code).split() == ["False", SPIN_COUNT, "True"]


def test_every_entry_point_imports_the_core_first():
    for module in ("model.cli", "model.cli.train", "explorer.launcher", "explorer.app"):
        code = f"import os, {module}; print(os.environ.get('GOMP_SPINCOUNT'))"
        assert _fresh(code, QT_QPA_PLATFORM="offscreen") == SPIN_COUNT, module


def test_a_users_own_openmp_wait_policy_is_kept():
    assert (
        _fresh(
            "import os, model; print(os.environ.get('GOMP_SPINCOUNT'), os.environ['OMP_WAIT_POLICY'])", OMP_WAIT_POLICY="PASSIVE"
        )
        == "None PASSIVE"
    )
    environ = {"GOMP_SPINCOUNT": "5"}
    assert apply_process_policies(environ) is False and environ == {"GOMP_SPINCOUNT": "5"}
    environ = {}
    apply_process_policies(environ)
    assert environ == {"GOMP_SPINCOUNT": SPIN_COUNT}


def test_free_cores_leave_out_this_process_own_time():
    before = CpuSample(wall=0.0, busy=10.0, own=1.0, cores=2)
    # One second: 1.9 core-seconds busy in all, 1.2 of them ours -> others used 0.7 core.
    after = CpuSample(wall=1.0, busy=11.9, own=2.2, cores=2)
    assert abs(free_cores(before, after) - 1.3) < 1e-9
    quiet = CpuSample(wall=1.0, busy=11.95, own=2.95, cores=2)  # all of it ours
    assert free_cores(before, quiet) == 2.0


def test_thread_count_from_free_cores():
    assert [threads_for(free, 2) for free in (2.0, 1.8, 1.7, 1.5, 1.3, 1.0, 0.6, 0.0)] == [2, 2, 2, 1, 1, 1, 1, 1]
    assert threads_for(7.7, 8) == 8 and threads_for(5.2, 8) == 5


def test_a_training_thread_follows_the_cores_others_leave_free():
    """Quiet -> all cores; two other busy programs -> one; quiet again -> all, for the calling thread only."""
    timeline = iter(
        [
            CpuSample(0.0, 0.0, 0.0, 2),
            CpuSample(1.0, 1.9, 1.9, 2),  # quiet: every busy second was ours
            CpuSample(2.0, 3.9, 2.6, 2),  # others used 1.3 cores
            CpuSample(3.0, 5.9, 3.6, 2),  # others used 1.0 core (we ran on one)
            CpuSample(4.0, 7.8, 5.5, 2),  # quiet again
        ]
    )
    seen = []

    def train():
        follower = CoreFollower(most=2, interval=0.0, sample=lambda: next(timeline))
        for _ in range(4):
            follower.update()
            seen.append((follower.threads, torch.get_num_threads()))

    main_threads = torch.get_num_threads()
    worker = threading.Thread(target=train)
    worker.start()
    worker.join()
    assert seen == [(2, 2), (1, 1), (1, 1), (2, 2)]
    assert torch.get_num_threads() == main_threads  # another thread's count is its own


def test_without_proc_stat_the_count_stays():
    follower = CoreFollower(most=2, interval=0.0, sample=lambda: None)
    assert not follower.follows and follower.update() == 2


def test_a_command_s_long_loops_follow_the_free_cores_in_its_own_thread_only(monkeypatch):
    """The command line's thread runs evaluate's, heads' and attribute's batches on the cores others leave free;
    any other thread (the window's workers) keeps its count."""
    monkeypatch.setattr(runtime, "_command_follower", None)
    timeline = iter([CpuSample(0.0, 0.0, 0.0, 2), CpuSample(1.0, 3.9, 2.6, 2)])  # others used 1.3 cores
    seen: list[int] = []

    def command():
        runtime.follow_cores_in_this_thread(CoreFollower(most=2, interval=0.0, sample=lambda: next(timeline)))
        seen.append(torch.get_num_threads())
        runtime.follow_free_cores()  # between two batches
        seen.append(torch.get_num_threads())

        def elsewhere():
            before = torch.get_num_threads()
            runtime.follow_free_cores()
            seen.append(torch.get_num_threads() - before)

        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()

    worker = threading.Thread(target=command)
    worker.start()
    worker.join()
    assert seen == [2, 1, 0]  # two threads, then one beside the busy programs; another thread's count unchanged


def test_the_command_line_follows_the_free_cores(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(commands, "follow_cores_in_this_thread", lambda: calls.append("enabled"))
    assert commands.main(["translate", "--help"]) == 0  # parsing ends first: nothing to follow
    assert commands.main(["translate", "--model", "/nonexistent.safetensors", "x"]) != 0
    assert calls == ["enabled"]


def test_following_never_gives_a_thread_more_cores_than_it_had(monkeypatch):
    """The window's thread runs torch on one core; a command run in it (the export tests call the command line in
    process) must not raise that to every core, or the window's and the command's numbers differ in the last bits."""
    monkeypatch.setattr(runtime, "_command_follower", None)
    seen: list[int] = []

    def on_one_core():
        runtime.set_cpu_threads(1)
        runtime.follow_cores_in_this_thread()
        runtime.follow_free_cores()
        seen.append(torch.get_num_threads())

    worker = threading.Thread(target=on_one_core)
    worker.start()
    worker.join()
    assert seen == [1]
