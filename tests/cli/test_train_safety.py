"""Training never loses or spoils work: Ctrl-C before the first step or during the save, outputs checked
before anything slow, inputs never overwritten, and a NaN loss never becomes NaN weights on disk (the
trainer's own refusals and NaN handling are in tests/model/training/test_training_safety.py)."""

import subprocess
import sys
from pathlib import Path

import pytest

import model.training.pipeline
import model.training.trainer
from model.cli.commands import main
from model.io import checkpoint
from model.io.timeline import timeline_path
from model.training.trainer import weights_are_finite
from tests.cli.test_cli import ROOT, TINY

QUICK = [*TINY, "--corpus-size", "300", "--valid-decode", "5", "--batch-size", "16"]

# Runs the command line in a fresh interpreter after a patch ({patch}) that plays the user's part at an
# exact moment: the code under test is unchanged, only the moment of the Ctrl-C or of the NaN is chosen.
DRIVER = """
import contextlib, os, signal, sys
import torch
from model.io import checkpoint, pair
from model.cli import commands as cli
from model.training import trainer as training
from model.training import step as training_step

def ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10000):  # a Python-level loop: the signal handler runs here
        pass

{patch}
sys.exit(cli.main(sys.argv[1:]))
"""

CTRL_C_BEFORE_THE_FIRST_STEP = """
original_run = training.Trainer.run
def run(self):
    ctrl_c()
    return original_run(self)
training.Trainer.run = run
"""

CTRL_C_DURING_THE_SAVE = """
original_output = pair.atomic_output  # the model, its timeline and the pair's journal (model/io/pair.py)
@contextlib.contextmanager
def atomic_output(path):
    with original_output(path) as temporary:
        for _ in range({presses}):
            ctrl_c()
        yield temporary
pair.atomic_output = atomic_output
"""

CTRL_C_AT_STEP_2 = """
original_run = training.Trainer.run
def run(self):
    report = self.on_progress
    def on_progress(progress):
        report(progress)
        if progress.step == 2:
            ctrl_c()
    self.on_progress = on_progress
    result = original_run(self)
    {after}
    return result
training.Trainer.run = run
"""

NAN_LOSS_FROM_STEP = """
original_loss = training_step.smoothed_cross_entropy
calls = []
def smoothed_cross_entropy(logits, gold, smoothing):
    loss, correct = original_loss(logits, gold, smoothing)
    calls.append(1)
    return (loss * float("nan") if len(calls) >= {step} else loss), correct
training_step.smoothed_cross_entropy = smoothed_cross_entropy
"""


