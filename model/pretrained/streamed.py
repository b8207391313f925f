"""A published-size NLLB folder with random weights, written tensor by tensor in a 16-bit type: NLLB-200-3.3B's
13 GB in float32 is never held, so the folder can be built on a machine whose memory it exceeds (the offloading
benchmark's, benchmarks/offload_large.py).

    python -m model.pretrained.streamed OUT_FOLDER [--size nllb-3.3b] [--dtype float16]

The model is made on PyTorch's ``meta`` device (shapes only); each tensor is then drawn (normal, std 0.02; a norm's
weight 1 and every bias 0, as the library initialises them), cast and written into safetensors shards of about
``SHARD_BYTES`` with the library's ``model.safetensors.index.json``, beside the config, generation config and
tokenizer that ``save_pretrained`` writes. Tied weights (the embeddings and the output layer) are written once, under
the name the library saves them by. Every file lands whole (written beside, then renamed).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from model.files import atomic_output
from model.pretrained.hub import require_transformers
from model.pretrained.offload import DTYPES
from model.pretrained.tiny import PUBLISHED, nllb_parts, sentences

SHARD_BYTES = 2 * 2**30


def _random_tensor(name: str, shape: torch.Size, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """A tensor as the library initialises one: a norm's weight 1, a bias 0, anything else normal (std 0.02)."""
    if name.endswith("bias"):
        return torch.zeros(shape, dtype=dtype)
    if "layer_norm" in name or "layernorm" in name:
        return torch.ones(shape, dtype=dtype)
    return torch.randn(shape, generator=generator).mul_(0.02).to(dtype)  # drawn in float32, then cast


def _stored_names(network: Any) -> list[tuple[str, torch.Size]]:
    """(name, shape) of each tensor the library saves: a tied weight once (under its first name, as the library saves
    it), persistent buffers kept."""
    first = dict(network.named_parameters())  # a tied weight under its first name only
    every = {name for name, _ in network.named_parameters(remove_duplicate=False)}
    return [(name, tensor.shape) for name, tensor in network.state_dict().items() if name in first or name not in every]


def _write_shards(folder: Path, names: list[tuple[str, torch.Size]], dtype: torch.dtype, seed: int) -> None:
    """The tensors into shards of about SHARD_BYTES and the index naming each tensor's shard."""
    generator = torch.Generator().manual_seed(seed)
    width = torch.tensor([], dtype=dtype).element_size()
    shards: list[list[tuple[str, torch.Size]]] = [[]]
    size = 0
    for name, shape in names:
        nbytes = shape.numel() * width
        if shards[-1] and size + nbytes > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append((name, shape))
        size += nbytes
    weight_map: dict[str, str] = {}
    total = 0
    for number, shard in enumerate(shards, start=1):
        file_name = f"model-{number:05d}-of-{len(shards):05d}.safetensors"
        tensors = {name: _random_tensor(name, shape, dtype, generator) for name, shape in shard}
        total += sum(tensor.numel() * width for tensor in tensors.values())
        with atomic_output(folder / file_name) as temporary:
            save_file(tensors, str(temporary), metadata={"format": "pt"})
        weight_map |= {name: file_name for name in tensors}
        del tensors
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with atomic_output(folder / "model.safetensors.index.json") as temporary:
        Path(temporary).write_text(json.dumps(index, indent=2), encoding="utf-8")


def build_streamed(folder: str | Path, size: str = "nllb-3.3b", dtype: str = "float16", seed: int = 0) -> Path:
    """Write an NLLB-layout folder of the published ``size`` (model/pretrained/tiny.py's PUBLISHED) with random
    weights stored in ``dtype``, never holding more than one shard's tensors."""
    layout, dims = PUBLISHED[size]
    if layout != "nllb":
        raise ValueError(f"only NLLB's layout is streamed, not {layout}")
    transformers = require_transformers()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        config, tokenizer, forced = nllb_parts(sentences(), Path(work), dims)
    config.torch_dtype = dtype
    with torch.device("meta"):
        network = transformers.M2M100ForConditionalGeneration(config)  # shapes only: nothing allocated
    network.generation_config.forced_bos_token_id = forced
    _write_shards(folder, _stored_names(network), DTYPES[dtype], seed)
    config.save_pretrained(folder)
    network.generation_config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.pretrained.streamed", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the folder to write")
    sizes = [name for name, (layout, _) in PUBLISHED.items() if layout == "nllb"]
    parser.add_argument("--size", default="nllb-3.3b", choices=sizes)
    parser.add_argument("--dtype", default="float16", choices=tuple(DTYPES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(build_streamed(args.out, args.size, args.dtype, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
