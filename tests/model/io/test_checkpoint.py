"""Model files: self-contained round trips, no code execution on load, atomic saves, clear errors."""

import os
import pickle

import pytest
import torch

from model.io import checkpoint
from model.io.checkpoint import CheckpointError


def outputs(bundle):
    source = torch.tensor([bundle.source_tokenizer.encode("a b c d") + [3]])
    target = torch.tensor([[2] + bundle.target_tokenizer.encode("a b")])
    with torch.no_grad():
        return bundle.model.inspect(source, target)[0]


def test_round_trip_keeps_everything(copy_bundle, tmp_path):
    bundle, _ = copy_bundle
    path = tmp_path / "my model (copy) é"  # the file name is whatever the user gives
    checkpoint.save(bundle, path)
    loaded = checkpoint.load(path)
    assert loaded.config == bundle.config
    assert torch.equal(outputs(loaded), outputs(bundle))
    assert loaded.source_tokenizer.model_proto == bundle.source_tokenizer.model_proto
    assert loaded.target_tokenizer is loaded.source_tokenizer  # joint vocabulary stored once
    assert loaded.corpus.name == "copy" and loaded.history["steps"]
    assert loaded.path == str(path)


def test_loading_a_pickle_never_executes_it(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    evil = tmp_path / "evil.safetensors"
    evil.write_bytes(pickle.dumps(Payload()))
    with pytest.raises(CheckpointError, match="not a Transformer Explorer model"):
        checkpoint.load(evil)
    torch_file = tmp_path / "torch.pt"
    torch.save({"payload": Payload()}, torch_file)
    with pytest.raises(CheckpointError):
        checkpoint.load(torch_file)
    assert not marker.exists()


def test_truncated_corrupt_and_foreign_files(copy_bundle, tmp_path):
    bundle, _ = copy_bundle
    data = checkpoint.to_bytes(bundle)
    truncated = tmp_path / "truncated"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated|damaged"):
        checkpoint.load(truncated)
    corrupt = tmp_path / "corrupt"
    corrupt.write_bytes(data[:8] + b"#" + data[9:])
    with pytest.raises(CheckpointError):
        checkpoint.load(corrupt)
    from safetensors.torch import save_file

    foreign = tmp_path / "foreign.safetensors"
    save_file({"weight": torch.zeros(3)}, foreign)
    with pytest.raises(CheckpointError, match="not a Transformer Explorer model"):
        checkpoint.load(foreign)
    for empty in (b"", b"1234"):
        (tmp_path / "tiny").write_bytes(empty)
        with pytest.raises(CheckpointError):
            checkpoint.load(tmp_path / "tiny")
    with pytest.raises(CheckpointError, match="no such file"):
        checkpoint.load(tmp_path / "absent")
    with pytest.raises(CheckpointError, match="folder"):
        checkpoint.load(tmp_path)


def test_an_interrupted_save_leaves_the_previous_file_intact(copy_bundle, tmp_path, monkeypatch):
    bundle, _ = copy_bundle
    path = tmp_path / "model.safetensors"
    checkpoint.save(bundle, path)
    before = path.read_bytes()

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(bundle, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]  # no partial file left


def test_saving_into_a_missing_folder_is_a_clear_error(copy_bundle, tmp_path):
    bundle, _ = copy_bundle
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpoint.save(bundle, tmp_path / "nope" / "model")
    with pytest.raises(CheckpointError, match="folder"):
        checkpoint.save(bundle, tmp_path)


def test_opening_a_model_does_not_import_torch_dynamo():
    """The shape check builds the network on the meta device, where an embedding's normal_ and PyTorch's reference
    arange import torch._dynamo (about a second of the app's start-up): every shipped family opens without it."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    script = (
        "import sys\n"
        "from model.io import checkpoint\n"
        "from model.io.shipped import shipped_models\n"
        "for name in ('default', 'rnn-bahdanau', 'tagger'):\n"
        "    checkpoint.load(shipped_models()[name])\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "False"
