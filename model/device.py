"""Choosing where tensors live: CUDA when there is one, else the CPU; a missing device is a clear error.
(How many CPU cores each thread's torch work may use is a process-wide policy: runtime.py.)"""

from __future__ import annotations

import torch

from model.errors import UserError


class DeviceError(UserError):
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
            raise DeviceError(
                f"device {name!r} was asked for, but this machine has no CUDA GPU "
                "(or this PyTorch build has no CUDA support); use --device cpu"
            )
        index_text = name.partition(":")[2] or "0"
        if not (index_text.isascii() and index_text.isdigit()) or int(index_text) >= torch.cuda.device_count():
            raise DeviceError(f"device {name!r} does not exist; found {torch.cuda.device_count()} CUDA device(s)")
        return torch.device(f"cuda:{index_text}")
    raise DeviceError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N")
