"""Exports: PNG decodes at the expected size and is not blank, SVG parses and holds the token labels,
CSV and NPY round-trip the matrix; "Export all", the clipboard, and the ``export`` command."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from PySide6.QtGui import QGuiApplication, QImage

from explorer.export_cli import main as export_main
from model.selection import SelectionError, parse_head, select
from model.stepper import Stepper

from .gui_helpers import close_window, make_window, saved_model


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0][1:], [row[0] for row in rows[1:]], np.array([[float(v) for v in row[1:]] for row in rows[1:]])


def svg_texts(path) -> str:
    root = ElementTree.parse(path).getroot()
    return " ".join("".join(element.itertext()) for element in root.iter() if element.tag.endswith("text"))


def assert_not_blank(image: QImage):
    """Many colours, and more than 2% of the pixels differ from the background."""
    assert not image.isNull()
    image = image.convertToFormat(QImage.Format_ARGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.width() * image.height())
    values, counts = np.unique(pixels, return_counts=True)
    assert len(values) > 10
    assert 1 - counts.max() / pixels.size > 0.02


@pytest.fixture
def explore(qtbot, tmp_path, copy_bundle):
    window = make_window(qtbot, tmp_path, copy_bundle[0])
    tab = window.explore_tab
    tab.controls.source.setText("a b c d")
    tab.controls.translate_button.click()
    yield window, tab
    close_window(window)


@pytest.mark.parametrize("scale", [1, 3])
def test_png_export_has_the_scaled_size_and_is_not_blank(explore, tmp_path, scale):
    _, tab = explore
    for view in ("focus", "grid", "lines", "candidates"):
        path = tab.export_view(view, tmp_path / f"{view}.png", scale)
        image = QImage(str(path))
        widget = tab.view_widget(view)
        assert (image.width(), image.height()) == (widget.width() * scale, widget.height() * scale)
        assert_not_blank(image)


def test_svg_export_parses_and_holds_the_token_labels(explore, tmp_path):
    window, tab = explore
    path = tab.export_view("focus", tmp_path / "focus.svg")
    texts = svg_texts(path)
    for token in set(window.session.trace.source_tokens + window.session.trace.target_tokens):
        assert token in texts
    assert "cross-attention" in texts


def test_csv_and_npy_round_trip_the_matrix(explore, tmp_path):
    window, tab = explore
    tab.export_view("focus", tmp_path / "focus.csv")
    tab.export_view("focus", tmp_path / "focus.npy")
    keys, queries, values = read_csv(tmp_path / "focus.csv")
    np.testing.assert_array_equal(values, tab.focus.values)
    np.testing.assert_array_equal(np.load(tmp_path / "focus.npy"), tab.focus.values)
    assert keys == tab.focus.key_labels and queries == tab.focus.query_labels
    tab.export_view("grid", tmp_path / "grid.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "grid.npy"), window.session.trace.cross)
    tab.export_view("candidates", tmp_path / "candidates.csv")
    _, tokens, probabilities = read_csv(tmp_path / "candidates.csv")
    assert tokens == tab.candidates.tokens
    np.testing.assert_allclose(probabilities[:, 0], tab.candidates.probabilities)


def test_export_all_writes_every_kind_layer_and_head(explore, tmp_path):
    window, tab = explore
    written = tab.export_all_to(tmp_path / "all")
    trace = window.session.trace
    # 3 kinds x 2 layers x (4 heads + mean) x (png, csv, npy)
    assert len(written) == 3 * 2 * 5 * 3
    np.testing.assert_array_equal(np.load(tmp_path / "all" / "cross_L2_H3.npy"), trace.cross[1, 2])
    np.testing.assert_array_equal(np.load(tmp_path / "all" / "encoder_L1_mean.npy"),
                                  trace.encoder_self[0].mean(axis=0))
    assert_not_blank(QImage(str(tmp_path / "all" / "decoder_L1_H1.png")))


def test_copy_to_clipboard(explore):
    _, tab = explore
    tab.export_scale.setValue(1)
    tab.copy_view("focus")
    image = QGuiApplication.clipboard().image()
    assert (image.width(), image.height()) == (tab.focus.width(), tab.focus.height())


def test_a_bad_export_name_gets_a_message(explore, tmp_path):
    _, tab = explore
    with pytest.raises(ValueError, match="png or .svg|csv or .npy"):
        tab.export_view("focus", tmp_path / "focus.bmp")


def test_export_command_writes_what_the_focus_view_shows(tmp_path, copy_bundle, capsys):
    bundle = copy_bundle[0]
    model = saved_model(bundle, tmp_path)
    stepper = Stepper(bundle, "a b c")
    stepper.run()
    trace = stepper.trace()
    base = ["--model", str(model), "--text", "a b c", "--kind", "cross", "--layer", "2", "--head"]
    assert export_main(base + ["3", "--out", str(tmp_path / "m.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "m.npy"), trace.cross[1, 2])
    assert export_main(base + ["mean", "--step", "2", "--out", str(tmp_path / "m.csv")]) == 0
    keys, queries, values = read_csv(tmp_path / "m.csv")
    np.testing.assert_allclose(values, trace.cross[1, :, :2].mean(axis=0), atol=1e-7)
    assert queries == trace.target_tokens[:2] and keys == trace.source_tokens
    assert export_main(base + ["max", "--out", str(tmp_path / "m.png"), "--scale", "1", "--size", "640x480"]) == 0
    image = QImage(str(tmp_path / "m.png"))
    assert (image.width(), image.height()) == (640, 480)
    assert_not_blank(image)
    assert export_main(base + ["1", "--out", str(tmp_path / "m.svg")]) == 0
    assert all(token in svg_texts(tmp_path / "m.svg") for token in trace.source_tokens)
    capsys.readouterr()
    start = ["--model", str(model), "--text", "a b c", "--kind", "cross"]
    for bad, message in ((["--layer", "9", "--head", "1", "--out", "x.npy"], "layer must be between 1 and 2"),
                         (["--layer", "1", "--head", "9", "--out", "x.npy"], "head must be between 1 and 4"),
                         (["--layer", "1", "--head", "1", "--out", "m.txt"], "--out must end in"),
                         (["--layer", "1", "--head", "1", "--step", "40", "--out", "x.npy"], "step must be")):
        assert export_main(start + bad) == 2
        assert message in capsys.readouterr().err
    assert export_main(["--model", str(tmp_path / "none.safetensors"), *start[2:], "--layer", "1", "--head", "1",
                        "--out", "x.npy"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_selection_rejects_what_the_trace_does_not_have(copy_bundle):
    stepper = Stepper(copy_bundle[0], "a b")
    stepper.run()
    trace = stepper.trace()
    with pytest.raises(SelectionError, match="rollout"):
        select(trace, "cross", 0, "rollout")
    with pytest.raises(SelectionError, match="step"):
        select(trace, "cross", 0, 0, step=99)
    with pytest.raises(SelectionError):
        parse_head("zero")
    assert parse_head("2") == 1 and parse_head("mean") == "mean"
