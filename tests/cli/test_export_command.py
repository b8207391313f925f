"""The export and trace commands on their own (the window's side, and the two compared, are in
tests/explorer/test_export.py): bad options are one line and write nothing, and a trace file holds the
word-level decoder-input labels and the beam's score rule."""

from __future__ import annotations

import numpy as np

from model.cli.commands import main as cli_main
from tests.conftest import saved_model


def test_the_export_command_errors_are_one_line_and_write_nothing(tmp_path, copy_bundle, capsys):
    model = saved_model(copy_bundle[0], tmp_path)
    base = ["export", "--model", str(model), "--text", "a b c", "--kind", "cross"]
    for bad, message in (
        (["--layer", "9", "--out", str(tmp_path / "x.npy")], "layer must be between 1 and 2"),
        (["--head", "9", "--out", str(tmp_path / "x.npy")], "head must be between 1 and 4"),
        (["--out", str(tmp_path / "m.txt")], "--out must end in"),
        (["--step", "40", "--out", str(tmp_path / "x.npy")], "step must be"),
        (["--out", str(tmp_path / "missing" / "x.svg")], "does not exist"),
        (["--width", "wide", "--out", str(tmp_path / "x.png")], "width must be"),
        (["--font-size", "2", "--out", str(tmp_path / "x.png")], "font size must be"),
        (["--colormap", "rainbowish", "--out", str(tmp_path / "x.png")], "unknown colour map"),
        (["--height", "0.2in", "--out", str(tmp_path / "x.png")], "height must be"),
        (["--beam", "0", "--out", str(tmp_path / "x.png")], "--beam must be positive"),
        (["--view", "lines", "--heads", "1,9", "--out", str(tmp_path / "x.png")], "heads must be numbers between 1 and 4"),
        (["--view", "lines", "--head", "3", "--heads", "1,2", "--out", str(tmp_path / "x.png")], "must be one of the heads drawn"),
    ):
        assert cli_main(base + bad) != 0
        captured = capsys.readouterr()
        assert message in captured.err and "Traceback" not in captured.err and "wrote" not in captured.out
    assert not list(tmp_path.glob("x.*")) and not (tmp_path / "missing").exists()
    as_npz = tmp_path / "model.npz"  # a model whose name is also a valid trace output
    as_npz.write_bytes(model.read_bytes())
    assert cli_main(["trace", "--model", str(as_npz), "--text", "a b", "--out", str(as_npz)]) != 0
    assert "is an input" in capsys.readouterr().err and as_npz.read_bytes() == model.read_bytes()


def test_trace_npz_holds_word_level_decoder_input_labels_and_the_beam_score_rule(tmp_path, copy_bundle):
    model = saved_model(copy_bundle[0], tmp_path)
    out = tmp_path / "t.npz"
    assert cli_main(["trace", "--model", str(model), "--text", "a b c", "--beam", "2", "--word-level", "--out", str(out)]) == 0
    with np.load(out, allow_pickle=False) as data:
        assert data["word_decoder_self"].shape[-1] == len(data["word_decoder_input_tokens"])
        assert "length" in str(data["beam_score_note"]) and float(data["beam_length_penalty_alpha"]) == 0.6


def test_the_export_command_writes_the_interactive_page_by_its_suffix(tmp_path, copy_bundle, capsys):
    from model.decoding.stepper import DecodingOptions, Stepper
    from tests.model.figures.test_html_page import embedded

    model = saved_model(copy_bundle[0], tmp_path)
    out = tmp_path / "page.html"
    base = ["export", "--model", str(model), "--text", "a b c", "--kind", "decoder", "--layer", "2", "--head", "rollout"]
    assert cli_main(base + ["--step", "2", "--colormap", "magma", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    stepper = Stepper(copy_bundle[0], "a b c", DecodingOptions())
    stepper.run()
    trace = stepper.trace()
    data = embedded(out.read_text(encoding="utf-8"))
    assert data["initial"] == {"kind": "decoder", "layer": 1, "head": "rollout", "step": 2}
    assert data["model"] == "model" and data["colormap"]["name"] == "magma" and data["n_steps"] == trace.n_steps
    for kind in data["kinds"]:  # every step is in the page: the slider goes back and forth
        np.testing.assert_allclose(np.array(kind["weights"]), trace.matrix(kind["name"]), rtol=0, atol=1e-6)
    before = out.read_bytes()
    assert cli_main(base + ["--view", "lines", "--out", str(out)]) != 0
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "focus and grid views" in error and out.read_bytes() == before
