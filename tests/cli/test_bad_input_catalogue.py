"""The catalogue of bad inputs: every command (train, translate, evaluate, trace, export) given broken
model files, broken corpora and options it must refuse. Each case must end with a non-zero exit, a
message naming the problem, no traceback, and every file that existed before byte-identical (and no
new file left behind)."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

from model.cli.commands import main
from model.io import checkpoint

TEXT = "a b c"


def _header(data: bytes) -> tuple[dict, int]:
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size]), size


def _with_header(data: bytes, header: dict) -> bytes:
    _, size = _header(data)
    encoded = json.dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded + data[8 + size :]


def _metadata_edit(data: bytes, **changes) -> bytes:
    header, _ = _header(data)
    header["__metadata__"].update(changes)
    return _with_header(data, header)


def _config_edit(data: bytes, **changes) -> bytes:
    header, _ = _header(data)
    config = json.loads(header["__metadata__"]["config"])
    config.update(changes)
    header["__metadata__"]["config"] = json.dumps(config)
    return _with_header(data, header)


def _nan_weights(data: bytes) -> bytes:
    """The same file with NaN in one float32 weight and the checksum dropped (as an older file)."""
    header, size = _header(data)
    header["__metadata__"].pop("tensor_sha256", None)
    body = bytearray(data[8 + size :])
    name = max(
        (key for key in header if key != "__metadata__" and header[key]["dtype"] == "F32"),
        key=lambda key: header[key]["data_offsets"][1],
    )
    end = header[name]["data_offsets"][1]
    body[end - 4 : end] = struct.pack("<f", float("nan"))
    return _with_header(data[: 8 + size], header) + bytes(body)


def crafted_models(good: bytes) -> dict[str, tuple[bytes | None, str]]:
    """name -> (file bytes, or None for a folder; a fragment of the message expected)."""
    header, size = _header(good)
    foreign = dict(header)
    foreign.pop("__metadata__")
    return {
        "empty": (b"", "too short"),
        "four-bytes": (b"\x00\x01\x02\x03", "too short"),
        "text": (b"this is not a model\n" * 20, "not a Transformer Explorer model"),
        "json": (json.dumps({"config": {}}).encode() * 5, "not a Transformer Explorer model"),
        "pickle": (b"\x80\x04\x95" + os.urandom(200), "not a Transformer Explorer model"),
        "random": (os.urandom(4096), "not a Transformer Explorer model"),
        "huge-header-size": (struct.pack("<Q", 2**60) + good[8:], "not a Transformer Explorer model"),
        "header-not-json": (struct.pack("<Q", 20) + b"{not json at all!!!}" + good[28:], "unreadable header"),
        "truncated-half": (good[: len(good) // 2], "truncated"),
        "truncated-header": (good[: 8 + size // 2], "truncated"),
        "foreign-safetensors": (_with_header(good, foreign), "not a Transformer Explorer model"),
        "wrong-format": (_metadata_edit(good, format="something-else"), "not a Transformer Explorer model"),
        "config-not-json": (_metadata_edit(good, config="{{{"), "damaged"),
        "config-missing-field": (_metadata_edit(good, config=json.dumps({"d_model": 32})), "config"),
        "heads-not-dividing": (_config_edit(good, n_heads=5), "damaged"),
        "layers-mismatch": (_config_edit(good, n_encoder_layers=7), "do not fit"),
        "flipped-byte": (good[:-40] + bytes([good[-40] ^ 0x10]) + good[-39:], "damaged"),
        "nan-weights": (_nan_weights(good), "NaN or infinite"),
        "absurd-d-model": (_config_edit(good, d_model=16384), "config"),
        "million-layers": (_config_edit(good, n_encoder_layers=1_000_000), "config"),
        "eos-outside": (_config_edit(good, eos_id=10**6), "eos"),
        "corpus-a-list": (_metadata_edit(good, corpus=json.dumps([1, 2])), "corpus"),
        "folder": (None, "folder"),
    }


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, copy_bundle):
    """A folder with a good model, corpora, earlier outputs and every crafted model file."""
    folder = tmp_path_factory.mktemp("catalogue")
    model = folder / "model.safetensors"
    checkpoint.save(copy_bundle[0], model)
    good = model.read_bytes()
    for name in ("model.npz", "model.png", "model.html"):  # a model whose name is also a valid output name
        (folder / name).write_bytes(good)
    for name, (data, _message) in crafted_models(good).items():
        path = folder / f"bad-{name}.safetensors"
        if data is None:
            path.mkdir()
        else:
            path.write_bytes(data)
    (folder / "pairs.tsv").write_text("".join("a b\tb a\n" for _ in range(50)), encoding="utf-8")
    (folder / "empty.tsv").write_bytes(b"")
    (folder / "blank.tsv").write_text("\n\n   \n", encoding="utf-8")
    (folder / "one-column.tsv").write_text("only a source\nanother\n", encoding="utf-8")
    (folder / "latin1.tsv").write_bytes("caf\xe9\tcoffee\n".encode("latin-1"))
    (folder / "binary.tsv").write_bytes(os.urandom(2000))
    (folder / "source.txt").write_text("a b\nc d\n", encoding="utf-8")
    (folder / "target-short.txt").write_text("b a\n", encoding="utf-8")
    (folder / "earlier.png").write_bytes(b"an earlier figure")
    (folder / "earlier.npz").write_bytes(b"an earlier trace")
    (folder / "earlier.html").write_bytes(b"an earlier page")
    (folder / "a-folder").mkdir()
    (folder / "a-folder.html").mkdir()
    os.mkfifo(folder / "a-fifo")  # opening it for reading would wait forever
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        for path in sorted(folder.rglob("*"))
    }


def _model_case_list() -> list[tuple[list[str], str]]:
    names = [
        "empty",
        "four-bytes",
        "text",
        "json",
        "pickle",
        "random",
        "huge-header-size",
        "header-not-json",
        "truncated-half",
        "truncated-header",
        "foreign-safetensors",
        "wrong-format",
        "config-not-json",
        "config-missing-field",
        "heads-not-dividing",
        "layers-mismatch",
        "flipped-byte",
        "nan-weights",
        "absurd-d-model",
        "million-layers",
        "eos-outside",
        "corpus-a-list",
        "folder",
        "missing",
    ]
    commands = [
        ["translate", "--model", "{m}", TEXT],
        ["trace", "--model", "{m}", "--text", TEXT, "--out", "t.npz"],
        ["export", "--model", "{m}", "--text", TEXT, "--out", "x.png"],
        ["evaluate", "--model", "{m}", "--corpus", "copy", "--n", "5"],
    ]
    cases = []
    for name in names:
        for command in commands:
            model = "no-such-model.safetensors" if name == "missing" else f"bad-{name}.safetensors"
            cases.append(([part.format(m=model) for part in command], "MODEL:" + name))
    return cases


OPTION_CASES: list[tuple[list[str], str]] = [
    # translate
    (["translate", "--model", "model.safetensors", "   "], "empty"),
    (["translate", "--model", "model.safetensors", "--beam", "0", TEXT], "--beam"),
    (["translate", "--model", "model.safetensors", "--beam", "-3", TEXT], "--beam"),
    (["translate", "--model", "model.safetensors", "--beam", "x", TEXT], "invalid int"),
    (["translate", "--model", "model.safetensors", "--device", "cuda:9", TEXT], "cuda"),
    (["translate", "--model", "model.safetensors", "--device", "tpu", TEXT], "device"),
    (["translate", "--model", "model.safetensors"], "required"),
    (["translate", TEXT], "--model"),
    (["translate", "--model", "a-folder", TEXT], "folder"),
    # trace
    (["trace", "--model", "model.safetensors", "--text", "", "--out", "t.npz"], "empty"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--force", "x"], "STEP:TOKEN"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--force", "0:a"], "STEP:TOKEN"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--force", "1:nosuchpiece"], "not a single piece"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--force", "99:a"], "ended"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--sample", "--temperature", "0"], "temperature"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--sample", "--temperature", "-1"], "temperature"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--sample", "--top-p", "0"], "top-p"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--sample", "--top-p", "1.5"], "top-p"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--sample", "--top-k", "-2"], "top-k"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--beam", "2", "--sample"], "not allowed"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "model.safetensors"], "--out"),
    (["trace", "--model", "model.npz", "--text", TEXT, "--out", "model.npz"], "input"),
    (["export", "--model", "model.png", "--text", TEXT, "--out", "model.png"], "input"),
    (["export", "--model", "model.png", "--view", "positional", "--out", "model.png"], "input"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "nowhere/t.npz"], "does not exist"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "a-folder"], "folder"),
    (["trace", "--model", "model.safetensors", "--text", TEXT], "--out"),
    # evaluate
    (["evaluate", "--model", "model.safetensors", "--corpus", "copy", "--n", "0"], "positive"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "copy", "--n", "-4"], "positive"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "pairs.tsv", "--n", "5"], "built-in corpus"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "nowhere.tsv"], "no such file"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "empty.tsv"], "empty"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "blank.tsv"], "blank.tsv"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "one-column.tsv"], "one-column.tsv:1"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "latin1.tsv"], "UTF-8"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "binary.tsv"], "binary.tsv"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "a-folder"], "folder"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "source.txt", "--target", "target-short.txt"], "lines"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "source.txt", "--target", "nowhere.txt"], "no such file"),
    # export
    (["export", "--model", "model.safetensors", "--text", TEXT, "--out", "x.bmp"], "--out must end in"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--out", "x"], "--out must end in"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--out", "nowhere/x.svg"], "does not exist"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--out", "a-folder"], "--out must end in"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--layer", "0", "--out", "x.png"], "layer"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--layer", "9", "--out", "x.png"], "layer"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--head", "0", "--out", "x.png"], "head"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--head", "9", "--out", "x.png"], "head"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--head", "median", "--out", "x.png"], "head"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--head", "rollout", "--out", "x.png"], "rollout"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--step", "-1", "--out", "x.png"], "step"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--step", "99", "--out", "x.png"], "step"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--width", "0.1", "--out", "x.png"], "width"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--width", "wide", "--out", "x.png"], "width"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--width", "-3cm", "--out", "x.png"], "width"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--width", "nan", "--out", "x.png"], "width"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--height", "0.1", "--out", "x.png"], "height"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--font-size", "1", "--out", "x.png"], "font size"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--font-size", "nan", "--out", "x.png"], "font size"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--dpi", "5", "--out", "x.png"], "dpi"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--dpi", "99999", "--out", "x.png"], "dpi"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--colormap", "nope", "--out", "x.png"], "colour map"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--beam", "0", "--out", "x.png"], "--beam"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--view", "lines", "--heads", "9", "--out", "x.png"], "heads"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--view", "lines", "--heads", "a,b", "--out", "x.png"], "--heads"),
    (
        [
            "export",
            "--model",
            "model.safetensors",
            "--text",
            TEXT,
            "--view",
            "lines",
            "--head",
            "2",
            "--heads",
            "1",
            "--out",
            "x.png",
        ],
        "heads drawn",
    ),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--view", "nope", "--out", "x.png"], "--view"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--kind", "nope", "--out", "x.png"], "--kind"),
    (["export", "--model", "model.safetensors", "--out", "x.png"], "--text"),
    (["export", "--model", "model.safetensors", "--text", "   ", "--out", "x.png"], "empty"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--out", "model.safetensors"], "--out must end in"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--all", "--out", "earlier.png"], "folder"),
    (["export", "--model", "model.safetensors", "--view", "positional", "--positions", "1", "--out", "p.png"], "--positions"),
    (["export", "--model", "model.safetensors", "--view", "positional", "--positions", "9999", "--out", "p.png"], "--positions"),
    (["export", "--model", "model.safetensors", "--view", "positional", "--dimensions", "999", "--out", "p.png"], "--dimensions"),
    (["export", "--model", "model.safetensors", "--view", "positional", "--dimensions", "x", "--out", "p.png"], "--dimensions"),
    # export: the interactive page (.html)
    (["export", "--model", "model.html", "--text", TEXT, "--out", "model.html"], "input"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--out", "nowhere/page.html"], "does not exist"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--out", "a-folder.html"], "is a folder"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--layer", "9", "--out", "earlier.html"], "layer"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--step", "99", "--out", "earlier.html"], "step"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--colormap", "nope", "--out", "earlier.html"], "colour map"),
    (["export", "--model", "model.safetensors", "--text", TEXT, "--view", "lines", "--out", "earlier.html"], "focus and grid"),
    # train: refused before anything slow
    (["train", "--corpus", "nowhere.tsv", "--out", "new.safetensors"], "not a built-in corpus"),
    (["train", "--corpus", "empty.tsv", "--out", "new.safetensors"], "empty"),
    (["train", "--corpus", "one-column.tsv", "--out", "new.safetensors"], "one-column.tsv:1"),
    (["train", "--corpus", "latin1.tsv", "--out", "new.safetensors"], "UTF-8"),
    (["train", "--corpus", "binary.tsv", "--out", "new.safetensors"], "binary.tsv"),
    (["train", "--corpus", "a-folder", "--out", "new.safetensors"], "folder"),
    (["train", "--corpus", "source.txt", "--target", "target-short.txt", "--out", "new.safetensors"], "lines"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--epochs", "0"], "positive"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--batch-size", "0"], "positive"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--warmup", "-1"], "positive"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--max-steps", "0"], "positive"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--max-minutes", "-1"], "positive"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--corpus-size", "0"], "positive"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--vocab-size", "0"], "positive"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--d-model", "30", "--heads", "4"], "divisible"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--device", "cuda:7"], "cuda"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--norm", "middle"], "--norm"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--positions", "rotary"], "--positions"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--tokenizer-type", "sentencepiece"], "--tokenizer-type"),
    (["train", "--corpus", "copy"], "--out"),
    (["train", "--out", "new.safetensors"], "--corpus"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--layers", "0"], "--layers"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--heads", "0"], "--heads"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--d-model", "-8"], "--d-model"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--max-len", "0"], "--max-len"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--lr-factor", "nan"], "--lr-factor"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--lr-factor", "0"], "--lr-factor"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--label-smoothing", "2"], "--label-smoothing"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--label-smoothing", "-1"], "--label-smoothing"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--clip-norm", "nan"], "--clip-norm"),
    (["train", "--corpus", "copy", "--out", "new.safetensors", "--dropout", "1.5"], "--dropout"),
    (["train", "--corpus", "pairs.tsv", "--out", "pairs.tsv"], "input"),
    (["train", "--corpus", "source.txt", "--target", "target-short.txt", "--out", "target-short.txt"], "input"),
    (["train", "--corpus", "copy", "--out", "a-folder"], "folder"),
    (["train", "--corpus", "copy", "--out", ""], "empty"),
    (["train", "--corpus", "copy", "--out", "nowhere/new.safetensors"], "does not exist"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--beam", "0"], "beam"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--max-steps", "0"], "max"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--alpha", "nan"], "alpha"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--seed", str(2**70)], "seed"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--force", "²:a"], "STEP"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--force", "1:a", "--force", "1:b"], "step 1"),
    (
        ["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--sample", "--temperature", "nan"],
        "temperature",
    ),
    (
        ["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.npz", "--sample", "--temperature", "1e-45"],
        "temperature",
    ),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", "t.txt"], ".npz"),
    (["trace", "--model", "model.safetensors", "--text", TEXT, "--out", ""], "empty"),
    (["translate", "--model", "model.safetensors", "--alpha", "nan", TEXT], "alpha"),
    (["evaluate", "--model", "model.safetensors", "--corpus", "copy", "--aer-pairs", "-1"], "--aer-pairs"),
    (["translate", "--model", "a-fifo", TEXT], "not a regular file"),
    (["trace", "--model", "a-fifo", "--text", TEXT, "--out", "t.npz"], "not a regular file"),
    (["export", "--model", "a-fifo", "--text", TEXT, "--out", "x.png"], "not a regular file"),
    # general
    (["frobnicate"], "invalid choice"),
    (["translate", "--model"], "expected one argument"),
]


def _case_id(case) -> str:
    args, _ = case
    return " ".join(args)[:80]


@pytest.mark.parametrize(
    "args,expected", _model_case_list() + OPTION_CASES, ids=[_case_id(c) for c in _model_case_list() + OPTION_CASES]
)
def test_every_bad_input_is_one_clear_message_and_nothing_changes(workspace, monkeypatch, capsys, args, expected):
    monkeypatch.chdir(workspace)
    if expected.startswith("MODEL:"):
        name = expected.removeprefix("MODEL:")
        expected = "no such file" if name == "missing" else crafted_models((workspace / "model.safetensors").read_bytes())[name][1]
    before = snapshot(workspace)
    code = main(list(args))
    captured = capsys.readouterr()
    assert code != 0, captured.out
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert expected.lower() in captured.err.lower(), captured.err
    assert snapshot(workspace) == before  # every file byte-identical, nothing new left behind


def test_the_catalogue_is_large_enough():
    assert len(_model_case_list()) + len(OPTION_CASES) >= 150
