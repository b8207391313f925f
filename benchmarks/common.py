"""Helpers shared by the benchmarks: finding the seeds' reference implementations, timing, printing."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def reference_module(name: str, folder: str | None = None):
    """Import ../shared/reference/<name>.py (the seeds' implementations, kept outside the project)."""
    candidates = [Path(folder)] if folder else [ROOT.parent / "shared" / "reference", ROOT / "shared" / "reference"]
    for candidate in candidates:
        path = candidate / f"{name}.py"
        if path.exists():
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise SystemExit(f"cannot find {name}.py in {', '.join(map(str, candidates))}; pass --reference FOLDER")


def best_seconds(function, repeats: int) -> float:
    """Fastest of ``repeats`` runs after one warm-up: on a shared machine, noise only ever adds time."""
    function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def print_table(headers: list[str], rows: list[list]) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(str(h).ljust(w) for h, w in zip(headers, widths)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
