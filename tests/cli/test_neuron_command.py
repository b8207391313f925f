"""``transformer-explorer neuron`` end to end on the shipped models: the figure in every format, the CSV's numbers
equal to the core's, every head's shares, and bad input answered in one line that writes nothing."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from model.io import checkpoint
from model.io.shipped import resolve_model
from model.neuron.splits import TERM_NAMES
from model.neuron.tables import read_sentence
from model.neuron.terms import neuron_row
from tests.conftest import assert_figure

TEXT = "the black cat sees the small dog"


def rows(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_csv_holds_the_cores_row_and_the_shares_every_head(run, tmp_path):
    code, out, err = run(
        "neuron", "--model", "default", "--text", TEXT, "--kind", "cross", "--layer", "3", "--head", "2", "--query", "4",
        "--out", "row.csv", "--shares", "heads.csv",
    )  # fmt: skip
    assert code == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0].startswith("cross-attention (encoder-decoder), layer 3, head 2, query 4 “voit”: heaviest keys “sees”")
    assert lines[1].startswith("head's term shares: token·token ") and "(by its terms: " in lines[1]
    assert lines[-2:] == ["wrote row.csv", "wrote heads.csv"]
    trace, vectors = read_sentence(checkpoint.load(resolve_model("default")), TEXT)
    expected = neuron_row(vectors, "cross", 2, 1, 3, trace.axis_labels("cross"))
    written = rows(tmp_path / "row.csv")
    assert [row["key_token"] for row in written] == trace.source_tokens
    np.testing.assert_allclose([float(row["weight"]) for row in written], expected.weights, rtol=1e-12)
    assert expected.terms is not None
    for index, name in enumerate(TERM_NAMES):
        np.testing.assert_allclose([float(row[name]) for row in written], expected.terms[index], rtol=1e-12)
    shares = rows(tmp_path / "heads.csv")
    assert len(shares) == 36 and shares[0]["kind"] == "encoder" and shares[-1]["kind"] == "cross"


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_the_figure_in_every_format(run, tmp_path, suffix):
    code, out, err = run(
        "neuron", "--model", "reverse", "--text", "a b c d e f g", "--kind", "decoder", "--head", "3", "--query", "6",
        "--width", "page", "--dpi", "100", "--out", f"neuron{suffix}",
    )  # fmt: skip
    assert code == 0 and err == "" and out.splitlines()[-1] == f"wrote neuron{suffix}"
    texts = ("Neuron view: decoder masked self-attention, layer 1, head 3, query 6", "position·position")
    assert_figure(tmp_path / f"neuron{suffix}", 6.9, 100, texts)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("--kind", "sideways"), "kind must be encoder, decoder or cross, not 'sideways'"),
        (("--layer", "0"), "--layer counts from 1, not 0"),
        (("--layer", "4"), "layer 4: this model's cross-attention (encoder-decoder) has layers 1 to 3"),
        (("--head", "5"), "head 5: this model's layers have heads 1 to 4"),
        (("--kind", "encoder", "--query", "99"), "query 99: the encoder self-attention has queries 1 to 4"),
        (("--out", "neuron.txt"), "--out must end in .csv, .png, .svg, .pdf, not 'neuron.txt'"),
        (("--model", "rnn-bahdanau"), "the neuron view is not available for this family"),
        (("--model", "tagger", "--kind", "cross"), "this model has no cross-attention (encoder-decoder)"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(run, tmp_path, arguments, message):
    given = dict(zip(arguments[::2], arguments[1::2]))
    defaults = {"--model": "default", "--text": "the cat sleeps", "--out": "neuron.png"}
    flat = [item for key, value in {**defaults, **given}.items() for item in (key, value)]
    code, out, err = run("neuron", *flat)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []
