"""The corpus index of a published model's size (issue 41: "a 2,000-sentence corpus index of an NLLB-600M-size model
≤ 5 minutes"), against the library's own batched greedy ``generate`` on the same sentences, in one run.

The index decodes every sentence greedily (batched, as ``generate`` does) and reads it once more through the hooked
pass (every layer's residual stream, every head's queries, keys and probabilities); the PCA's first sentences are read
twice (once to fit it) but decoded once. ``generate`` decodes the same sentences in the same batches with the same
length limit (``max_new_tokens`` the index's own limit): the floor of any tool that reads a model's translations. The
ratio index / generate is printed with the peak memory, and the index's time per sentence scaled to 2,000 sentences.
The folder is built once (``python -m model.pretrained.tiny DIR --published nllb-600m``, random weights: such a model
does not stop on its end token, so every sentence runs to its length limit, about 4 times a trained model's output).

    python benchmarks/pretrained_index.py [--model /tmp/te-real-sizes/nllb-600m] [--sentences 100]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import torch
from common import print_table

from model.corpus.build import IndexBuilder, IndexOptions
from model.corpus.sources import IndexCorpus, read_sentences
from model.decoding.greedy import default_max_target
from model.io.models import open_model
from model.pretrained.tiny import build_published
from model.runtime import follow_cores_in_this_thread

TARGET_S, TARGET_SENTENCES = 300.0, 2000


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: kB


@torch.inference_mode()
def generate_seconds(bundle, sources: list[str], batch_size: int) -> tuple[float, int]:
    """The library's greedy ``generate`` over ``sources`` in batches of similar length -> (seconds, target tokens)."""
    network = bundle.model
    config = network.config
    rows = sorted((bundle.source_ids(text)[0] for text in sources), key=len)
    started, tokens = time.perf_counter(), 0
    for start in range(0, len(rows), batch_size):
        batch = rows[start : start + batch_size]
        ids = torch.nn.utils.rnn.pad_sequence([torch.tensor(row) for row in batch], True, config.pad_id)  # [B, S]
        limit = max(default_max_target(len(row), config.max_len) for row in batch)
        out = network.hf_model.generate(
            input_ids=ids,
            attention_mask=ids.ne(config.pad_id).long(),
            do_sample=False,
            num_beams=1,
            max_new_tokens=limit - 1,
            forced_bos_token_id=config.forced_bos_id,
        )
        tokens += int(out.ne(config.pad_id).sum())
    return time.perf_counter() - started, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="/tmp/te-real-sizes/nllb-600m", help="a Hugging Face folder (built if absent)")
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=IndexOptions().batch_size)
    args = parser.parse_args()
    follow_cores_in_this_thread()
    folder = Path(args.model)
    if not (folder / "config.json").exists():
        build_published("nllb-600m", folder)
    bundle = open_model(str(folder))
    corpus = IndexCorpus("toy-fr", limit=args.sentences)
    print(
        f"{bundle.describe()}; {args.sentences} toy-fr sentences; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    out = Path(tempfile.mkdtemp(prefix="pretrained-index-")) / "index"
    options = IndexOptions(batch_size=args.batch_size, pca_sentences=min(IndexOptions().pca_sentences, args.sentences))
    started = time.perf_counter()
    result = IndexBuilder(bundle, str(folder), corpus, out, options).run()
    index_s = time.perf_counter() - started
    counts = result.counts
    shutil.rmtree(out.parent, ignore_errors=True)
    generate_s, generated = generate_seconds(bundle, [pair.source for pair in read_sentences(corpus)], args.batch_size)
    per_2000 = index_s / args.sentences * TARGET_SENTENCES
    rows = [
        ["index", f"{index_s:.1f}", f"{counts['decoder_tokens']:,} target tokens", f"{per_2000:.0f}", f"{per_2000 / TARGET_S:.2f}"],
        ["generate (the library's)", f"{generate_s:.1f}", f"{generated:,} tokens", f"{generate_s / args.sentences * 2000:.0f}", ""],
    ]
    print_table(["", "seconds", "output", f"scaled to {TARGET_SENTENCES:,} (s)", "/ target 300 s"], rows)
    print(f"index / generate: {index_s / generate_s:.2f}; peak memory {peak_gb():.1f} GB")


if __name__ == "__main__":
    main()