def run_driver(patch: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", DRIVER.format(patch=patch), *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def existing_file(tmp_path: Path) -> tuple[Path, bytes]:
    out = tmp_path / "good.safetensors"
    out.write_bytes(b"an earlier, good model")
    return out, out.read_bytes()


# --- 1. Ctrl-C before the first step ---------------------------------------------------------------


def assert_nothing_written(result, why: str, out, before: bytes, folder) -> None:
    """One line on stderr saying why and that nothing was written; the file and its folder as they were."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and why in lines[0] and "nothing was written" in lines[0], lines
    assert out.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == [out.name]


def test_ctrl_c_before_the_first_step_leaves_the_existing_file_untouched(tmp_path):
    out, before = existing_file(tmp_path)
    result = run_driver(CTRL_C_BEFORE_THE_FIRST_STEP, "train", "--corpus", "copy", "--out", str(out), *QUICK, "--max-steps", "20")
    assert result.returncode == 130, result.stderr
    assert_nothing_written(result, "before the first training step", out, before, tmp_path)


# --- 2. Ctrl-C during the final save ----------------------------------------------------------------


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_during_the_save_lets_the_save_complete(tmp_path, presses):
    out, before = existing_file(tmp_path)
    result = run_driver(
        CTRL_C_DURING_THE_SAVE.format(presses=presses), "train", "--corpus", "copy", "--out", str(out), *QUICK, "--max-steps", "4"
    )
    assert result.returncode == 0, result.stderr
    assert "nothing was written" not in result.stderr
    bundle = checkpoint.load(out)
    assert bundle.history["stopped"] == "max steps" and len(bundle.history["steps"]) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name, timeline_path(out).name]  # no temporary file left


def test_first_ctrl_c_stops_and_saves_even_when_a_second_lands_in_the_save(tmp_path):
    out, _ = existing_file(tmp_path)
    patch = CTRL_C_AT_STEP_2.format(after="pass") + CTRL_C_DURING_THE_SAVE.format(presses=1)
    result = run_driver(patch, "train", "--corpus", "copy", "--out", str(out), *QUICK, "--max-steps", "50")
    assert result.returncode == 0, result.stderr
    bundle = checkpoint.load(out)
    assert bundle.history["stopped"] == "cancelled"
    assert [row[0] for row in bundle.history["steps"]] == [1, 2]


def test_a_second_ctrl_c_before_the_save_quits_without_writing(tmp_path):
    out, before = existing_file(tmp_path)
    result = run_driver(
        CTRL_C_AT_STEP_2.format(after="ctrl_c()"), "train", "--corpus", "copy", "--out", str(out), *QUICK, "--max-steps", "50"
    )
    assert result.returncode == 130, result.stderr
    assert "interrupted; nothing was written" in result.stderr and "Traceback" not in result.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


# --- 3, 4 and 8: refused before anything slow ---------------------------------------------------------


@pytest.fixture
def nothing_slow(monkeypatch):
    """Corpus preparation (splitting, tokenizer training) must not start: the command refuses first."""

    def prepare(*args, **kwargs):
        raise AssertionError("prepare() ran: the error came after the slow part")

    monkeypatch.setattr(model.training.pipeline, "prepare", prepare)


def one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("transformer-explorer train: error: ")
    return lines[0]


@pytest.mark.parametrize("where,message", [("missing/model.safetensors", "does not exist"), (".", "is a folder"), ("", "empty")])
def test_an_unwritable_out_is_refused_before_training(tmp_path, capsys, nothing_slow, where, message):
    out = "" if where == "" else str(tmp_path / where)
    assert main(["train", "--corpus", "copy", "--out", out, *QUICK]) == 1
    assert message in one_error_line(capsys)
    assert sorted(tmp_path.iterdir()) == []


def test_an_out_in_a_read_only_folder_is_refused_before_training(tmp_path, capsys, nothing_slow):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert main(["train", "--corpus", "copy", "--out", str(folder / "m"), *QUICK]) == 1
        assert "not writable" in one_error_line(capsys)
    finally:
        folder.chmod(0o755)


def test_an_out_that_is_an_input_is_refused_and_the_input_kept(tmp_path, capsys, nothing_slow):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("".join(f"w{i}\tm{i}\n" for i in range(50)), encoding="utf-8")
    assert main(["train", "--corpus", str(corpus), "--out", str(corpus), *QUICK]) == 1
    assert "is an input" in one_error_line(capsys)
    source, target = tmp_path / "t.en", tmp_path / "t.fr"
    source.write_text("".join(f"w{i}\n" for i in range(50)), encoding="utf-8")
    target.write_text("".join(f"m{i}\n" for i in range(50)), encoding="utf-8")
    for out in (target, source):
        assert main(["train", "--corpus", str(source), "--target", str(target), "--out", str(out), *QUICK]) == 1
        assert "is an input" in one_error_line(capsys)
    assert corpus.read_text(encoding="utf-8").count("\n") == 50
    assert target.read_text(encoding="utf-8").splitlines()[:2] == ["m0", "m1"]
    assert source.read_text(encoding="utf-8").splitlines()[:2] == ["w0", "w1"]


@pytest.mark.parametrize(
    "option,value,message",
    [
        ("--lr-factor", "nan", "--lr-factor must be a finite number"),
        ("--lr-factor", "inf", "--lr-factor must be a finite number"),
        ("--lr-factor", "0", "--lr-factor must be positive"),
        ("--lr-factor", "-1", "--lr-factor must be positive"),
        ("--label-smoothing", "1", "--label-smoothing must be in [0, 1)"),
        ("--label-smoothing", "-0.1", "--label-smoothing must be in [0, 1)"),
        ("--label-smoothing", "nan", "--label-smoothing must be a finite number"),
        ("--clip-norm", "nan", "--clip-norm must be a finite number"),
        ("--clip-norm", "-1", "--clip-norm must be 0"),
        ("--dropout", "1", "--dropout must be in [0, 1)"),
        ("--max-minutes", "nan", "--max-minutes must be a finite number"),
        ("--layers", "0", "--layers must be positive"),
        ("--encoder-layers", "0", "--encoder-layers must be positive"),
        ("--decoder-layers", "-2", "--decoder-layers must be positive"),
        ("--d-model", "0", "--d-model must be positive"),
        ("--heads", "0", "--heads must be positive"),
        ("--d-ff", "0", "--d-ff must be positive"),
        ("--max-len", "0", "--max-len must be positive"),
        ("--target-vocab-size", "0", "--target-vocab-size must be positive"),
        ("--heads", "3", "divisible"),  # the model's own check, also before the slow part now
    ],
)
def test_bad_numbers_are_refused_before_training(tmp_path, capsys, nothing_slow, option, value, message):
    out = tmp_path / "m.safetensors"
    assert main(["train", "--corpus", "copy", "--out", str(out), *QUICK, option, value]) == 1  # the last one wins
    assert message in one_error_line(capsys)
    assert not out.exists()


# --- 8. a loss that turns NaN ------------------------------------------------------------------------


def test_cli_never_writes_nan_weights_over_a_good_file(tmp_path):
    out, before = existing_file(tmp_path)
    result = run_driver(
        NAN_LOSS_FROM_STEP.format(step=1), "train", "--corpus", "copy", "--out", str(out), *QUICK, "--max-steps", "10"
    )
    assert result.returncode == 1, result.stderr
    assert_nothing_written(result, "loss became nan at step 1", out, before, tmp_path)


def test_cli_saves_the_last_finite_step_when_the_loss_turns_nan(tmp_path):
    out = tmp_path / "m.safetensors"
    result = run_driver(
        NAN_LOSS_FROM_STEP.format(step=3), "train", "--corpus", "copy", "--out", str(out), *QUICK, "--max-steps", "10"
    )
    assert result.returncode == 1, result.stderr
    assert "loss became nan at step 3" in result.stderr and "saved the model of step 2" in result.stderr
    bundle = checkpoint.load(out)
    assert weights_are_finite(bundle.model)
    assert bundle.history["stopped"] == "diverged" and [row[0] for row in bundle.history["steps"]] == [1, 2]
