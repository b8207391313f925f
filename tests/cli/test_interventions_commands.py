"""``transformer-explorer patch`` and ``lens`` end to end on the shipped default model: every output by the suffix of
--out, the numbers of each file checked against the core's own results, and bad inputs answered in one line that
writes nothing."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from model.interventions.decoder_lens import bundle_decoder_lens
from model.interventions.logit_attribution import bundle_logit_attribution
from model.interventions.logit_lens import bundle_logit_lens
from model.interventions.patching import activation_patching
from model.io import checkpoint
from model.io.shipped import resolve_model
from tests.conftest import assert_figure

CLEAN, CORRUPT = "the cat sees the dog", "the cats see the dog"  # the first number pair the grammar gives
TEXT = "the black cat sees the small dog"


@pytest.fixture(scope="module")
def bundle():
    return checkpoint.load(resolve_model("default"))


def rows(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_patch_writes_every_grid_as_csv_and_npz_and_names_what_restores(run, tmp_path, bundle):
    code, out, err = run("patch", "--model", "default", "--pair", "number", "--out", "patch.csv")
    lines = out.splitlines()
    assert code == 0 and err == "" and lines[-1] == "wrote patch.csv"
    assert lines[0] == "minimal pair: number: 'the cat sees the dog' / 'the cats see the dog' (le chat voit → les chats voient)"
    assert lines[1].startswith("step 1: “le” over “les”, logit difference clean ")
    expected = activation_patching(bundle, CLEAN, CORRUPT)
    written = rows(tmp_path / "patch.csv")
    assert len(written) == sum(grid.values.size for grid in expected.grids.values())
    cross = {row["row"] + " " + row["column"]: float(row["restored"]) for row in written if row["component"] == "cross heads"}
    np.testing.assert_allclose(
        [cross[f"L{r + 1} H{c + 1}"] for r in range(3) for c in range(4)], expected.grids["cross heads"].values.ravel(), atol=1e-6
    )
    assert run("patch", "--model", "default", "--clean", CLEAN, "--corrupt", CORRUPT, "--step", "3", "--out", "p.npz")[0] == 0
    with np.load(tmp_path / "p.npz", allow_pickle=False) as arrays:
        assert arrays["cross_heads"].shape == (3, 4) and str(arrays["clean_token"]) == "▁voit" and int(arrays["step"]) == 2
        assert list(arrays["encoder_residual_rows"]) == ["embeddings", "after L1", "after L2", "after L3"]


@pytest.mark.parametrize("suffix", [".svg", ".pdf", ".png"])
def test_patch_draws_the_chosen_grids(run, tmp_path, suffix):
    options = ("--grids", "cross heads,encoder residual", "--dpi", "100")
    assert run("patch", "--model", "default", "--clean", CLEAN, "--corrupt", CORRUPT, *options, "--out", f"p{suffix}")[0] == 0
    texts = ("Activation patching (denoising, exact)", "cross attention: each head", "cat/cats")
    assert_figure(tmp_path / f"p{suffix}", dpi=100, texts=texts)


def test_lens_writes_each_tool_as_a_table_that_matches_the_core(run, tmp_path, bundle):
    code, out, _ = run("lens", "--model", "default", "--text", TEXT, "--out", "lens.csv")
    assert code == 0 and "every step's token is the top candidate from: L3 cross-attention" in out
    lens = bundle_logit_lens(bundle, TEXT, 5)
    written = rows(tmp_path / "lens.csv")
    assert len(written) == len(lens.readings) * lens.chosen_ranks.shape[1]
    last = [row for row in written if row["reading"] == lens.readings[-1]]
    assert all(row["chosen_rank"] == "1" for row in last) and last[0]["top_1"] == lens.candidate_tokens[-1][0][0]
    assert run("lens", "--model", "default", "--text", TEXT, "--tool", "attribution", "--out", "dla.csv")[0] == 0
    attribution = bundle_logit_attribution(bundle, TEXT)
    by_step: dict[str, float] = {}
    for row in rows(tmp_path / "dla.csv"):
        by_step[row["step"]] = by_step.get(row["step"], 0.0) + float(row["value"])
    np.testing.assert_allclose([by_step[str(t + 1)] for t in range(len(attribution.logits))], attribution.logits, atol=1e-4)
    code, out, _ = run("lens", "--model", "default", "--text", TEXT, "--tool", "decoder-lens", "--out", "dl.csv")
    result = bundle_decoder_lens(bundle, TEXT)
    assert code == 0 and [row["translation"] for row in rows(tmp_path / "dl.csv")] == result.translations
    assert f"L3: {result.translations[-1]}" in out


def test_lens_attribution_versus_a_token_decomposes_the_logit_difference(run, tmp_path, bundle):
    versus = ("lens", "--model", "default", "--text", CLEAN, "--tool", "attribution", "--versus", "les")
    assert run(*versus, "--step", "1", "--out", "vs.svg")[0] == 0
    assert_figure(tmp_path / "vs.svg", texts=("Direct logit attribution of “le” − “les” at step 1", "logit difference"))
    assert run(*versus, "--out", "vs.csv")[0] == 0
    les = bundle.target_tokenizer.piece_to_id("les")
    expected = bundle_logit_attribution(bundle, CLEAN, [les] + [-1] * 5)
    first = [row for row in rows(tmp_path / "vs.csv") if row["step"] == "1"]
    assert {row["compared"] for row in first} == {str(les)} and expected.compared_tokens[:2] == ["▁les", ""]
    np.testing.assert_allclose(sum(float(row["value"]) for row in first), expected.logits[0], atol=1e-4)


@pytest.mark.parametrize(
    ("tool", "text"), [("logit-lens", "Logit lens"), ("attribution", "Direct logit attribution"), ("decoder-lens", "DecoderLens")]
)
def test_lens_draws_each_tool(run, tmp_path, tool, text):
    assert run("lens", "--model", "default", "--text", TEXT, "--tool", tool, "--step", "3", "--out", "f.svg")[0] == 0
    assert_figure(tmp_path / "f.svg", texts=(text,))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ("patch", "--model", "default", "--clean", CLEAN, "--corrupt", "the cats see the big dog"),
            "has 6 pieces and the corrupted one 7",
        ),
        (("patch", "--model", "default", "--clean", CLEAN), "give --clean and --corrupt"),
        (("patch", "--model", "default", "--pair", "number", "--clean", CLEAN), "give --pair or --clean and --corrupt"),
        (("patch", "--model", "default", "--pair", "gender", "--pair-index", "999"), "--pair-index must be from 0 to"),
        (("patch", "--model", "default", "--pair", "number", "--grids", "heads"), "--grids: heads; choose from"),
        (("patch", "--model", "rnn-bahdanau", "--pair", "number"), "has no residual stream of layers"),
        (("lens", "--model", "default", "--text", "  "), "the sentence is empty"),
        (("lens", "--model", "tagger", "--text", "the cat", "--tool", "decoder-lens"), "an encoder-only model has none"),
        (("lens", "--model", "default", "--text", TEXT, "--tool", "attribution", "--step", "40"), "the translation has"),
        (("lens", "--model", "default", "--text", TEXT, "--tool", "attribution", "--versus", "zzqx"), "not a single piece"),
        (("lens", "--model", "default", "--text", TEXT, "--versus", "les"), "give --tool attribution"),
    ],
)
def test_bad_inputs_are_one_line_and_write_nothing(run, tmp_path, arguments, message):
    code, out, err = run(*arguments, "--out", "out.csv")
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "out.csv").exists()


def test_an_output_that_is_not_a_table_or_figure_is_refused_first(run):
    code, _, err = run("patch", "--model", "default", "--pair", "number", "--out", "patch.txt")
    assert code != 0 and "--out must end in .npz, .csv, .png, .svg, .pdf" in err
