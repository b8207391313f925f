"""``capabilities``: the table of tools × models is each tool's own answer, and keeps its claims. For every model built
here (the app's Transformer and RNN; tiny Hugging Face T5, mBART, BERT with a masked-LM and a classification head, and
GPT-2 folders), each tool the
table says "Y" for runs from its command and writes its file, and each tool it does not serve is refused by its command
in one line: the table's footnote for that cell."""

from __future__ import annotations

import shutil

import pytest

from model.capabilities import CHECKS, row_of
from model.cli import main
from model.cli.capabilities import table
from model.family import capabilities_of
from model.io import checkpoint
from model.io.models import open_model

TEXT = "le chat voit le chien ."
COMMANDS = {  # a tool -> its command's arguments after --model (the output named out.*)
    "head knock-out": ["trace", "--mask-heads", "{kind}:1:2", "--text", TEXT, "--out", "out.npz"],  # its first kind
    "head importance": ["heads", "--corpus", "toy-fr", "--n", "2", "--importance", "out.csv", "--quiet"],
    "logit lens": ["lens", "--text", TEXT, "--out", "out.csv"],
    "DecoderLens": ["lens", "--tool", "decoder-lens", "--text", TEXT, "--out", "out.csv"],
    "logit attribution": ["lens", "--tool", "attribution", "--text", TEXT, "--out", "out.csv"],
    "neuron view": ["neuron", "--text", TEXT, "--out", "out.csv"],
    "contribution measures": ["attribute", "--measure", "alti", "--text", TEXT, "--out", "out.npz"],
    "corpus index": ["index", "--corpus", "toy-fr", "--limit", "3", "--dims", "2", "--out", "out.index", "--quiet"],
    "report card": ["report-card", "--corpus", "toy-fr", "--n", "1", "--methods", "attention", "--sanity-pairs", "0"]
    + ["--out", "out.csv", "--quiet"],
}


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_folders, pre_norm_bundles, toy_fr_bundle, toy_fr_rnn_bundle) -> dict[str, str]:
    """Name -> what --model reads: the app's own models saved to files, the tiny Hugging Face folders."""
    root = tmp_path_factory.mktemp("capability-models")
    own = {"transformer": toy_fr_bundle[0], "rnn": toy_fr_rnn_bundle[0]}
    paths = {}
    for name, bundle in own.items():
        paths[name] = str(root / f"{name}.safetensors")
        checkpoint.save(bundle, paths[name])
    paths |= {layout: tiny_folders[layout] for layout in ("t5", "bert-mlm", "bert-classifier", "gpt2")}
    paths["mbart"] = str(pre_norm_bundles["mbart"].path)
    return paths


def test_the_table_has_a_row_per_family_and_layout_and_the_transformer_serves_every_tool(capsys):
    assert main(["capabilities"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["model", "attention", "views"]
    transformer = next(line for line in lines if line.startswith("encoder-decoder Transformer"))
    assert transformer.split()[-len(CHECKS) :] == ["Y"] * len(CHECKS)
    for layout in ("t5", "marian", "bart", "mbart", "m2m100", "pegasus", "bert-mlm", "gpt2"):
        assert any(line.split(":")[-1].split()[:1] == [layout] for line in lines if ":" in line), layout
    notes = [line for line in lines if line[:1].isdigit()]
    assert notes and all(". " in line for line in notes)  # every number in a cell has its line


def test_markdown_and_one_model(capsys):
    assert main(["capabilities", "--model", "default", "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| model | attention views |") and lines[1].startswith("| --- |")
    assert len([line for line in lines if line.startswith("| ") and "---" not in line]) == 2  # the header and one row


@pytest.mark.parametrize("name", ["transformer", "rnn", "t5", "mbart", "bert-mlm", "bert-classifier", "gpt2"])
def test_each_claim_is_what_the_tool_s_command_does(models, name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = open_model(models[name]).model
    row, kind = row_of(name, model), capabilities_of(model).kinds[0].value
    for tool, arguments in COMMANDS.items():
        code = main([arguments[0], "--model", models[name], *(argument.format(kind=kind) for argument in arguments[1:])])
        err = capsys.readouterr().err
        written = [path for path in tmp_path.iterdir() if path.name.startswith("out.")]
        if not row.reasons[tool]:
            assert code == 0 and written, f"{name}: the table says {tool}, its command said: {err}"
        else:
            assert code != 0 and not written and "Traceback" not in err, (name, tool, err)
            assert row.reasons[tool] in err and len(err.strip().splitlines()) == 1, (name, tool, err)
        for path in written:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert "Y" in table([row]).splitlines()[1]  # every model serves the attention views at least
