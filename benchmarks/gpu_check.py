"""Everything CUDA-specific, in one command: run it whenever a GPU is at hand.

1. Training ``copy`` on the GPU (bf16 autocast, the trainer's own path) reaches exact match >= 0.99.
2. The stepper's trace on CUDA equals the CPU trace of the same model and sentence (every attention
   matrix, the candidates' probabilities) within 1e-4.
3. Beam search on CUDA gives the CPU's best hypothesis; an export (PNG and NPY) from the CUDA trace works.
4. Training throughput, tokens/s on the GPU against the CPU, the same model and batches.

Without a GPU it says so and exits 0. Exit 1 when a check fails.

    python benchmarks/gpu_check.py [--minutes 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402


def train_copy(device: torch.device, minutes: float):
    from model.data.corpora import CorpusSpec
    from model.training.evaluation import score
    from model.training.pipeline import TokenizerOptions, prepare
    from model.training.presets import builtin_preset
    from model.training.trainer import Trainer, TrainingOptions

    preset = builtin_preset("copy")
    bundle, splits = prepare(
        CorpusSpec("copy", size=preset.corpus_size), TokenizerOptions(**preset.tokenizer), dict(preset.model), seed=0
    )
    options = TrainingOptions.from_dict(dict(preset.training, max_minutes=minutes))
    result = Trainer(bundle.model, bundle.source_tokenizer, bundle.target_tokenizer, splits, options, device).run()
    scores = score(bundle.model, bundle.source_tokenizer, bundle.target_tokenizer, splits.test, device)
    bundle.model.to("cpu")
    return bundle, result, scores


def trace_on(bundle, device: torch.device, text: str, options):
    from model.decoding.stepper import Stepper

    bundle.model.to(device)
    try:
        stepper = Stepper(bundle, text, options)
        stepper.run()
        return stepper.trace()
    finally:
        bundle.model.to("cpu")


def tokens_per_second(bundle, device: torch.device, steps: int = 30) -> float:
    """Training steps on copy batches of 64 pairs; source + target pieces per second."""
    import copy
    import random

    from model.data.batching import collate, encode_pairs, length_batches
    from model.data.corpora import generate_builtin
    from model.training.trainer import make_optimizer, training_step

    model = copy.deepcopy(bundle.model).to(device)
    optimizer = make_optimizer(model)
    examples = encode_pairs(
        generate_builtin("copy", 64 * (steps + 5), 1), bundle.source_tokenizer, bundle.target_tokenizer, model.config
    )
    batches = [collate([examples[i] for i in b], 0, device) for b in length_batches(examples, 64, random.Random(0))]
    dtype = torch.bfloat16 if device.type == "cuda" else None
    for source, target in batches[:5]:
        training_step(model, optimizer, source, target, 0.1, 1.0, dtype)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    started, pieces = time.perf_counter(), 0
    for source, target in batches[5 : 5 + steps]:
        training_step(model, optimizer, source, target, 0.1, 1.0, dtype)
        pieces += int((source != 0).sum() + (target != 0).sum())
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return pieces / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0, help="training budget on the GPU")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU on this machine (or this PyTorch has no CUDA): nothing to check; exit 0")
        return 0
    from model.decoding.stepper import DecodingOptions
    from model.figures.export import ExportRequest, export_view

    device = torch.device("cuda:0")
    print(f"GPU: {torch.cuda.get_device_name(device)}; torch {torch.__version__}")
    failures = []

    bundle, result, scores = train_copy(device, args.minutes)
    ok = scores.exact_match >= 0.99
    failures += [] if ok else ["training"]
    print(
        f"1. bf16 training of copy on the GPU: {result.steps} steps ({result.stopped}); test exact match "
        f"{scores.exact_match:.4f}, BLEU {scores.bleu:.2f} -> {'ok' if ok else 'FAILED (< 0.99)'}"
    )

    text = "a b c d e f g h i j"
    greedy = DecodingOptions()
    cpu, cuda = trace_on(bundle, torch.device("cpu"), text, greedy), trace_on(bundle, device, text, greedy)
    worst = max(
        float(np.abs(getattr(cpu, kind) - getattr(cuda, kind)).max())
        for kind in ("encoder_self", "decoder_self", "cross", "candidate_probabilities")
    )
    same = cpu.target_tokens == cuda.target_tokens and worst <= 1e-4
    failures += [] if same else ["trace"]
    print(
        f"2. trace on CUDA against the CPU: largest difference {worst:.2e}, same output "
        f"{cpu.target_tokens == cuda.target_tokens} -> {'ok' if same else 'FAILED'}"
    )

    beam = DecodingOptions(strategy="beam", beam_width=4)
    cpu_beam, cuda_beam = trace_on(bundle, torch.device("cpu"), text, beam), trace_on(bundle, device, text, beam)
    with tempfile.TemporaryDirectory() as folder:
        written = [
            export_view(cuda_beam, ExportRequest(kind="cross", head="mean", dpi=100), Path(folder) / name)
            for name in ("cross.png", "cross.npy")
        ]
        exported = all(path.stat().st_size > 0 for path in written)
    beam_ok = cpu_beam.target_tokens == cuda_beam.target_tokens and exported
    failures += [] if beam_ok else ["beam/export"]
    print(
        f"3. beam search on CUDA: {' '.join(cuda_beam.target_tokens)!r} (CPU: {' '.join(cpu_beam.target_tokens)!r}); "
        f"export PNG and NPY {'written' if exported else 'FAILED'} -> {'ok' if beam_ok else 'FAILED'}"
    )

    gpu_rate, cpu_rate = tokens_per_second(bundle, device), tokens_per_second(bundle, torch.device("cpu"))
    print(f"4. training throughput: GPU {gpu_rate:,.0f} tokens/s, CPU {cpu_rate:,.0f} tokens/s ({gpu_rate / cpu_rate:.1f}x)")
    print("all GPU checks passed" if not failures else f"FAILED: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
