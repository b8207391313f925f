"""Models larger than memory (issue 45): an NLLB-3.3B-size folder opened with its layers offloaded, and the offloaded
path's results against the in-memory path's on an NLLB-600M-size folder.

    python benchmarks/offload_large.py [--folder DIR] [--max-memory 6GB] [--steps 20] [--skip-large] [--skip-equality]

1. **Large**: builds (once) a random-weight NLLB-3.3B-size folder (M2M100, 24+24 layers, d_model 2048, 16 heads,
   float16 on disk, 6.7 GB: model/pretrained/streamed.py), then in a process of its own, with ``--max-memory``: opens
   it, decodes a 20-piece sentence step by step (each step timed), runs the logit lens and the cross-attention
   head-patching grid, and reports the process's peak resident memory (target ≤ 8 GB) and the time per step.
2. **Equality**: builds a random-weight NLLB-600M-size folder and, in one process, opens it in memory and offloaded
   (about half its layers on disk) and compares every attention weight of a traced sentence and every cell of the
   cross-attention patching grid: the largest difference (target ≤ 1e-5).

Nothing is downloaded. Both phases print one JSON line of figures, then a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

TEXT = "the black cat sees the small dog now."  # 20 pieces as NLLB reads it: its language code, 18 pieces, </s>
CORRUPTED = "the black dog sees the small cat now."


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text} (peak so far {peak_rss_gb():.2f} GB)", file=sys.stderr, flush=True)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # Linux reports KiB


def large_phase(folder: str, max_memory: str, steps: int) -> dict:
    """In this process: open offloaded, decode step by step, the lens, the cross-heads patching grid."""
    from model.decoding.options import DecodingOptions
    from model.decoding.stepper import Stepper
    from model.interventions.logit_lens import bundle_logit_lens
    from model.interventions.patching import patch_grids
    from model.interventions.patching_setup import prepare_bundle_patching
    from model.pretrained.loading import load_pretrained
    from model.pretrained.offload import MemoryOptions

    started = time.perf_counter()
    bundle = load_pretrained(folder, memory=MemoryOptions.parse(max_memory))
    figures: dict = {"open_s": time.perf_counter() - started, "plan": bundle.config.offload.describe()}
    say(f"opened: {figures['plan']}")
    figures["source_pieces"] = len(bundle.source_ids(TEXT)[0])
    stepper = Stepper(bundle, TEXT, DecodingOptions())
    step_seconds = []
    for _ in range(steps):
        if stepper.finished:
            break
        begun = time.perf_counter()
        stepper.step()
        step_seconds.append(time.perf_counter() - begun)
    figures |= {"steps": len(step_seconds), "step_s_mean": sum(step_seconds) / len(step_seconds), "step_s": step_seconds}
    say(f"decoded {len(step_seconds)} steps")
    begun = time.perf_counter()
    lens = bundle_logit_lens(bundle, TEXT)
    figures["lens_s"], figures["lens_steps"] = time.perf_counter() - begun, len(lens.chosen_ranks)
    say("logit lens read")
    begun = time.perf_counter()
    setup = prepare_bundle_patching(bundle, TEXT, CORRUPTED)
    result = patch_grids(setup, "exact", "denoising", ("cross heads",))
    grid = next(iter(result.grids.values()))
    figures["patching_s"], figures["patching_cells"] = time.perf_counter() - begun, int(grid.values.size)
    figures["peak_rss_gb"] = peak_rss_gb()
    return figures


def equality_phase(folder: str, max_memory: str) -> dict:
    """In this process: the same trace and cross-heads grid in memory and offloaded; their largest differences."""
    import numpy as np

    from model.decoding.stepper import Stepper
    from model.interventions.patching import patch_grids
    from model.interventions.patching_setup import prepare_bundle_patching
    from model.pretrained.loading import load_pretrained
    from model.pretrained.offload import MemoryOptions

    def measured(bundle):
        stepper = Stepper(bundle, TEXT)
        for _ in range(12):
            stepper.step()
        trace = stepper.trace()
        setup = prepare_bundle_patching(bundle, TEXT, CORRUPTED)
        grid = next(iter(patch_grids(setup, "exact", "denoising", ("cross heads",)).grids.values()))
        return trace, grid.metrics

    in_memory = measured(load_pretrained(folder))
    offloaded_bundle = load_pretrained(folder, memory=MemoryOptions.parse(max_memory))
    offloaded = measured(offloaded_bundle)
    attention = max(
        float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())
        for kind in ("encoder_self", "decoder_self", "cross")
        for a, b in zip(getattr(in_memory[0], kind), getattr(offloaded[0], kind))
    )
    patching = float(np.abs(in_memory[1].astype(np.float64) - offloaded[1].astype(np.float64)).max())
    return {"plan": offloaded_bundle.config.offload.describe(), "attention_max_diff": attention, "patching_max_diff": patching,
            "tokens_equal": list(in_memory[0].chosen_ids) == list(offloaded[0].chosen_ids)}  # fmt: skip


def child(phase: str, args: argparse.Namespace) -> dict:
    """Run ``phase`` in a process of its own (its peak memory its own); its JSON figures."""
    command = [sys.executable, __file__, "--phase", phase, "--folder", args.folder, "--max-memory", args.max_memory,
               "--steps", str(args.steps), "--equality-folder", args.equality_folder,
               "--equality-memory", args.equality_memory]  # fmt: skip
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    return json.loads(output.stdout.strip().splitlines()[-1])


ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default="/tmp/te-bench/nllb-3.3b", help="the NLLB-3.3B-size folder (built if missing)")
    parser.add_argument("--max-memory", default="6GB")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--equality-folder", default="/tmp/te-bench/nllb-600m")
    parser.add_argument("--equality-memory", default="1.5GB", help="the 600M model's budget: about half its layers on disk")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-equality", action="store_true")
    parser.add_argument("--phase", choices=("large", "equality"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.phase == "large":
        print(json.dumps(large_phase(args.folder, args.max_memory, args.steps)))
        return 0
    if args.phase == "equality":
        print(json.dumps(equality_phase(args.equality_folder, args.equality_memory)))
        return 0
    from model.pretrained.streamed import build_streamed
    from model.pretrained.tiny import build_published

    if not args.skip_large:
        if not (Path(args.folder) / "config.json").exists():
            begun = time.perf_counter()
            build_streamed(args.folder, "nllb-3.3b", "float16")
            print(f"built {args.folder} in {time.perf_counter() - begun:.0f} s")
        large = child("large", args)
        print(json.dumps({k: v for k, v in large.items() if k != "step_s"}))
        print(f"NLLB-3.3B size, --max-memory {args.max_memory}: {large['plan']}")
        print(f"  opened in {large['open_s']:.0f} s; {large['steps']} steps of a {large['source_pieces']}-piece sentence, "
              f"{large['step_s_mean']:.2f} s a step; logit lens {large['lens_s']:.0f} s; cross-heads patching grid "
              f"({large['patching_cells']} cells) {large['patching_s']:.0f} s")  # fmt: skip
        print(f"  peak resident memory {large['peak_rss_gb']:.2f} GB (target <= 8 GB): "
              f"{'met' if large['peak_rss_gb'] <= 8 else 'NOT met'}")  # fmt: skip
    if not args.skip_equality:
        if not (Path(args.equality_folder) / "config.json").exists():
            build_published("nllb-600m", args.equality_folder)
        equal = child("equality", args)
        print(json.dumps(equal))
        worst = max(equal["attention_max_diff"], equal["patching_max_diff"])
        print(f"NLLB-600M size, offloaded ({equal['plan']}) against in memory: attention {equal['attention_max_diff']:.1e}, "
              f"patching {equal['patching_max_diff']:.1e} (target <= 1e-5: {'met' if worst <= 1e-5 else 'NOT met'})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
