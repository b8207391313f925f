"""The interactive page (model/figures/html_page.py), read as text: the JSON it embeds holds the trace's every kind,
layer and head (to 1e-6) with the labels the app displays, nothing in it can be fetched, a token such as
``</script><b>x`` stays text, and a page that cannot be written leaves an earlier file as it was. What a browser
draws from it is checked in test_html_page_browser.py."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from model.data.token_labels import display_labels
from model.decoding.stepper import DecodingOptions, Stepper
from model.decoding.trace import Trace
from model.figures.attention import FigureOptions
from model.figures.export import ExportRequest, export_view
from model.figures.html_page import page_data, page_html, save_page
from model.figures.layout import FigureError
from model.files import OutputError
from model.inspection.view import ExploreView
from model.kinds import AttentionKind, SelectionError
from tests.model.figures.test_figures import synthetic_trace

NASTY = "</script><b>x"


def embedded(page: str) -> dict:
    """The JSON the page's data element holds, parsed as the page's script parses it."""
    match = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.DOTALL)
    assert match, "the page has no data element"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def copy_trace(copy_bundle) -> Trace:
    stepper = Stepper(copy_bundle[0], "a b c d", DecodingOptions())
    stepper.run()
    return stepper.trace()


def test_the_page_embeds_every_kind_layer_and_head_with_the_labels_the_app_shows(copy_trace):
    trace = copy_trace
    page = page_html(trace, ExploreView(kind=AttentionKind.CROSS, layer=1, head=2, step=3), FigureOptions(model_name="copy"))
    data = embedded(page)
    assert [kind["name"] for kind in data["kinds"]] == ["encoder", "decoder", "cross"]
    for kind in data["kinds"]:
        weights = trace.matrix(kind["name"])  # [layers, heads, queries, keys]
        np.testing.assert_allclose(np.array(kind["weights"], dtype=np.float64), weights, rtol=0, atol=1e-6)
        queries, keys = trace.axis_labels(kind["name"])
        assert kind["queries"] == display_labels(queries) and kind["keys"] == display_labels(keys)
        assert kind["choices"] == [0, 1, 2, 3, "mean", "max"] + (["rollout"] if kind["name"] != "cross" else [])
        label = AttentionKind(kind["name"]).label
        assert kind["titles"][1][2] == f"{label[0].upper()}{label[1:]}, layer 2, head 3"
        assert kind["titles"][0][4].endswith("layer 1, mean over heads")
        steps = list(range(trace.n_steps + 1))
        assert kind["rows_at_step"] == (None if kind["name"] == "encoder" else steps)
    assert data["initial"] == {"kind": "cross", "layer": 1, "head": 2, "step": 3}
    assert data["n_steps"] == trace.n_steps and len(data["outputs"]) == trace.n_steps + 1
    assert data["value_label"] == "attention weight" and len(data["colormap"]["stops"]) > 8
    assert data["colormap"]["stops"][0] == [68, 1, 84] and data["colormap"]["stops"][-1] == [253, 231, 37]  # viridis
    assert "model copy" in data["details"][0] and "<title>Attention: a b c d (copy)</title>" in page
    # Self-contained: nothing to fetch, no library, no font from the web.
    for outside in ("http://", "https://", "src=", "href=", "@import", "url(", "//cdn"):
        assert outside not in page, outside


def test_a_token_cannot_break_the_page_or_become_html():
    trace = synthetic_trace(6)
    trace.source_tokens[2] = NASTY
    trace.target_tokens[1] = "<!--&amp;\u2028"
    trace.decoder_input_tokens[2] = trace.target_tokens[1]
    trace.source_text = "a <b>bold</b> & sentence"
    page = page_html(trace, ExploreView(), FigureOptions(model_name="<i>m</i>"))
    assert page.count("</script>") == 2  # the data's and the script's own ends: no token closes either early
    assert "<b>" not in page and "<i>" not in page and "<!--" not in page
    data_text = page.split('id="trace-data">')[1].split("</script>")[0]
    assert "\u2028" not in data_text and "\\u003c/script\\u003e" in data_text  # escaped inside the JSON
    assert "<title>Attention: a &lt;b&gt;bold&lt;/b&gt; &amp; sentence (&lt;i&gt;m&lt;/i&gt;)</title>" in page
    data = embedded(page)
    cross = next(kind for kind in data["kinds"] if kind["name"] == "cross")
    assert cross["keys"] == display_labels(trace.source_tokens) and NASTY in cross["keys"][2]
    assert cross["queries"] == display_labels(trace.target_tokens) and "<!--&amp;" in cross["queries"][1]


def test_at_word_level_the_page_holds_words_and_counts_the_rows_each_step_shows():
    trace = synthetic_trace(8)  # every third piece continues a word: "▁mot0 ▁mot1 mot2 ▁mot3 ..."
    data = page_data(trace, ExploreView(word_level=True), FigureOptions())
    words = trace.word_level()
    assert data["level"] == "word" and data["n_steps"] == trace.n_steps  # the slider still steps through pieces
    for kind in data["kinds"]:
        np.testing.assert_allclose(np.array(kind["weights"]), words.matrix(kind["name"]), atol=1e-6)
        assert kind["queries"] == list(words.axis_labels(kind["name"])[0])
    cross = next(kind for kind in data["kinds"] if kind["name"] == "cross")
    groups, _ = trace.target_words()
    assert cross["rows_at_step"] == [0] + [int(groups[step - 1]) + 1 for step in range(1, trace.n_steps + 1)]
    assert cross["rows_at_step"][-1] == len(words.target_tokens) and "word level" in data["details"][0]


def test_a_measure_of_a_whole_layer_offers_its_one_map_and_says_what_the_values_are():
    trace = synthetic_trace(5, layers=2, heads=1)
    measured = replace(trace, measure="alti+", source_share=np.full(trace.n_steps, 0.75, np.float32))
    data = page_data(measured, ExploreView(head=0), FigureOptions())
    for kind in data["kinds"]:
        assert kind["choices"] == [0] and kind["head_titles"] == ["all heads"]
        assert kind["titles"][1][0].startswith("ALTI+ through layer 2")
    assert data["value_label"] == "share of the row"
    assert "ALTI+" in data["values"][-1] and "75% from the source" in data["values"][-1]


def test_a_page_that_cannot_be_written_says_why_and_leaves_the_earlier_file(tmp_path):
    trace = synthetic_trace(5)
    earlier = tmp_path / "page.html"
    earlier.write_bytes(b"an earlier page")
    with pytest.raises(FigureError, match="unknown colour map"):
        save_page(trace, ExploreView(), FigureOptions(colormap="rainbowish"), earlier)
    with pytest.raises(OutputError, match="does not exist"):
        save_page(trace, ExploreView(), FigureOptions(), tmp_path / "missing" / "page.html")
    with pytest.raises(OutputError, match="is a folder"):
        save_page(trace, ExploreView(), FigureOptions(), tmp_path)
    with pytest.raises(SelectionError, match="step must be between 0 and 5"):
        save_page(trace, ExploreView(step=9), FigureOptions(), earlier)
    assert earlier.read_bytes() == b"an earlier page" and sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
    written = save_page(trace, ExploreView(), FigureOptions(), earlier)
    assert written == earlier and Path(written).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_export_view_picks_the_page_by_its_suffix_for_the_focus_and_grid_views_only(tmp_path):
    trace = synthetic_trace(5)
    for view in ("focus", "grid"):
        path = export_view(trace, ExportRequest(view=view, kind="decoder", head="rollout"), tmp_path / f"{view}.html")
        assert embedded(path.read_text(encoding="utf-8"))["initial"]["head"] == "rollout"
    with pytest.raises(SelectionError, match="focus and grid views, not the lines view"):
        export_view(trace, ExportRequest(view="lines"), tmp_path / "lines.html")
    with pytest.raises(SelectionError, match="layer must be between 1 and 2"):
        export_view(trace, ExportRequest(layer=5), tmp_path / "layer.html")
    with pytest.raises(SelectionError, match="rollout"):
        export_view(trace, ExportRequest(kind="cross", head="rollout"), tmp_path / "rollout.html")
    assert not list(tmp_path.glob("lines.*")) and not (tmp_path / "layer.html").exists()
