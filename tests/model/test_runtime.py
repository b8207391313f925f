"""The thread and OpenMP settings that keep training fast on a busy machine (model/runtime.py).

No timing here (benchmarks/train_under_load.py measures): these tests check that the settings the fix
relies on are in place: OpenMP's short barrier spin is set by each entry point before torch loads (importing the
core changes no environment variable), a user's own choice is kept, and a training thread follows the cores other
programs leave free (work at positive niceness counts as free unless it competes with the thread).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from types import SimpleNamespace

import torch

from model import runtime
from model.cli import commands
from model.runtime import SPIN_COUNT, CoreFollower, CpuSample, apply_process_policies, free_cores, read_cpu_sample, threads_for


def _fresh(code: str, **env) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    environment.update(env)
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True)
    return completed.stdout.strip()


# Records GOMP_SPINCOUNT at the moment torch is first looked for (a finder first on sys.meta_path), then runs ENTRY.
AT_TORCH_IMPORT = """
import os, sys
seen = []
class Spy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "torch" and not seen:
            seen.append(str(os.environ.get("GOMP_SPINCOUNT")))
sys.meta_path.insert(0, Spy)
try:
    ENTRY
except SystemExit:
    pass
print("SEEN", *seen, file=sys.stderr)
"""


def _spin_at_torch_import(entry: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    code = AT_TORCH_IMPORT.replace("ENTRY", entry)
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True)
    return completed.stderr.strip().splitlines()[-1]


def test_importing_the_core_leaves_the_environment_unchanged():
    code = "import os, sys; before = dict(os.environ); import model; print('torch' in sys.modules, dict(os.environ) == before)"
    assert _fresh(code).split() == ["False", "True"]


def test_every_entry_point_sets_a_short_openmp_spin_before_torch_loads():
    entries = {
        "python -m model": "import runpy; sys.argv = ['model', 'trace', '--help']; runpy.run_module('model', run_name='__main__')",
        "transformer-explorer": "from explorer.launcher import main; main(['trace', '--help'])",
    }
    for name, entry in entries.items():
        assert _spin_at_torch_import(entry) == f"SEEN {SPIN_COUNT}", name


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


def _followed(timeline: list[CpuSample]) -> list[int]:
    """The thread counts a follower sets, in a thread of its own, along ``timeline``."""
    samples = iter(timeline)
    seen: list[int] = []

    def train():
        follower = CoreFollower(most=2, interval=0.0, sample=lambda: next(samples))
        seen.extend(follower.update() for _ in range(len(timeline) - 1))

    worker = threading.Thread(target=train)
    worker.start()
    worker.join()
    return seen


def _two_busy_others(niced: bool, niceness: int = 0, waited_per_second: float = 0.0) -> list[CpuSample]:
    """Three seconds of /proc/stat beside two other programs that each keep a core busy (at nice 19 or at normal
    priority) while this process trains on one core; ``niceness`` is this thread's own, and it waited
    ``waited_per_second`` seconds a second for a core."""
    timeline = []
    for second in range(4):
        ours, others = 1.0 * second, 2.0 * second  # this process in ``user`` (or in ``nice`` when it runs niced itself)
        busy = (0.0 if niced else others) + (0.0 if niceness > 0 else ours)
        niced_time = (others if niced else 0.0) + (ours if niceness > 0 else 0.0)
        timeline.append(
            CpuSample(float(second), busy, ours, 2, niced=niced_time, niceness=niceness, waited=waited_per_second * second)
        )
    return timeline


def test_reading_proc_stat_keeps_niced_time_apart(tmp_path, monkeypatch):
    """/proc/stat's ``nice`` column (work at positive niceness) is not counted as busy with the rest."""
    ticks = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal (guest guest_nice), in ticks
    stat.write_text(f"cpu  {3 * ticks} {5 * ticks} {ticks} {40 * ticks} {2 * ticks} 0 0 0 0 0\ncpu0 1\ncpu1 1\nintr 1\n")
    schedstat = tmp_path / "schedstat"
    schedstat.write_text("123456 2500000000 77\n")
    monkeypatch.setattr(runtime, "own_niceness", lambda: 0)
    sample = read_cpu_sample(str(stat), str(schedstat))
    assert sample is not None
    assert (sample.busy, sample.niced, sample.cores, sample.niceness, sample.waited) == (4.0, 5.0, 2, 0, 2.5)
    assert read_cpu_sample(str(stat), str(tmp_path / "missing")).waited is None  # a kernel that does not say
    assert read_cpu_sample(str(tmp_path / "missing")) is None


def test_niced_programs_beside_training_leave_it_every_core(monkeypatch):
    """Two ``nice 19`` busy loops yield to a thread at normal priority: training keeps both cores (it fell to one).
    /proc/stat as the kernel writes it, a second apart: the ``nice`` column grows by two cores' time."""
    ticks = os.sysconf("SC_CLK_TCK")
    clock = {"now": 0.0}
    proc = {"/proc/stat": "", "/proc/thread-self/schedstat": "1 0 1\n"}

    def second(n: int) -> None:  # this process on one core (user), the two niced loops on both (nice)
        clock["now"] = float(n)
        proc["/proc/stat"] = f"cpu  {n * ticks} {2 * n * ticks} 0 0 0 0 0 0 0 0\ncpu0 1\ncpu1 1\n"

    monkeypatch.setattr(runtime, "open", lambda path, mode="r": io.BytesIO(proc[path].encode()), raising=False)
    monkeypatch.setattr(runtime, "time", SimpleNamespace(monotonic=lambda: clock["now"], process_time=lambda: clock["now"]))
    monkeypatch.setattr(runtime, "own_niceness", lambda: 0, raising=False)
    second(0)
    threads_before = torch.get_num_threads()
    follower = CoreFollower(most=2, interval=0.5, sample=runtime.read_cpu_sample)
    seen = []
    for n in range(1, 4):
        second(n)
        seen.append(follower.update())
    torch.set_num_threads(threads_before)  # this test's thread, as it was for the others
    assert seen == [2, 2, 2]
    assert _followed(_two_busy_others(niced=True)) == [2, 2, 2]


def test_programs_at_normal_priority_still_take_their_cores():
    assert _followed(_two_busy_others(niced=False)) == [1, 1, 1]
    assert abs(free_cores(*_two_busy_others(niced=False)[:2])) < 1e-9


def test_a_niced_trainer_counts_niced_programs_as_busy():
    """Run niced itself, training competes equally with other niced work: the ``nice`` column is busy, less its own."""
    timeline = _two_busy_others(niced=True, niceness=19)
    assert _followed(timeline) == [1, 1, 1]
    assert abs(free_cores(*timeline[:2])) < 1e-9
    alone = [CpuSample(float(s), 0.0, 1.9 * s, 2, niced=1.9 * s, niceness=19) for s in range(2)]  # only its own
    assert free_cores(*alone) == 2.0


def test_niced_programs_that_keep_training_waiting_count_as_busy():
    """Niceness works within one scheduling group only (autogroups: one per terminal session), so a ``nice 19`` job
    started elsewhere can take its full share: when the training thread waited for a core a quarter of the time or
    more, the niced work counts as busy."""
    assert _followed(_two_busy_others(niced=True, waited_per_second=0.6)) == [1, 1, 1]
    assert _followed(_two_busy_others(niced=True, waited_per_second=0.05)) == [2, 2, 2]
    assert _followed(_two_busy_others(niced=False, waited_per_second=0.05)) == [1, 1, 1]


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
