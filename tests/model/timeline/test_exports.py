"""The timeline's files: a GIF with one frame per snapshot, the strip of small multiples as PNG, SVG and PDF (rendered
by librsvg and poppler where installed), a difference drawn red-blue around 0, and the curves as CSV and figure, each
written atomically."""

from __future__ import annotations

import csv
import subprocess

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image

from model.figures.attention import FigureOptions
from model.figures.layout import FigureError
from model.figures.saving import save_figure
from model.kinds import AttentionKind
from model.timeline.animation import save_gif
from model.timeline.curve_files import curves_figure, save_curves_csv, save_curves_figure
from model.timeline.figures import difference_figure, snapshot_strip
from model.timeline.views import ViewSpec
from tests.conftest import assert_figure, png_size
from tests.model.figures.test_figures import renderer

HEAD = ViewSpec(AttentionKind.CROSS, 0, 1)


@pytest.mark.parametrize("view", [HEAD, ViewSpec(AttentionKind.DECODER, 0), ViewSpec(AttentionKind.ENCODER)])
def test_the_gif_has_one_frame_per_snapshot(tmp_path, traces, view):
    path = save_gif(traces, view, tmp_path / "anim.gif")
    with Image.open(path) as image:
        assert image.format == "GIF" and image.n_frames == len(traces) and image.size[0] == 500
        sizes = set()
        for frame in range(image.n_frames):
            image.seek(frame)
            sizes.add(image.size)
        assert len(sizes) == 1


def test_the_strip_renders_as_png_svg_and_pdf(tmp_path, traces):
    figure = snapshot_strip(traces, HEAD, FigureOptions())
    for suffix in (".png", ".svg", ".pdf"):
        save_figure(figure, tmp_path / f"strip{suffix}", dpi=100)
        assert_figure(tmp_path / f"strip{suffix}", dpi=100, texts=("step 1", "step 177", "step 500") if suffix != ".png" else ())
    subprocess.run([renderer("rsvg-convert"), str(tmp_path / "strip.svg"), "-o", str(tmp_path / "svg.png")], check=True)
    subprocess.run(
        [renderer("pdftoppm"), "-png", "-r", "40", "-singlefile", str(tmp_path / "strip.pdf"), str(tmp_path / "pdf")], check=True
    )
    assert abs(png_size(tmp_path / "svg.png")[0] - 6.9 * 96) <= 1 and abs(png_size(tmp_path / "pdf.png")[0] - 6.9 * 40) <= 1
    grid = snapshot_strip(traces[:3], ViewSpec(AttentionKind.ENCODER), FigureOptions(width=3.3))
    save_figure(grid, tmp_path / "grid.png", dpi=100)
    assert_figure(tmp_path / "grid.png", width=3.3, dpi=100)


@pytest.mark.parametrize("dpi", [80, 110, 300])
def test_the_strip_titles_stay_below_the_caption_at_any_resolution(traces, dpi):
    """matplotlib moves a title above its axes' top tick labels on its own, by their measured size, which grows with
    hinting at low resolutions: at 110 dpi the snapshots' names rose into the caption."""
    figure = snapshot_strip(traces, HEAD, FigureOptions())
    figure.set_dpi(dpi)
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    caption_bottom = min(text.get_window_extent(renderer).y0 for text in figure.texts if text.get_text())
    titles = [axes.title for axes in figure.axes if axes.title.get_text()]
    assert titles and all(title.get_window_extent(renderer).y1 <= caption_bottom for title in titles)


def test_a_difference_is_drawn_red_blue_centred_at_zero(tmp_path, traces):
    figure = difference_figure(traces[0], traces[-1], HEAD)
    image = next(axes.get_images()[0] for axes in figure.axes if axes.get_images())
    low, high = image.get_clim()
    assert low == -high > -1.0 - 1e-9 and image.get_cmap().name.startswith("RdBu_r")
    assert "minus step 1" in figure.texts[0].get_text()
    save_figure(figure, tmp_path / "diff.svg")
    assert_figure(tmp_path / "diff.svg", texts=("step 500 minus step 1",))


def test_the_curves_csv_has_a_row_per_snapshot_and_head(tmp_path, curves):
    path = save_curves_csv(curves, tmp_path / "curves.csv")
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == [
        "snapshot",
        "step",
        "name",
        "elapsed_seconds",
        "train_loss",
        "validation_bleu",
        "validation_exact_match",
        "validation_loss",
        "kind",
        "layer",
        "head",
        "entropy",
        "normalised_entropy",
        "role",
        "attention_change",
        "aer",
        "importance",
        "alignment_like_from_step",
    ]
    assert len(rows) == 8 * 3 * 2  # snapshots x kinds x heads
    cross = [row for row in rows if row["kind"] == "cross"]
    assert [float(row["aer"]) for row in cross[-2:]] == curves.aer[-1, 0].tolist()
    assert {row["alignment_like_from_step"] for row in cross} == {str(onset.step) for onset in curves.onsets}
    assert all(row["aer"] == "" for row in rows if row["kind"] != "cross")
    assert rows[0]["validation_bleu"] == "" and float(rows[-1]["validation_exact_match"]) == 1.0


def test_the_curves_figure_marks_changes_and_onsets_on_a_log_step_axis(tmp_path, curves):
    figure = curves_figure(curves)
    axes = figure.axes
    assert axes[-1].get_xscale() == "log" and len(axes) == 2 + 1 + 3  # loss, validation, AER, an entropy per kind
    assert any(text.get_text() for text in axes[0].texts)  # the marked changes' ranks
    for suffix in (".png", ".pdf"):
        save_curves_figure(curves, tmp_path / f"curves{suffix}", dpi=80)
    assert png_size(tmp_path / "curves.png")[0] == round(6.9 * 80)
    (tmp_path / "curves.bmp").write_bytes(b"earlier")
    with pytest.raises(FigureError, match="not .bmp"):
        save_curves_figure(curves, tmp_path / "curves.bmp")
    assert (tmp_path / "curves.bmp").read_bytes() == b"earlier" and np.isfinite(curves.train_loss).all()
