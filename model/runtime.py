"""Process-wide policies of the CPU backend, in one place: how OpenMP's threads wait, how many cores the
torch work of each thread may use, and how a training thread follows the cores other programs leave free.

Why this matters (measured on 2 cores, training ``copy``; benchmarks/train_under_load.py):

- PyTorch runs each operation on a team of OpenMP threads that meet at a barrier when it ends. GNU
  OpenMP (libgomp, which both PyTorch and SentencePiece load) lets a thread that arrives first *spin*
  there for 300,000 rounds before it sleeps. Alone that is cheap. Beside busy programs the partner it
  waits for is often not running, so the spinning thread burns the time slice the partner needs, and a
  step that took 60 ms took seconds: 17 steps/s alone fell to 0.2 beside two busy processes (1%).
  Spinning 1,000 rounds instead (``GOMP_SPINCOUNT``) keeps the speed alone (16-17 steps/s) and gave
  6.6-7.6 steps/s beside two busy processes. But a thread that sleeps that soon gives its core to any niced
  job at every barrier and waits for the job's time slice to end when it wakes: beside two ``nice 19`` loops
  training ran at 84% of its quiet speed from the command line and 68% from the Train tab. 30,000 rounds
  (tens of microseconds) keep both: 101% beside the niced loops, 44% beside two busy processes (where the
  follower below runs one thread, which meets no barrier). It must be set before libgomp loads, that is before torch
  is imported: each entry point does it first (``apply_process_policies``: ``python -m model``, ``transformer-explorer``;
  importing ``model`` changes no variable), and leaves a user's own ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` alone.
- A team of two threads on two cores that other programs share still waits at every barrier for the
  slower one. One thread was as fast beside one busy process as alone (10.9 steps/s) and two threads
  were not (4.4). So a training thread samples, about once a second, how much CPU the *other* programs
  use (Linux ``/proc/stat`` less this process's own time) and runs on the cores they leave free
  (``CoreFollower``): both cores when the machine is quiet, one when it is busy, both again once it is
  quiet. Elsewhere (no ``/proc/stat``) the thread count stays as set.
- Work at positive niceness (``nice -n 19``, /proc/stat's ``nice`` column) yields to a thread at normal
  priority, so it counts as free: training beside two ``nice 19`` busy loops had fallen to one thread and
  half its speed. It counts as busy when this thread runs niced itself (then it competes equally), and
  when this thread waited for a core for a quarter of the last second or more (/proc/thread-self/schedstat):
  the kernel honours niceness only within one scheduling group, and with autogroups (one per terminal
  session, the default of many desktops) a ``nice 19`` job started elsewhere takes its full share.
- Every other thread of the app (the window's, a model load) runs its torch work on one core
  (``set_cpu_threads(1)``), so its team never competes with the training thread's.
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass

SPIN_COUNT = "30000"  # OpenMP barrier spin rounds before sleeping (libgomp's default: 300,000; see above)
OPENMP_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def import_shielded(*names: str) -> bool:
    """Import modules with Ctrl-C held back until they are in; True when it was pressed meanwhile.

    A KeyboardInterrupt raised inside a library's own import can leave it half-built (numpy without
    ``np.subtract``) while an importer that catches errors carries on, so a command stopped at that moment
    failed later with a traceback instead of one line. The commands import what they all need this way
    first (a second or two), then honour the Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        for name in names:
            importlib.import_module(name)
        return False
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        signal.signal(signal.SIGINT, previous)
    return bool(pressed)


COMMAND_IMPORTS = ("numpy", "torch", "matplotlib", "model.cli.commands")  # what every command needs


