"""Model files that are damaged, crafted or not files at all: each is refused with one clear line before
anything large is allocated; abandoned partial files of killed saves are tidied up; the shipped models load."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from model.files import atomic_output
from model.io import checkpoint
from model.io.checkpoint import CheckpointError, ModelBundle
from model.io.shipped import shipped_models
from model.nn.config import TransformerConfig
from model.nn.transformer import Transformer
from tests.conftest import tiny_bundle


@pytest.fixture(scope="module")
def small():
    """An untrained tiny model (built in about a second) and its file's bytes."""
    bundle, _ = tiny_bundle("copy", size=300)
    return bundle, checkpoint.to_bytes(bundle)


def split(data: bytes) -> tuple[dict, bytes]:
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size]), data[8 + size :]


def join(header: dict, body: bytes) -> bytes:
    raw = json.dumps(header).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + body


def with_metadata(data: bytes, **changes) -> bytes:
    """The file with metadata entries replaced (JSON-encoded unless text; None removes the entry)."""
    header, body = split(data)
    for key, value in changes.items():
        if value is None:
            header["__metadata__"].pop(key, None)
        else:
            header["__metadata__"][key] = value if isinstance(value, str) else json.dumps(value)
    return join(header, body)


def with_config(data: bytes, **changes) -> bytes:
    header, _ = split(data)
    config = {**json.loads(header["__metadata__"]["config"]), **changes}
    return with_metadata(data, config=config)


def crafted_files(data: bytes) -> dict[str, tuple[bytes, str]]:
    """Name -> (file bytes, what the one-line message must say), each made from a real model's bytes."""
    header, body = split(data)
    vocab = json.loads(header["__metadata__"]["config"])["source_vocab_size"]
    weight = header["model.encoder_layers.0.feed_forward.expand.weight"]
    flipped = bytearray(data)
    flipped[len(data) - len(body) + weight["data_offsets"][0] + 5] ^= 0x10
    return {
        "flipped byte": (bytes(flipped), "the file is damaged (its contents do not match its checksum)"),
        "eos outside": (with_config(data, eos_id=vocab + 5), "eos_id must be a piece id"),
        "bos outside": (with_config(data, bos_id=-1), "bos_id must be a piece id"),
        "pad outside": (with_config(data, pad_id=10**9), "pad_id must be a piece id"),
        "corpus list": (with_metadata(data, corpus=["copy"]), "corpus must be a JSON object, got list"),
        "corpus string": (with_metadata(data, corpus='"copy"'), "corpus must be a JSON object, got str"),
        "corpus field": (with_metadata(data, corpus={"name": "copy", "seed": "one"}), "corpus's seed"),
        "history list": (with_metadata(data, history=[1, 2]), "history must be a JSON object, got list"),
        "history steps": (with_metadata(data, history={"steps": "many"}), "steps must be rows of numbers"),
        "history samples": (with_metadata(data, history={"validations": [{"samples": [[1, 2]]}]}), "sample translations as text"),
        "training string": (with_metadata(data, training='"fast"'), "training must be a JSON object, got str"),
        "config list": (with_metadata(data, config=[1]), "config must be a JSON object"),
        "wide model": (with_config(data, d_model=16384), "d_model (16,384) is beyond"),
        "wider model": (with_config(data, d_model=4096), "do not fit the model's config"),
        "million layers": (with_config(data, n_encoder_layers=10**6), "n_encoder_layers (1,000,000) is beyond"),
        "huge d_ff": (with_config(data, d_ff=10**12), "d_ff (1,000,000,000,000) is beyond"),
        "huge max_len": (with_config(data, max_len=10**9), "max_len (1,000,000,000) is beyond"),
    }


CASES = [
    "flipped byte",
    "eos outside",
    "bos outside",
    "pad outside",
    "corpus list",
    "corpus string",
    "corpus field",
    "history list",
    "history steps",
    "history samples",
    "training string",
    "config list",
    "wide model",
    "wider model",
    "million layers",
    "huge d_ff",
    "huge max_len",
]


@pytest.mark.parametrize("case", CASES)
def test_a_crafted_file_is_refused_with_one_line(small, tmp_path, case):
    assert sorted(crafted_files(small[1])) == sorted(CASES)
    data, expected = crafted_files(small[1])[case]
    path = tmp_path / "crafted.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    message = str(caught.value)
    assert expected in message and message.startswith(f"{path}: ") and "\n" not in message
    with pytest.raises(CheckpointError, match="^model file: "):
        checkpoint.from_bytes(data)  # the same checks on bytes


