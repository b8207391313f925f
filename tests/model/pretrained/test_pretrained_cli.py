"""Every command takes a pretrained folder (or cached id) where it takes a model: translate, trace, export and
evaluate on a TSV; a missing id gets one line with the fetch command."""

from __future__ import annotations

import numpy as np
import pytest

from model.cli.commands import main
from tests.conftest import assert_figure


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_translate_each_family(capsys, tiny_folders):
    code, out, _ = run(capsys, "translate", "--model", tiny_folders["t5"], "the small cat")
    assert code == 0 and out.strip()
    code, out, _ = run(capsys, "translate", "--model", tiny_folders["marian"], "--beam", "3", "the small cat")
    assert code == 0
    code, out, _ = run(capsys, "translate", "--model", tiny_folders["gpt2"], "the small cat")
    assert code == 0 and out.startswith("the small cat")
    code, out, _ = run(capsys, "translate", "--model", tiny_folders["bert-mlm"], "the small [MASK] plays")
    assert code == 0 and out.startswith("mask at piece 4:")
    code, out, _ = run(capsys, "translate", "--model", tiny_folders["bert-classifier"], "the small cat plays")
    assert code == 0 and {line.split("\t")[0] for line in out.splitlines()} == {"negative", "neutral", "positive"}


def test_trace_writes_the_kinds_each_family_has(capsys, tiny_folders, tmp_path):
    expected = {"bart": {"encoder_self", "decoder_self", "cross"}, "gpt2": {"decoder_self"}, "bert-mlm": {"encoder_self"}}
    for family, fields in expected.items():
        out = tmp_path / f"{family}.npz"
        code, _, err = run(capsys, "trace", "--model", tiny_folders[family], "--text", "the small [MASK] sees", "--out", out)
        assert code == 0, err
        with np.load(out, allow_pickle=False) as data:
            assert {name for name in ("encoder_self", "decoder_self", "cross") if name in data.files} == fields
            if family == "bert-mlm":
                assert data["mask_candidate_ids"].shape[0] == 1


@pytest.mark.parametrize("family, kind", [("t5", "cross"), ("gpt2", "decoder"), ("bert-classifier", "encoder")])
def test_export_figures(capsys, tiny_folders, tmp_path, family, kind):
    out = tmp_path / f"{family}.png"
    code, _, err = run(capsys, "export", "--model", tiny_folders[family], "--text", "the small cat", "--kind", kind, "--out", out)
    assert code == 0, err
    assert_figure(out)
    positional = tmp_path / f"{family}-positions.svg"
    code, _, err = run(
        capsys, "export", "--view", "positional", "--positions", "24", "--model", tiny_folders[family], "--out", positional
    )
    assert code == 0, err


def test_evaluate_on_a_tsv(capsys, tiny_folders, tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"the small cat sees the dog {i}\tle petit chat voit le chien {i}\n" for i in range(40)))
    code, out, err = run(capsys, "evaluate", "--model", tiny_folders["marian"], "--corpus", tsv, "--json")
    assert code == 0, err
    assert '"exact_match"' in out and '"token_accuracy": null' in out
    code, _, err = run(capsys, "evaluate", "--model", tiny_folders["gpt2"], "--corpus", tsv)
    assert code == 1 and "not an encoder-decoder" in err


def test_a_missing_id_prints_the_fetch_command(capsys):
    code, _, err = run(capsys, "translate", "--model", "nobody-here/no-such-model", "hello")
    assert code == 1
    assert "hf download nobody-here/no-such-model" in err and "Traceback" not in err


def test_decoder_only_captions_name_the_prompt_and_the_whole_text(tiny_bundles):
    from model.decoding.stepper import DecodingOptions, Stepper
    from model.figures.attention import FigureOptions, trace_details

    stepper = Stepper(tiny_bundles["gpt2"], "the small cat", DecodingOptions(max_steps=4))
    stepper.run()
    assert stepper.translation().startswith("the small cat")  # the prompt's first token included
    lines = trace_details(stepper.trace(), FigureOptions())
    assert lines[0] == "Prompt: “the small cat”" and lines[1].startswith("Text: “the small cat")


def test_relative_bias_rows_stand_at_their_distances(tiny_bundles):
    from model.figures.positional import positional_figure
    from model.inspection.position_reports import positional_report

    figure = positional_figure(positional_report(tiny_bundles["t5"], 24), [0, 1])
    encoder_axes = figure.axes[0]
    assert encoder_axes.get_ylim() == (12.5, -12.5) and encoder_axes.get_xlim() == (0.5, 4.5)  # heads 1 to 4
    assert [text.get_text() for text in figure.axes[2].get_legend().get_texts()] == ["head 1", "head 2"]
