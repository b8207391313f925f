"""Choosing where tensors live (CUDA when there is one, else the CPU; a missing device is a clear error)
and how many CPU cores the torch work of one thread may use."""

from __future__ import annotations

import functools

import torch


@functools.cache
def _default_cpu_threads() -> int:
    """torch's own choice (the machine's cores), read on first use, before anything changes it."""
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
    default = _default_cpu_threads()  # read on every call, so it is known before the first change
    count = count or default
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)  # OpenMP and MKL thread counts of this thread (and the default for new ones)
    return count


class DeviceError(ValueError):
    """A device that was asked for but is not on this machine."""


def available_devices() -> list[str]:
    """'cpu' and every CUDA device found, as names resolve_device accepts."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return devices


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return "CPU"


def resolve_device(name: str = "auto") -> torch.device:
    """'auto' -> the first CUDA device if any, else CPU; 'cpu', 'cuda', 'cuda:N' as asked."""
    name = (name or "auto").strip().lower()
    if name == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise DeviceError(f"device {name!r} was asked for, but this machine has no CUDA GPU "
                              "(or this PyTorch build has no CUDA support); use --device cpu")
        index_text = name.partition(":")[2] or "0"
        if not index_text.isdigit() or int(index_text) >= torch.cuda.device_count():
            raise DeviceError(f"device {name!r} does not exist; found {torch.cuda.device_count()} CUDA device(s)")
        return torch.device(f"cuda:{index_text}")
    raise DeviceError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N")
