"""Issue 44's twenty figure types: each command's file carries its record, the record round-trips from the file's
format, and ``reproduce`` on an unchanged setup draws it again the same (identical SVG structure and text, PNG SSIM
≥ 0.995, the same PDF pages and text, the same data), without writing over it."""

from __future__ import annotations

import pytest

from model.provenance.embed import read_record

S = "the black cat sees the small dog"
PAIR = ("--clean", "the cat sees the dog", "--corrupt", "the cats see the dog")
FIGURES = {  # name -> the command that writes it (--out added)
    "focus.svg": ("export", "--model", "default", "--text", S, "--layer", "3"),
    "grid.png": ("export", "--model", "default", "--text", S, "--view", "grid", "--dpi", "80"),
    "lines.pdf": ("export", "--model", "default", "--text", S, "--view", "lines", "--layer", "2", "--head", "1"),
    "candidates.csv": ("export", "--model", "default", "--text", S, "--view", "candidates"),
    "page.html": ("export", "--model", "default", "--text", S),
    "alti.png": ("attribute", "--model", "default", "--text", S, "--measure", "alti+", "--dpi", "80"),
    "zeroing.svg": ("attribute", "--model", "default", "--text", S, "--measure", "value-zeroing", "--kind", "encoder"),
    "patch.pdf": ("patch", "--model", "default", *PAIR),
    "patch.csv": ("patch", "--model", "default", *PAIR, "--method", "attribution"),
    "lens.svg": ("lens", "--model", "default", "--text", S),
    "attribution.png": ("lens", "--model", "default", "--text", S, "--tool", "attribution", "--step", "3", "--dpi", "80"),
    "decoder-lens.csv": ("lens", "--model", "default", "--text", S, "--tool", "decoder-lens"),
    "neuron.svg": ("neuron", "--model", "default", "--text", S, "--layer", "3", "--head", "2"),
    "compare.png": ("compare", "--model", "default", "--with", "reverse", "--text", "the cat", "--dpi", "80"),
    "positional.pdf": ("export", "--model", "default", "--view", "positional"),
    "positional.csv": ("export", "--model", "default", "--view", "positional", "--positions", "16"),
    "strip.png": ("timeline", "--model", "default", "--text", "the cat sees the dog", "--snapshots", "0,7", "--dpi", "60"),
    "timeline.gif": ("timeline", "--model", "default", "--text", "the cat sees the dog", "--snapshots", "0,7", "--dpi", "50"),
    "card.svg": ("report-card", "--model", "tagger", "--n", "1", "--sanity-pairs", "1", "--quiet"),
    "circuit.svg": ("circuit", "--model", "default", *PAIR, "--no-exact"),
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_figure_type_keeps_its_record_and_is_drawn_again_the_same(run, tmp_path, name):
    command = FIGURES[name]
    code, _out, err = run(*command, "--out", name)
    assert code == 0, err
    record = read_record(tmp_path / name)
    assert record.command[0] == command[0] and "--out" not in record.command
    assert record.model.get("sha256") and record.versions.get("matplotlib")
    before = (tmp_path / name).read_bytes()
    code, out, err = run("reproduce", name)
    assert code == 0 and err == "", out + err
    assert out.splitlines()[-1] == f"reproduced: {name} is drawn again the same"
    assert (tmp_path / name).read_bytes() == before
