"""The positional report of the app's Transformer for the schemes that work inside self-attention (issue 42,
model/inspection/position_reports.py), against the scheme's own definitions:

* rope: the rotary angles' rotation check is exact, and the relative property measured on the model's own layer-1
  query and key is at float precision;
* ALiBi: each head's bias by distance is −m_h·|key − query|, its slopes in the summary;
* a relative bias: the encoder's and the decoder's are the model's own tables at T5's buckets;
* none: the decoder's causal mask and the encoder's uniform reading; no rotation to check;
* each draws as a figure (PNG) with the report's own words as its caption.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.figures.positional import positional_figure
from model.inspection.position_reports import positional_report
from model.nn.positions import alibi_slopes, relative_buckets
from tests.conftest import tiny_bundle


@pytest.fixture(scope="module")
def bundles() -> dict:
    return {scheme: tiny_bundle("copy", size=50, positional_encoding=scheme)[0] for scheme in ("rope", "alibi", "relative", "none")}


def test_rope_s_report_measures_the_relative_property_on_the_model(bundles):
    report = positional_report(bundles["rope"], 24)
    assert report is not None and report.kind == "rotary" and report.table_like
    assert report.table.shape == (24, bundles["rope"].config.d_model // bundles["rope"].config.n_heads)
    assert np.nanmax(report.rotation_error) < 1e-6
    measured = float(report.summary.split("within ")[1].split(":")[0])
    assert measured < 1e-5 and "Measured on this model" in report.summary


def test_alibi_s_report_is_minus_the_slope_times_the_distance(bundles):
    report = positional_report(bundles["alibi"], 24)
    assert report is not None and report.relative and not report.table_like
    distances = report.row_values
    assert distances[0] == -12 and distances[-1] == 12
    heads = bundles["alibi"].config.n_heads
    expected = -alibi_slopes(heads).numpy()[None, :] * np.abs(distances)[:, None]  # [2D + 1, H]
    assert np.allclose(report.table, expected) and np.allclose(report.similarity, expected)
    assert "1/4, 1/16, 1/64, 1/256" in report.summary  # 4 heads: 2^-2, 2^-4, …


def test_a_relative_bias_report_reads_the_model_s_own_tables(bundles):
    model = bundles["relative"].model
    report = positional_report(bundles["relative"], 24)
    assert report is not None and report.kind == "relative"
    offsets = torch.tensor(report.row_values)[None]  # [1, 2D + 1]: key − query
    for table, stack in ((report.table, model.positions.encoder_table), (report.similarity, model.positions.decoder_table)):
        bidirectional = stack is model.positions.encoder_table
        expected = stack(relative_buckets(offsets, bidirectional))[0].detach().numpy()  # [2D + 1, H]
        assert np.allclose(table, expected)


def test_without_positions_the_report_shows_the_masks_and_says_so(bundles):
    report = positional_report(bundles["none"], 10)
    assert report is not None and report.kind == "none" and not report.table_like
    assert np.array_equal(report.table, np.tril(np.ones((10, 10)))) and (report.similarity == 1).all()
    assert "cannot tell orders apart" in report.summary


@pytest.mark.parametrize("scheme", ["rope", "alibi", "relative", "none"])
def test_each_scheme_draws_with_its_own_words(bundles, scheme, tmp_path):
    report = positional_report(bundles[scheme], 16)
    assert report is not None
    figure = positional_figure(report, [0, 1])
    texts = " ".join(text.get_text() for text in figure.texts)
    assert report.summary.split(":")[0] in texts
    figure.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000
