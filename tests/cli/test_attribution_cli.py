"""The command line of the measures beyond attention: ``--mask-heads`` on translate, trace and export (the trace and
the captions say which heads were knocked out), and ``attribute --measure M`` as data (raw values and the shares the
views draw) and as a figure, refusing a kind a measure does not define with the reason."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.attribution.norms import norm_contributions
from model.cli.commands import main
from model.io import checkpoint
from model.nn.masking import masked_model, parse_heads
from tests.conftest import assert_figure


@pytest.fixture(scope="module")
def model_file(toy_fr_bundle, tmp_path_factory):
    return checkpoint.save(toy_fr_bundle[0], tmp_path_factory.mktemp("models") / "model.safetensors")


def test_masked_heads_reach_the_trace_and_the_figure(model_file, tmp_path, capsys):
    out = tmp_path / "trace.npz"
    assert (
        main(
            [
                "trace",
                "--model",
                str(model_file),
                "--text",
                "the cat sleeps",
                "--mask-heads",
                "cross:2:1,encoder:1:3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with np.load(out, allow_pickle=False) as arrays:
        assert arrays["masked_heads"].tolist() == ["encoder:1:3", "cross:2:1"]
    figure = tmp_path / "focus.svg"
    assert (
        main(["export", "--model", str(model_file), "--text", "the cat sleeps", "--mask-heads", "cross:2:1", "--out", str(figure)])
        == 0
    )
    assert "heads knocked out: cross:2:1" in figure.read_text(encoding="utf-8")
    assert main(["translate", "--model", str(model_file), "--mask-heads", "cross:2:1", "the cat sleeps"]) == 0
    capsys.readouterr()
    assert main(["translate", "--model", str(model_file), "--mask-heads", "cross:5:1", "the cat"]) == 1
    assert "has 2 layers of 4 heads" in capsys.readouterr().err


def test_attribute_writes_the_norm_measure_of_the_decoded_sentence(toy_fr_bundle, model_file, tmp_path):
    bundle = toy_fr_bundle[0]
    out = tmp_path / "norm.npz"
    assert (
        main(
            ["attribute", "--model", str(model_file), "--text", "the cat sleeps", "--mask-heads", "decoder:1:1", "--out", str(out)]
        )
        == 0
    )
    with np.load(out, allow_pickle=False) as arrays:
        source_ids = [int(i) for i in bundle.source_ids("the cat sleeps")[0]]
        inputs = [bundle.config.bos_id] + [int(i) for i in arrays["chosen_ids"][:-1]]
        model = masked_model(bundle.model, parse_heads("decoder:1:1"))
        expected = norm_contributions(model, torch.tensor([source_ids]), torch.tensor([inputs]))
        for kind, tables in expected.items():
            np.testing.assert_allclose(arrays[f"{kind.value}_norm"], torch.stack(tables)[:, 0].numpy(), atol=1e-6)
    for suffix in ("png", "pdf"):
        figure = tmp_path / f"norm.{suffix}"
        assert (
            main(["attribute", "--model", str(model_file), "--text", "the cat sleeps", "--kind", "encoder", "--out", str(figure)])
            == 0
        )
        assert_figure(figure, texts=("cat", "sleeps"))  # 6.9 in wide, PNG at 300 dpi; the PDF holds the words


def test_attribute_refuses_what_it_cannot_do(model_file, tmp_path, capsys):
    assert main(["attribute", "--model", str(model_file), "--text", "the cat", "--out", str(tmp_path / "x.txt")]) == 1
    assert "--out must end in" in capsys.readouterr().err
    before = model_file.read_bytes()
    assert main(["attribute", "--model", str(model_file), "--text", "the cat", "--out", str(model_file)]) == 1
    assert "--out must end in" in capsys.readouterr().err
    assert model_file.read_bytes() == before and sorted(p.name for p in model_file.parent.iterdir()) == [model_file.name]


@pytest.mark.parametrize("measure", ["alti+", "value-zeroing", "attn-grad", "grad-input", "shift-att"])
def test_attribute_writes_every_measure_as_data_and_figure(measure, toy_fr_bundle, model_file, tmp_path):
    from model.attribution.measures import MEASURES, compute_measure

    bundle = toy_fr_bundle[0]
    out = tmp_path / "measure.npz"
    assert main(["attribute", "--model", str(model_file), "--text", "the cat sleeps", "--measure", measure, "--out", str(out)]) == 0
    source_ids = [int(i) for i in bundle.source_ids("the cat sleeps")[0]]
    with np.load(out, allow_pickle=False) as arrays:
        expected = compute_measure(bundle.model, source_ids, [int(i) for i in arrays["chosen_ids"]], measure)
        for kind in MEASURES[measure].kinds:
            np.testing.assert_allclose(arrays[f"{kind.value}_{measure}"], expected.values[kind], atol=1e-5)
            np.testing.assert_allclose(arrays[kind.field], expected.shares[kind], atol=1e-5)  # the shares, where the weights were
        assert str(arrays["measure"]) == measure
        if measure in ("alti+", "grad-input"):
            np.testing.assert_allclose(arrays["source_share"], expected.source_share, atol=1e-5)
    figure = tmp_path / "measure.svg"
    assert (
        main(["attribute", "--model", str(model_file), "--text", "the cat sleeps", "--measure", measure, "--out", str(figure)]) == 0
    )
    assert_figure(figure, texts=(MEASURES[measure].label.split(" ")[0], "cat", "sleeps"))


def test_value_zeroing_shows_a_bar_of_its_layers_unless_quiet(model_file, tmp_path, capsys):
    """Value zeroing runs each layer of each kind again once per key: seconds a layer on a 1.5 B model, so the
    command shows how far it has come on stderr (the toy model: 2 layers of each of 3 kinds)."""
    args = ["attribute", "--model", str(model_file), "--text", "the cat sleeps", "--measure", "value-zeroing"]
    assert main([*args, "--out", str(tmp_path / "a.npz")]) == 0
    err = capsys.readouterr().err
    assert "value-zeroing" in err and "6/6" in err and "layers" in err
    assert main([*args, "--out", str(tmp_path / "b.npz"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main([*args[:-1], "norm", "--out", str(tmp_path / "c.npz")]) == 0  # a measure in one part: no bar
    assert capsys.readouterr().err == ""


def test_attribute_reports_the_integrated_gradients_gap_and_flags_what_did_not_converge(model_file, tmp_path, capsys, monkeypatch):
    from model.attribution import gradients
    from model.attribution.integration import gap_percent

    out = tmp_path / "ig.npz"
    text = ["attribute", "--model", str(model_file), "--text", "the cat sleeps", "--measure", "ig", "--out"]
    assert main([*text, str(out)]) == 0
    printed = capsys.readouterr()
    with np.load(out, allow_pickle=False) as arrays:
        gaps, points = arrays["completeness_gap"], arrays["integration_points"]
        assert arrays["integration_converged"].all() and np.all(gaps <= 0.01) and np.all(points >= 129)
    median, most = gap_percent(float(np.median(gaps))), gap_percent(float(gaps.max()))
    assert f"completeness gap {median} median, {most} at most" in printed.out
    assert f"converged at {len(gaps)} of {len(gaps)}" in printed.out and "warning" not in printed.err
    # A gap of exactly 0 is never reached, and 129 points allow no refinement: every prediction is flagged.
    monkeypatch.setattr(gradients, "IG_GAP_TOLERANCE", 0.0)
    monkeypatch.setattr(gradients, "IG_MAX_POINTS", 129)
    figure = tmp_path / "ig.svg"
    assert main([*text, str(figure)]) == 0
    printed = capsys.readouterr()
    assert printed.err.startswith("warning: integrated gradients did not converge at steps 1 (gap ")
    assert all(f"{step + 1} (gap " in printed.err for step in range(len(gaps)))
    assert f"converged at 0 of {len(gaps)}" in printed.out
    assert_figure(figure, texts=("Integrated gradients, step", "NOT CONVERGED within 129 points"))


def test_attribute_says_which_kinds_a_measure_lacks(model_file, tmp_path, capsys):
    figure = tmp_path / "alti.png"
    assert main(["attribute", "--model", str(model_file), "--text", "the cat", "--measure", "alti", "--out", str(figure)]) == 1
    assert "ALTI has no cross-attention" in capsys.readouterr().err and not figure.exists()
    assert (
        main(
            [
                "attribute",
                "--model",
                str(model_file),
                "--text",
                "the cat",
                "--measure",
                "ig",
                "--kind",
                "encoder",
                "--out",
                str(figure),
            ]
        )
        == 1
    )
    assert "Integrated gradients has no encoder self-attention" in capsys.readouterr().err  # an encoder-decoder's


def _attribute(model_file, out, *options) -> int:
    return main(["attribute", "--model", str(model_file), "--text", "the cat sleeps", *options, "--out", str(out)])


def test_one_map_is_drawn_alone_with_its_tokens_and_layer_wide_maps_are_titled_all_heads(model_file, tmp_path):
    saliency = tmp_path / "saliency.svg"  # one map in all: the focus view, every token on its axes
    assert _attribute(model_file, saliency, "--measure", "grad-input") == 0
    assert_figure(saliency, texts=("query (target)", "key (source)", "Gradient × input (cross)"))
    assert "layer 1" not in saliency.read_text(encoding="utf-8")
    head = tmp_path / "norm.svg"
    assert _attribute(model_file, head, "--measure", "norm", "--layer", "2", "--head", "1") == 0
    assert_figure(head, texts=("layer 2, head 1", "query (target)", "key (source)"))
    grid = tmp_path / "alti.svg"  # one map per layer, every layer: a grid titled by layer, "all heads" above it
    assert _attribute(model_file, grid, "--measure", "alti+") == 0
    assert_figure(grid, texts=("all heads", "layer 1", "layer 2"))
    assert "head 1" not in grid.read_text(encoding="utf-8")


def test_alti_plus_through_a_layer_gives_that_layers_source_share(model_file, tmp_path):
    data = tmp_path / "alti.npz"
    assert _attribute(model_file, data, "--measure", "alti+") == 0
    with np.load(data, allow_pickle=False) as arrays:
        through_first = float(arrays["cross"][0, 0, -1].sum())  # each row as shares: its sum is the source share
        through_last = float(arrays["source_share"][-1])
    figure = tmp_path / "alti-1.svg"
    assert _attribute(model_file, figure, "--measure", "alti+", "--layer", "1") == 0
    text = figure.read_text(encoding="utf-8")
    assert f"last prediction: {through_first:.0%} from the source" in text
    last = tmp_path / "alti-2.svg"
    assert _attribute(model_file, last, "--measure", "alti+", "--layer", "2") == 0
    assert f"last prediction: {through_last:.0%} from the source" in last.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "options,message",
    [
        (["--head", "2"], "--head picks a head of the layer --layer names: give --layer too"),
        (["--layer", "0"], "--layer counts from 1, got 0"),
        (["--layer", "9"], "--layer 9: Norm-based ‖α f(x)‖ gives 2 layer(s) of cross-attention"),
        (["--layer", "1", "--head", "x"], "--head: "),
    ],
)
def test_attribute_refuses_a_layer_or_head_it_does_not_have(model_file, tmp_path, capsys, options, message):
    out = tmp_path / "x.png"
    assert _attribute(model_file, out, "--measure", "norm", *options) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