def apply_process_policies(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set the OpenMP wait policy for this process unless the user chose one; True when it takes effect.

    It takes effect only before torch (and with it libgomp) is loaded; afterwards it is too late and
    this returns False. Child processes (the benchmarks' probes, the tests) inherit it."""
    variables: MutableMapping[str, str] = os.environ if environ is None else environ
    if any(name in variables for name in OPENMP_WAIT_VARIABLES):
        return False  # the user's own choice stands
    variables["GOMP_SPINCOUNT"] = SPIN_COUNT
    return "torch" not in sys.modules


@functools.cache
def default_cpu_threads() -> int:
    """torch's own choice (the machine's cores), read on first use, before anything changes it."""
    # deferred: this module sets OpenMP's policy before torch loads; torch only once a thread count is set
    import torch

    return torch.get_num_threads()


def set_cpu_threads(count: int | None = None) -> int:
    """Set how many cores the CPU work of the *calling thread* may use (None: torch's default, the
    machine's cores); returns the count set.

    Why per thread: torch's CPU backend (OpenMP) gives every thread that runs a parallel operation its own
    team of helper threads, kept for that thread's life. Once there are more helpers than cores, OpenMP
    stops spinning between operations, and every operation then pays a thread wake-up. Training in a GUI
    worker thread ran at half the command line's speed because the GUI thread had a team of its own. So an
    application with a training thread runs its other threads' torch work on one core.
    """
    # deferred: as above (torch loads after the OpenMP policy is set)
    import torch

    default = default_cpu_threads()  # read on every call, so it is known before the first change
    count = count or default
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)  # OpenMP and MKL thread counts of this thread (and the default for new ones)
    return count


@dataclass(frozen=True)
class CpuSample:
    """What /proc/stat, this process and the calling thread said at one moment."""

    wall: float  # seconds (monotonic)
    busy: float  # CPU-seconds all cores have spent busy at normal priority since boot (every process; not ``nice``)
    own: float  # CPU-seconds this process has used (all its threads)
    cores: int  # cores the machine has
    niced: float = 0.0  # CPU-seconds all cores have spent on work at positive niceness since boot (every process)
    niceness: int = 0  # the calling thread's own niceness
    waited: float | None = None  # seconds the calling thread has waited for a core since it started (None: unknown)


WAITED_SHARE = 0.25  # of the wall time: waiting this long for a core shows that niced work is competing after all


def own_niceness() -> int:
    """The calling thread's niceness (Linux gives each thread its own; 0 where it cannot be read)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except (OSError, AttributeError):
        return 0


def read_waited(path: str = "/proc/thread-self/schedstat") -> float | None:
    """Seconds the calling thread has waited on a run queue since it started; None where the kernel does not say."""
    try:
        with open(path, "rb") as schedstat:
            return int(schedstat.read(256).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def read_cpu_sample(stat: str = "/proc/stat", schedstat: str = "/proc/thread-self/schedstat") -> CpuSample | None:
    """The machine's busy time, this process's CPU time and the calling thread's wait now; None where /proc/stat
    cannot be read."""
    try:
        with open(stat, "rb") as handle:
            lines = handle.read(65536).splitlines()
        fields = [int(value) for value in lines[0].split()[1:9]]  # user nice system idle iowait irq softirq steal
        cores = sum(1 for line in lines[1:] if line.startswith(b"cpu"))
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    busy_ticks = sum(fields) - fields[1] - fields[3] - fields[4]  # all but nice, idle and iowait
    return CpuSample(
        time.monotonic(),
        busy_ticks / ticks,
        time.process_time(),
        max(cores, 1),
        niced=fields[1] / ticks,
        niceness=own_niceness(),
        waited=read_waited(schedstat),
    )


def niced_work_competes(before: CpuSample, after: CpuSample) -> bool:
    """Whether the others' niced work took cores from this thread between two samples: always when this thread runs
    niced itself, else only when it waited for a core for ``WAITED_SHARE`` of the time or more (niceness works
    within a scheduling group only)."""
    if after.niceness > 0:
        return True
    if before.waited is None or after.waited is None:
        return False
    wall = after.wall - before.wall
    return wall > 0 and (after.waited - before.waited) >= WAITED_SHARE * wall


def free_cores(before: CpuSample, after: CpuSample) -> float:
    """Cores the other programs left free between two samples (this process's own use counts as free, and so does
    work at positive niceness unless it competes with this thread: ``niced_work_competes``)."""
    wall = after.wall - before.wall
    if wall <= 0:
        return float(after.cores)
    busy = after.busy - before.busy
    if niced_work_competes(before, after):
        busy += after.niced - before.niced
    others = max(0.0, busy - (after.own - before.own)) / wall  # cores busy with others
    return max(0.0, after.cores - others)


def threads_for(free: float, most: int) -> int:
    """Threads to run on: the free cores, rounded so that a core two-thirds free counts (1 to ``most``)."""
    return max(1, min(most, int(free + 0.34)))


class CoreFollower:
    """Keeps the calling thread's torch thread count at the cores other programs leave free.

    Call ``update()`` between training steps, from the training thread: it reads /proc/stat at most
    once per ``interval`` seconds (about 20 microseconds) and changes the count only when it should.
    """

    def __init__(self, most: int | None = None, interval: float = 1.0, sample: Callable[[], CpuSample | None] = read_cpu_sample):
        self.most = most or default_cpu_threads()
        self.interval = interval
        self._sample = sample
        self.threads = set_cpu_threads(self.most)
        self._last = sample()

    @property
    def follows(self) -> bool:
        """Whether the machine's load can be read here (Linux); otherwise the thread count stays."""
        return self._last is not None

    def update(self) -> int:
        """The thread count to run the next step on (set for the calling thread)."""
        if self._last is None or self.most <= 1:
            return self.threads
        if time.monotonic() - self._last.wall < self.interval:
            return self.threads
        sample = self._sample()
        if sample is None:
            return self.threads
        wanted = threads_for(free_cores(self._last, sample), self.most)
        self._last = sample
        if wanted != self.threads:
            self.threads = set_cpu_threads(wanted)
        return self.threads


_command_follower: tuple[int, CoreFollower] | None = None  # (the thread it serves, its follower)


def follow_cores_in_this_thread(follower: CoreFollower | None = None) -> None:
    """From now on, ``follow_free_cores()`` in the calling thread keeps its thread count at the free cores.

    The command line calls it once: its long loops (evaluate, heads, attribute, compare) then run on one core
    beside busy programs instead of two threads waiting for each other (heads --n 30 took about 150 times
    longer beside two busy processes). The window never calls it: its threads keep the one core they are given,
    beside a training thread that follows the free cores itself."""
    global _command_follower
    if follower is None:
        import torch  # deferred: as in set_cpu_threads, the OpenMP policy is set before torch loads

        follower = CoreFollower(most=torch.get_num_threads())  # never more than the thread was given
    _command_follower = (threading.get_ident(), follower)


def follow_free_cores() -> None:
    """Between the batches of a long loop: follow the cores other programs leave free, when the command line
    asked for it in this thread (``follow_cores_in_this_thread``); otherwise nothing (about 100 ns)."""
    follower = _command_follower
    if follower is not None and follower[0] == threading.get_ident():
        follower[1].update()
