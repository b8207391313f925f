"""``transformer-explorer report-card`` end to end on the shipped copy model: the CSV and the one-page figure by the
suffix of --out, the card printed, progress on stderr; bad options answered in one line that writes nothing."""

from __future__ import annotations

import csv

import pytest

from tests.conftest import assert_figure

FAST = ("--n", "2", "--methods", "attention,alti,leave-one-out,occlusion,random", "--sanity-pairs", "1", "--ig-points", "33")


def test_the_csv_and_the_card_printed(run, tmp_path):
    code, out, err = run("report-card", "--model", "copy", *FAST, "--out", "card.csv")
    assert code == 0, err
    with open(tmp_path / "card.csv", encoding="utf-8") as handle:
        rows = {row["method"]: row for row in csv.DictReader(handle)}
    assert list(rows) == ["attention", "alti", "leave-one-out", "occlusion", "random"]
    assert float(rows["attention"]["accuracy"]) >= 0 and rows["attention"]["corpus"].startswith("copy")
    assert rows["alti"]["aer"] == "" and "ALTI has no cross-attention" in rows["alti"]["notes"]
    assert rows["attention"]["sanity"] in ("pass", "fail") and rows["random"]["sanity"] == ""
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["Method", "AER", "Position"] and any(line.startswith("Leave-one-out") for line in lines)
    assert "2 held-out pairs of copy" in out and "wrote card.csv" in out
    assert "sentences" in err and "sanity checks" in err  # the progress bars


@pytest.mark.parametrize("suffix", [".pdf", ".png", ".svg"])
def test_the_figure(run, tmp_path, suffix):
    code, _, err = run("report-card", "--model", "copy", *FAST, "--dpi", "60", "--quiet", "--out", f"card{suffix}")
    assert code == 0, err
    assert_figure(tmp_path / f"card{suffix}", width=7.2, dpi=60, texts=("Explanation report card", "Deletion", "Occlusion"))


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("--model", "copy", "--out", "card.txt"), "a report card is saved as .csv, .png, .svg, .pdf"),
        (("--model", "copy", "--n", "0", "--out", "card.csv"), "--n must be positive"),
        (("--model", "copy", "--methods", "attention,guess", "--out", "card.csv"), "guess is not a method"),
        (("--model", "copy", "--sanity-pairs", "-1", "--out", "card.csv"), "--sanity-pairs must be 0 or more"),
        (("--model", "copy", "--corpus", "toy-fr-tags", "--out", "card.csv"), "toy-fr-tags"),
        (("--model", "copy", "--out", "no-such-folder/card.csv"), "does not exist"),
    ],
)
def test_bad_options_in_one_line_writing_nothing(run, tmp_path, arguments, message):
    code, out, err = run("report-card", *arguments)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1, err
    assert not [path for path in tmp_path.iterdir() if path.name.startswith("card")]