def test_saved_files_carry_a_digest_and_older_ones_without_it_still_load(small, tmp_path):
    bundle, data = small
    header, _ = split(data)
    assert len(header["__metadata__"][checkpoint.DIGEST_KEY]) == 64
    older = tmp_path / "older.safetensors"
    older.write_bytes(with_metadata(data, **{checkpoint.DIGEST_KEY: None}))
    loaded = checkpoint.load(older)
    assert torch.equal(
        loaded.model.encoder_layers[0].feed_forward.expand.weight, bundle.model.encoder_layers[0].feed_forward.expand.weight
    )
    assert set(shipped_models()) == {"default", "copy", "reverse", "rnn-bahdanau", "tagger"}  # not their timelines
    for name, path in shipped_models().items():  # re-trained with their presets: saved with a digest that holds
        assert len(split(path.read_bytes())[0]["__metadata__"][checkpoint.DIGEST_KEY]) == 64, name
        assert checkpoint.load(path).corpus.name in ("toy-fr", "copy", "reverse", "toy-fr-tags"), name


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_model_with_non_finite_weights_is_refused(small, tmp_path, value):
    bundle, _ = small
    weight = bundle.model.decoder_layers[1].feed_forward.contract.weight
    original = weight.detach().clone()
    with torch.no_grad():
        weight[3, 4] = value
    try:
        data = checkpoint.to_bytes(bundle)  # its digest matches: only the values are wrong
    finally:
        with torch.no_grad():
            weight.copy_(original)
    path = tmp_path / "nan.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match="NaN or infinite weights \\(decoder_layers.1.feed_forward.contract"):
        checkpoint.load(path)


def test_a_tokenizer_larger_than_the_vocabulary_is_refused(small, tmp_path):
    bundle, _ = small
    pieces = bundle.source_tokenizer.vocab_size
    config = TransformerConfig(**{**bundle.config.to_dict(), "source_vocab_size": pieces - 4, "target_vocab_size": pieces - 4})
    mismatched = ModelBundle(Transformer(config), bundle.source_tokenizer, bundle.target_tokenizer, bundle.corpus)
    path = tmp_path / "mismatch.safetensors"
    checkpoint.save(mismatched, path)
    with pytest.raises(
        CheckpointError, match=f"source tokenizer has {pieces} pieces, more than the model's vocabulary of {pieces - 4}"
    ):
        checkpoint.load(path)


def test_a_file_longer_or_shorter_than_its_header_is_refused_before_reading_it(small, tmp_path):
    path = tmp_path / "padded.safetensors"
    path.write_bytes(small[1])
    os.truncate(path, 50 * 2**30)  # 50 GiB (sparse): reading it whole would exhaust memory
    with pytest.raises(CheckpointError, match="longer than its header describes: 53,687,091,200 bytes"):
        checkpoint.load(path)
    os.truncate(path, len(small[1]) - 1)
    with pytest.raises(CheckpointError, match="truncated"):
        checkpoint.load(path)


def test_non_regular_files_are_refused_without_opening_them(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointError, match=r"model.fifo: is not a regular file \(a FIFO\)"):
        checkpoint.load(fifo)  # opening a FIFO for reading would block here forever
    with pytest.raises(CheckpointError, match=r"/dev/null: is not a regular file \(a character device\)"):
        checkpoint.load("/dev/null")


def test_abandoned_partial_files_are_removed_at_the_next_write(tmp_path):
    target = tmp_path / "model.safetensors"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    old = tmp_path / ".model.safetensors.k2j4l1ab.partial"  # the older naming, untouched for two minutes
    fresh = tmp_path / ".model.safetensors.zz9x8w7v.partial"  # the older naming, written just now
    killed = tmp_path / f".model.safetensors.{dead.pid}-abcdefgh.partial"  # its writer no longer runs
    live = tmp_path / f".model.safetensors.{os.getppid()}-qrstuvwx.partial"  # its writer still runs
    other = tmp_path / ".other.safetensors.k2j4l1ab.partial"  # another file's, never touched here
    for path in (old, fresh, killed, live, other):
        path.write_bytes(b"half a model")
    two_minutes_ago = time.time() - 120
    for path in (old, other):
        os.utime(path, (two_minutes_ago, two_minutes_ago))
    with atomic_output(target) as temporary:
        assert temporary.name.startswith(f".model.safetensors.{os.getpid()}-")
        temporary.write_bytes(b"the model")
    assert target.read_bytes() == b"the model"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, live.name, other.name, target.name])


def test_everything_shipped_under_resources_stays_under_50_mb():
    """resources/ is installed with the package (models, their timelines, screenshots): a user downloads all of it."""
    folder = Path(__file__).resolve().parents[3] / "resources"
    total = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    assert total < 50 * 1024 * 1024, f"resources/ holds {total / 1024 / 1024:.1f} MB"
