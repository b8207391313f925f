"""The records the commands write (model/provenance/, issue 44): ``export`` and ``circuit`` keep the command that draws
the same file, with the model's digest, the sentence, the view and the versions; ``describe`` prints it in one line a
fact, and a file that is not there is one line."""

from __future__ import annotations

from model.provenance.embed import read_record


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
