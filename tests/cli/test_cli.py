"""The command line: train, translate, evaluate; one-line errors, exit codes, Ctrl-C safety."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from model.cli.commands import main
from model.io import checkpoint

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--layers", "2", "--d-model", "32", "--heads", "4", "--d-ff", "64", "--vocab-size", "100", "--quiet"]


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "model", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


@pytest.fixture(scope="module")
def copy_model(tmp_path_factory):
    """A copy model trained by the CLI until it copies fresh sequences (about a minute on 2 cores)."""
    path = tmp_path_factory.mktemp("models") / "copy.safetensors"
    code = main(
        [
            "train",
            "--corpus",
            "copy",
            "--out",
            str(path),
            "--layers",
            "2",
            "--d-model",
            "128",
            "--heads",
            "8",
            "--d-ff",
            "256",
            "--lr-factor",
            "0.5",
            "--epochs",
            "50",
            "--max-steps",
            "1500",
            "--warmup",
            "400",
            "--corpus-size",
            "10000",
            "--valid-decode",
            "50",
            "--quiet",
            "--seed",
            "0",
        ]
    )
    assert code == 0
    return path


def test_a_cli_trained_copy_model_copies_fresh_sequences(copy_model, capsys):
    assert main(["evaluate", "--model", str(copy_model), "--corpus", "copy", "--n", "1000", "--seed", "4242", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) >= {"exact_match", "bleu", "token_accuracy"}
    # Quiet, this recipe scores exact match 0.993 (BLEU 99.9). Beside a busy process the trainer follows the free
    # cores, and other thread counts sum in another order: the same 1,500 steps then gave 0.987 and 0.989.
    assert scores["exact_match"] >= 0.98 and scores["bleu"] >= 98.5 and scores["token_accuracy"] >= 0.99


def test_translate_prints_the_translation(copy_model, capsys):
    assert main(["translate", "--model", str(copy_model), "a b c d e"]) == 0
    assert capsys.readouterr().out.strip() == "a b c d e"
    assert main(["translate", "--model", str(copy_model), "--beam", "3", "q", "r", "s"]) == 0
    assert capsys.readouterr().out.strip() == "q r s"


def test_evaluate_on_the_test_split_reports_plain_text(copy_model, capsys):
    assert main(["evaluate", "--model", str(copy_model), "--corpus", "copy"]) == 0
    output = capsys.readouterr().out
    assert "test split" in output and "exact match" in output and "BLEU" in output


def test_train_writes_a_loadable_model_with_every_option(tmp_path):
    path = tmp_path / "custom name.bin"
    result = run_cli(
        "train",
        "--corpus",
        "reverse",
        "--out",
        str(path),
        *TINY,
        "--max-steps",
        "5",
        "--norm",
        "pre",
        "--positions",
        "learned",
        "--dropout",
        "0.2",
        "--max-len",
        "40",
        "--no-tie-embeddings",
        "--separate-vocab",
        "--batch-size",
        "16",
        "--warmup",
        "10",
        "--lr-factor",
        "0.5",
        "--label-smoothing",
        "0.2",
        "--clip-norm",
        "0.5",
        "--seed",
        "3",
        "--corpus-size",
        "300",
        "--device",
        "cpu",
        "--encoder-layers",
        "1",
    )
    assert result.returncode == 0, result.stderr
    bundle = checkpoint.load(path)
    config = bundle.config
    assert (config.norm_placement, config.positional_encoding, config.max_len) == ("pre", "learned", 40)
    assert not config.tie_embeddings and not config.joint_vocab and config.dropout == 0.2
    assert bundle.training["batch_size"] == 16 and bundle.training["label_smoothing"] == 0.2


def test_user_tsv_corpus_trains_and_evaluates(tmp_path):
    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("".join(f"word{i} word{i + 1}\tmot{i} mot{i + 1}\n" for i in range(300)), encoding="utf-8")
    out = tmp_path / "m"
    result = run_cli("train", "--corpus", str(corpus), "--out", str(out), *TINY, "--max-steps", "3")
    assert result.returncode == 0, result.stderr
    result = run_cli("evaluate", "--model", str(out), "--corpus", str(corpus), "--json")
    assert result.returncode == 0, result.stderr
    assert 0 <= json.loads(result.stdout)["exact_match"] <= 1


@pytest.mark.parametrize(
    "args,message",
    [
        (["translate", "--model", "no-such-model", "hello"], "no such file"),
        (["train", "--corpus", "nowhere.tsv", "--out", "x"], "not a built-in corpus"),
        (["train", "--corpus", "copy", "--out", "x", "--d-model", "30", "--heads", "4"], "divisible"),
        (["train", "--corpus", "copy", "--out", "x", "--device", "cuda:7"], "cuda"),
        (["train", "--corpus", "copy", "--out", "x", "--epochs", "0"], "positive"),
        (["evaluate", "--model", "MODEL", "--corpus", "some.tsv", "--n", "5"], "built-in corpus"),
    ],
)
def test_errors_are_one_line_without_traceback(args, message, copy_model):
    args = [str(copy_model) if a == "MODEL" else a for a in args]
    result = run_cli(*args)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_bad_files_are_clear_errors(tmp_path):
    bad_model = tmp_path / "bad.safetensors"
    bad_model.write_bytes(b"\x80\x04garbage")
    result = run_cli("translate", "--model", str(bad_model), "hi")
    assert result.returncode == 1 and "not a Transformer Explorer model" in result.stderr
    bad_corpus = tmp_path / "bad.tsv"
    bad_corpus.write_text("fine\tbien\nbroken line\n")
    result = run_cli("train", "--corpus", str(bad_corpus), "--out", str(tmp_path / "m"), *TINY)
    assert result.returncode == 1 and "bad.tsv:2" in result.stderr and "Traceback" not in result.stderr
    result = run_cli(
        "train", "--corpus", str(bad_corpus), "--out", str(tmp_path / "m"), *TINY, "--skip-malformed", "--max-steps", "2"
    )
    assert "too few distinct pairs" in result.stderr or result.returncode == 0


def test_the_command_line_refuses_a_fifo_and_exits(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    result = subprocess.run(
        [sys.executable, "-m", "model", "translate", "--model", str(fifo), "a b"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
    )
    assert result.returncode != 0
    assert "is not a regular file (a FIFO)" in result.stderr and "Traceback" not in result.stderr


def test_empty_sentence_is_refused(copy_model):
    result = run_cli("translate", "--model", str(copy_model), "   ")
    assert result.returncode == 1 and "empty" in result.stderr


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery as on a terminal")
def test_ctrl_c_leaves_no_half_written_file(tmp_path):
    out = tmp_path / "interrupted.safetensors"
    process = subprocess.Popen(
        [sys.executable, "-m", "model", "train", "--corpus", "copy", "--out", str(out), *TINY[:-1], "--epochs", "1000"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(6)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "saved the model trained so far" in stderr
    assert checkpoint.load(out).history["stopped"] == "cancelled"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


def test_evaluate_json_reports_the_alignment_error_rate(copy_model, capsys):
    assert main(["evaluate", "--model", str(copy_model), "--corpus", "copy", "--n", "100", "--seed", "5", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert 0 <= scores["aer"] <= 1 and scores["aer_pairs"] == 100
    assert scores["aer"] < 0.2  # a trained copy model has a diagonal cross-attention head
    assert {"layer", "head", "rows"} <= set(scores["aer_head"])


def test_trace_writes_every_array_and_honours_forcing(copy_model, tmp_path):
    import numpy as np

    out = tmp_path / "trace.npz"
    assert (
        main(["trace", "--model", str(copy_model), "--text", "a b c d", "--out", str(out), "--force", "2:q", "--word-level"]) == 0
    )
    with np.load(out, allow_pickle=False) as data:
        layers, heads = 2, 8
        assert data["encoder_self"].shape == (layers, heads, 5, 5)
        steps = len(data["target_tokens"])
        assert data["decoder_self"].shape == (layers, heads, steps, steps)
        assert data["cross"].shape == (layers, heads, steps, 5)
        assert list(data["source_tokens"]) == ["▁a", "▁b", "▁c", "▁d", "</s>"]
        assert data["target_tokens"][1] == "▁q" and data["forced"].tolist()[:2] == [False, True]
        assert data["cross_roles"].shape == (layers, heads) and data["candidate_ids"].shape[0] == steps
        assert data["word_cross"].shape[-1] == 5
    beam_out = tmp_path / "beam.npz"
    assert main(["trace", "--model", str(copy_model), "--text", "a b c", "--beam", "3", "--out", str(beam_out)]) == 0
    with np.load(beam_out, allow_pickle=False) as data:
        assert len(data["beam_hypotheses"]) >= 1 and len(data["beam_parents"]) == len(data["beam_token_ids"])
        assert [t for t in data["target_tokens"] if t != "</s>"] == ["▁a", "▁b", "▁c"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--text", "  "], "empty"),
        (["--text", "a b", "--force", "x:q"], "STEP:TOKEN"),
        (["--text", "a b", "--force", "1:zzzz-not-a-piece"], "not a single piece"),
        (["--text", "a b", "--sample", "--temperature", "0"], "temperature"),
    ],
)
def test_trace_errors_are_one_line(copy_model, tmp_path, args, message):
    result = run_cli("trace", "--model", str(copy_model), "--out", str(tmp_path / "t.npz"), *args)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "t.npz").exists()
