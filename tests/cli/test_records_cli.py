"""The records the commands write (model/provenance/, issue 44): ``export`` and ``circuit`` keep the command that draws
the same file, with the model's digest, the sentence, the view and the versions; ``describe`` prints it in one line a
fact, and a file that is not there is one line."""

from __future__ import annotations

import json

from model.provenance.embed import read_record, sidecar_path


def test_export_and_circuit_write_the_command_that_draws_them_and_describe_prints_it(run, tmp_path):
    sentence = "the black cat sees the small dog"
    assert run("export", "--model", "default", "--text", sentence, "--layer", "3", "--head", "2", "--out", "a.svg")[0] == 0
    record = read_record(tmp_path / "a.svg")
    assert record.command == ["export", "--model", "default", "--text", sentence, "--layer", "3", "--head", "2"]
    assert record.input["text"] == sentence and len(record.model["sha256"]) == 64 and record.view["head"] == 2
    assert {"torch", "matplotlib", "numpy", "python"} <= set(record.versions)
    code, out, err = run("describe", "a.svg")
    assert code == 0 and err == "" and out.splitlines()[-1].startswith("draw it again: transformer-explorer export --model default")
    assert run("circuit", "--model", "default", "--pair", "number", "--no-exact", "--out", "c.json")[0] == 0
    assert read_record(tmp_path / "c.json").command == ["circuit", "--model", "default", "--pair", "number", "--no-exact"]
    code, _out, err = run("describe", "nothing.png")
    assert code == 1 and err.strip() == "transformer-explorer describe: error: nothing.png: no such file"


def test_reproduce_draws_each_format_again_the_same(run, tmp_path):
    sentence = "the black cat sees the small dog"
    for name in ("f.svg", "f.png", "f.pdf", "f.csv", "f.html"):
        assert run("export", "--model", "default", "--text", sentence, "--kind", "encoder", "--out", name)[0] == 0
        before = (tmp_path / name).read_bytes()
        code, out, err = run("reproduce", name)
        assert code == 0 and err == "" and out.splitlines()[-1] == f"reproduced: {name} is drawn again the same", out
        assert (tmp_path / name).read_bytes() == before  # nothing written over the figure
    assert "SSIM 1.0000" in run("reproduce", "f.png")[1] and "the same SVG structure and text" in run("reproduce", "f.svg")[1]


def test_reproduce_refuses_another_model_and_says_when_it_differs(run, tmp_path):
    assert run("export", "--model", "default", "--text", "the cat sees the dog", "--out", "f.svg")[0] == 0
    code, _out, err = run("reproduce", "f.svg", "--model", "copy")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "copy is not the model that drew f.svg: its tensors' SHA-256 is 6358da691c1da543…, the record's ac30d8d23c7b360c…" in err
    code, _out, err = run("reproduce", "f.svg", "--model", "missing.safetensors")
    assert code == 1 and "the model 'missing.safetensors' that drew f.svg cannot be opened" in err
    figure = tmp_path / "f.svg"
    figure.write_text(figure.read_text(encoding="utf-8").replace(">cat<", ">cow<"), encoding="utf-8")  # a label changed
    code, out, _err = run("reproduce", "f.svg")
    assert code == 1 and "the SVG differs from element" in out and out.splitlines()[-1].startswith("not reproduced")
    code, out, err = run("reproduce", "f.svg", "--check")
    assert code == 0 and out.splitlines()[0].startswith("the model is the one that drew it (default, SHA-256 ac30d8d2")


def test_export_all_records_each_file_with_the_export_command_of_its_view(run, tmp_path):
    assert run("export", "--model", "default", "--text", "the cat sees the dog", "--all", "--out", "every")[0] == 0
    head = read_record(tmp_path / "every" / "cross_L3_H2.png").command
    assert head[5:] == ["--layer", "3", "--head", "2", "--dpi", "150"]  # cross-attention and focus: the defaults
    assert read_record(tmp_path / "every" / "encoder_grid.png").command[5:9] == ["--view", "grid", "--kind", "encoder"]
    assert read_record(tmp_path / "every" / "decoder_L1_mean.csv").command[5:] == ["--kind", "decoder", "--dpi", "150"]
    code, out, _err = run("reproduce", "every/cross_L3_H2.png")
    assert code == 0 and out.splitlines()[-1] == "reproduced: cross_L3_H2.png is drawn again the same"


def test_reproduce_refuses_a_record_that_names_a_model_but_not_its_digest(run, tmp_path):
    assert run("export", "--model", "default", "--text", "the cat", "--view", "candidates", "--out", "c.csv")[0] == 0
    sidecar = sidecar_path(tmp_path / "c.csv")
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    record["model"] = {"source": None}
    sidecar.write_text(json.dumps(record), encoding="utf-8")
    code, _out, err = run("reproduce", "c.csv")
    assert code == 1 and err.strip().splitlines() == [
        "transformer-explorer reproduce: error: c.csv: its record is damaged (it names the model default but not its "
        "tensors' SHA-256)"
    ]
