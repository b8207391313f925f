"""Per-step latency of the Stepper on pretrained-layout T5 models (tiny, and t5-base's size with random
weights), against the library's own ``generate`` with ``output_attentions=True`` (greedy, the same number of
new tokens), and whether both produce the same tokens. Target: the stepper is not slower.

The stepper's step records every layer's and head's decoder self- and cross-attention row and the top
candidates; ``generate`` with ``output_attentions`` and ``return_dict_in_generate`` returns the same
attention. Both run the model's eager attention and its own key/value cache. Per step = whole decode / steps.

    python benchmarks/pretrained_step.py [--steps 32] [--repeats 3] [--skip-base]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from common import print_table

from model.decoding.stepper import DecodingOptions, Stepper
from model.pretrained.loading import environment_summary, load_pretrained
from model.pretrained.tiny import build

SENTENCE = "translate English to French: the young teacher that the children love does not go to the old market ."


def stepper_seconds(bundle, steps: int) -> tuple[float, list[int]]:
    """(seconds, the tokens it produced: a decoder-only model's after its prompt's given ones)."""
    start = time.perf_counter()
    stepper = Stepper(bundle, SENTENCE, DecodingOptions(max_steps=steps, stop_at_eos=False))
    stepper.run()
    stepper.trace()
    prompt = 0 if bundle.family.capabilities.architecture.has_encoder else len(stepper.given)
    return time.perf_counter() - start, stepper.target_ids()[prompt:]


@torch.inference_mode()
def generate_seconds(bundle, steps: int) -> tuple[float, list[int]]:
    ids, _, _ = bundle.source_ids(SENTENCE)
    source = torch.tensor([ids])
    start = time.perf_counter()
    output = bundle.model.hf_model.generate(
        input_ids=source,
        attention_mask=torch.ones_like(source),
        max_new_tokens=steps,
        min_new_tokens=steps,  # as the stepper with stop_at_eos off: the same number of steps
        do_sample=False,
        num_beams=1,
        output_attentions=True,
        return_dict_in_generate=True,
    )
    decoder_only = not bundle.family.capabilities.architecture.has_encoder
    return time.perf_counter() - start, output.sequences[0, source.shape[1] if decoder_only else 1 :].tolist()


def measure(label: str, bundle, steps: int, repeats: int) -> list:
    stepper_seconds(bundle, 4)  # warm up both paths
    generate_seconds(bundle, 4)
    ours, theirs = [], []
    for _ in range(repeats):  # alternated, so that load from other programs falls on both
        seconds, our_tokens = stepper_seconds(bundle, steps)
        ours.append(seconds)
        seconds, their_tokens = generate_seconds(bundle, steps)
        theirs.append(seconds)
    same = our_tokens == their_tokens
    if not same:  # min_new_tokens forbids EOS in generate; the stepper may choose it
        eos = bundle.config.eos_id
        same = [t for t in our_tokens if t != eos][: len(their_tokens)] == [t for t in their_tokens if t != eos][: len(our_tokens)]
    per_ours, per_theirs = min(ours) / steps * 1000, min(theirs) / steps * 1000
    return [
        label,
        f"{bundle.model.parameter_count():,}",
        f"{per_ours:.2f}",
        f"{per_theirs:.2f}",
        f"{per_theirs / per_ours:.2f}x",
        "yes" if same else "NO",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-base", action="store_true", help="only the tiny model")
    args = parser.parse_args()
    print(environment_summary(), f"torch threads {torch.get_num_threads()}")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        sizes = ("tiny",) if args.skip_base else ("tiny", "base")
        for size in sizes:
            bundle = load_pretrained(str(build("t5", f"{folder}/{size}", size=size)))
            rows.append(measure(f"T5 {size}", bundle, args.steps, args.repeats))
            del bundle
    print_table(["model", "parameters", "stepper ms/step", "generate ms/step", "stepper speed-up", "same tokens"], rows)


if __name__ == "__main__":
    main()
