"""Issue 39, item 11: tracebacks that are now one line each.

- ``timeline`` on a Hugging Face model's folder without ``checkpoint-N/`` folders (every family): was ``ValueError: a
  model file's timeline needs the model's bundle``;
- ``report-card --shuffled-model`` of another family (``TypeError: EncoderClassifier.forward() takes 2 positional
  arguments``), shape (``IndexError: index out of range in self``) or vocabulary than the graded model;
- ``neuron --target`` longer than the model reads (``ValueError: sequence of 4000 pieces exceeds max_len 128``).
Each exits 1 with one line saying why, writing nothing.
"""

from __future__ import annotations

import pytest

from tests.conftest import PRETRAINED_FAMILIES


def _one_line(result: tuple[int, str, str], message: str, tmp_path) -> None:
    code, out, err = result
    assert code == 1 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not [path for path in tmp_path.iterdir() if path.suffix in (".csv", ".gif", ".png")]


@pytest.mark.parametrize("family", PRETRAINED_FAMILIES)
def test_timeline_of_a_pretrained_folder_without_checkpoints_is_one_line(run, tmp_path, tiny_folders, family, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = run("timeline", "--model", tiny_folders[family], "--text", "the cat", "--out", "t.gif")
    _one_line(result, "a pretrained model's folder has no timeline", tmp_path)


@pytest.mark.parametrize(
    "graded, shuffled, message",
    [
        ("default", "tagger", "--shuffled-model tagger: a classifier model, not a transformer like default"),
        ("default", "copy", "--shuffled-model copy: its shape differs from default's (d_ff 256 instead of 512)"),
        ("copy", "reverse", "--shuffled-model reverse: its source vocabulary differs from copy's"),
    ],
)
def test_a_shuffled_model_unlike_the_graded_one_is_refused_in_one_line(run, tmp_path, graded, shuffled, message):
    arguments = ("--n", "2", "--sanity-pairs", "1", "--methods", "attention", "--quiet", "--out", "card.csv")
    _one_line(run("report-card", "--model", graded, "--shuffled-model", shuffled, *arguments), message, tmp_path)


def test_a_neuron_target_longer_than_the_model_reads_is_one_line(run, tmp_path):
    target = " ".join(["the"] * 4000)
    result = run("neuron", "--model", "default", "--text", "the cat", "--target", target, "--out", "n.csv")
    _one_line(result, "--target has 4,000 pieces; this model reads at most 128 (its max_len)", tmp_path)
    code, _, err = run("neuron", "--model", "default", "--text", "the cat", "--target", " ".join(["the"] * 128), "--out", "n.csv")
    assert code == 0, err  # as long as it reads: fine
