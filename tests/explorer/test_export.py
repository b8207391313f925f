"""Exports from the window and the ``export`` command: the same settings give the same data and the
same figure from either; every view and format; Export all with its index; the interactive page; the shortcuts
Ctrl+E, Ctrl+Shift+C and F1, each bound once; clear errors that leave files intact."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox

from model.cli.commands import main as cli_main
from model.inspection.selection import select
from tests.conftest import saved_model
from tests.model.figures.test_figures import svg_texts
from tests.model.figures.test_html_page import embedded

TEXT = "a b c d"


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0][1:], [row[0] for row in rows[1:]], np.array([[float(v) for v in row[1:]] for row in rows[1:]])


def pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture
def explore(qtbot, tmp_path, window, copy_bundle):
    model = saved_model(copy_bundle[0], tmp_path)
    window.open_model(str(model))
    qtbot.waitUntil(lambda: window.explore.bundle is not None, timeout=10000)
    tab = window.explore_tab
    tab.controls.source.setText(TEXT)
    tab.controls.translate_button.click()
    return window, tab, model


def test_the_window_and_the_command_write_the_same_data_and_the_same_figure(explore, tmp_path):
    window, tab, model = explore
    tab._on_head_chosen(1, 2)  # layer 2, head 3
    settings = window.settings
    settings.setValue("export/width", 3.3)
    settings.setValue("export/font_size", 7.0)
    settings.setValue("export/dpi", 120)
    for suffix in (".png", ".csv", ".pdf", ".svg"):
        tab.export_view("focus", tmp_path / f"window{suffix}")
        assert (
            cli_main(
                [
                    "export",
                    "--model",
                    str(model),
                    "--text",
                    TEXT,
                    "--kind",
                    "cross",
                    "--layer",
                    "2",
                    "--head",
                    "3",
                    "--width",
                    "column",
                    "--font-size",
                    "7",
                    "--dpi",
                    "120",
                    "--out",
                    str(tmp_path / f"command{suffix}"),
                ]
            )
            == 0
        )
    assert (tmp_path / "window.csv").read_bytes() == (tmp_path / "command.csv").read_bytes()
    np.testing.assert_array_equal(pixels(tmp_path / "window.png"), pixels(tmp_path / "command.png"))
    assert (tmp_path / "window.svg").read_bytes() == (tmp_path / "command.svg").read_bytes()
    assert (tmp_path / "window.pdf").read_bytes() == (tmp_path / "command.pdf").read_bytes()
    keys, queries, values = read_csv(tmp_path / "window.csv")
    np.testing.assert_array_equal(values, window.explore.trace.cross[1, 2])
    assert queries == window.explore.trace.target_tokens and keys == window.explore.trace.source_tokens


@pytest.mark.parametrize("view", ["focus", "grid", "lines", "candidates"])
def test_every_view_exports_as_a_figure_and_as_data(explore, tmp_path, view):
    window, tab, _ = explore
    window.settings.setValue("export/dpi", 80)
    image = pixels(tab.export_view(view, tmp_path / f"{view}.png"))
    assert image.shape[1] == round(6.9 * 80)  # two columns at 80 dpi
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 10
    trace = window.explore.trace
    values = np.load(tab.export_view(view, tmp_path / f"{view}.npy"))
    expected = {
        "focus": select(trace, "cross", 0, "mean").values,
        "grid": trace.cross,
        "lines": trace.cross[0],
        "candidates": trace.candidate_probabilities[-1],
    }[view]
    np.testing.assert_allclose(values, expected, atol=1e-7)


def test_export_all_from_the_window_writes_figures_data_and_an_index(explore, tmp_path):
    window, tab, _ = explore
    window.settings.setValue("export/dpi", 60)
    written = tab.export_all_to(tmp_path / "all")
    trace = window.explore.trace
    # 3 kinds x 2 layers x (4 heads + mean + max [+ rollout]) x (png, csv, npy) + 3 grids + index.csv
    assert len(written) == (2 * 7 + 2 * 7 + 2 * 6) * 3 + 3 + 1
    np.testing.assert_array_equal(np.load(tmp_path / "all" / "cross_L2_H3.npy"), trace.cross[1, 2])
    assert (tmp_path / "all" / "index.csv").read_text().count("\n") == len(written)


def test_ctrl_e_ctrl_shift_c_and_f1_work_each_bound_once(explore, qtbot, tmp_path, monkeypatch):
    window, tab, _ = explore
    window.settings.setValue("export/dpi", 60)
    target = tmp_path / "pressed.png"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(target), ""))
    shown = []
    monkeypatch.setattr(QMessageBox, "information", lambda *args, **kwargs: shown.append(args[1:3]))
    for key in ("Ctrl+E", "Ctrl+Shift+C", "F1"):
        actions = [a for a in window.findChildren(type(tab.exports.focus_action)) if a.shortcut().toString() == key]
        assert len(actions) == 1, key
    QGuiApplication.clipboard().clear()
    tab.controls.source.setFocus()
    qtbot.waitUntil(tab.controls.source.hasFocus, timeout=3000)
    qtbot.keyClick(tab.controls.source, Qt.Key_E, Qt.ControlModifier)
    assert target.is_file() and pixels(target).shape[1] == round(6.9 * 60)
    qtbot.keyClick(tab.controls.source, Qt.Key_C, Qt.ControlModifier | Qt.ShiftModifier)
    assert not QGuiApplication.clipboard().image().isNull()
    qtbot.keyClick(tab.focus, Qt.Key_F1)
    assert shown and shown[0][0] == "Keyboard shortcuts"


def test_a_failed_export_says_why_and_keeps_the_earlier_file(explore, tmp_path, monkeypatch):
    window, tab, model = explore
    earlier = tmp_path / "kept.png"
    earlier.write_bytes(b"earlier")
    messages = []
    window.explore.message.connect(messages.append)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(tmp_path / "no" / "x.svg"), ""))
    tab.exports.export_dialog("focus")
    assert messages[-1].startswith("Export failed:") and "does not exist" in messages[-1]
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(model), ""))
    before = model.read_bytes()
    tab.exports.export_dialog("focus")
    assert messages[-1].startswith("Export failed:") and model.read_bytes() == before


def test_the_positional_tab_and_the_command_export_the_positional_figure_and_table(explore, tmp_path):
    window, _, model = explore
    tab = window.positional_tab
    window.settings.setValue("export/dpi", 60)
    image = pixels(tab.export_to(tmp_path / "positional.png"))
    assert image.shape[1] == round(6.9 * 60) and len(np.unique(image.reshape(-1, 3), axis=0)) > 50
    texts = " ".join(svg_texts(tab.export_to(tmp_path / "positional.svg")))
    assert "Rₖ" in texts and "similarity PE(i)·PE(j)" in texts and "R_k" not in texts
    np.testing.assert_array_equal(np.load(tab.export_to(tmp_path / "table.npy")), tab.report.table)
    assert (
        cli_main(
            [
                "export",
                "--model",
                str(model),
                "--view",
                "positional",
                "--positions",
                str(tab.report.table.shape[0]),
                "--out",
                str(tmp_path / "command.npy"),
            ]
        )
        == 0
    )
    np.testing.assert_array_equal(np.load(tmp_path / "command.npy"), tab.report.table)


def test_the_launcher_says_in_one_line_when_there_is_no_display(monkeypatch, capsys):
    from explorer import launcher

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(launcher.sys, "platform", "linux")
    assert launcher.main([]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "no display" in error and "QT_QPA_PLATFORM=offscreen" in error


def test_export_all_from_the_menu_runs_off_the_window_thread_and_reports(explore, qtbot, tmp_path, monkeypatch):
    window, tab, _ = explore
    window.settings.setValue("export/dpi", 60)
    messages = []
    window.explore.message.connect(messages.append)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(tmp_path / "menu"))
    tab.exports.export_all_dialog()
    assert messages[-1].startswith("Exporting every kind")  # returned at once; the files come later
    qtbot.waitUntil(lambda: messages[-1].startswith("Exported"), timeout=60000)
    assert "index.csv" in messages[-1] and (tmp_path / "menu" / "index.csv").is_file()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(window.explore.bundle.path))
    tab.exports.export_all_dialog()  # a file, not a folder
    qtbot.waitUntil(lambda: messages[-1].startswith("Export failed"), timeout=60000)


def test_the_menu_writes_the_interactive_page_of_the_trace_shown(explore, tmp_path, monkeypatch):
    window, tab, model = explore
    tab._on_head_chosen(1, 2)  # layer 2, head 3
    target = tmp_path / "page.html"
    asked = []

    def save_name(*args, **kwargs):
        asked.append(args)
        return str(target), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_name)
    action = next(a for a in tab.exports.menu.actions() if a.text() == "Interactive page (HTML)…")
    action.trigger()
    assert asked and asked[0][2].endswith("page_cross_L2_H3.html") and asked[0][3] == "Interactive page (*.html)"
    assert window.statusBar().currentMessage() == f"Exported {target}"
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script>" in page and "http" not in page
    data = embedded(page)
    trace = window.explore.trace
    cross = next(kind for kind in data["kinds"] if kind["name"] == "cross")
    np.testing.assert_allclose(np.array(cross["weights"]), trace.cross, rtol=0, atol=1e-6)
    assert data["initial"] == {"kind": "cross", "layer": 1, "head": 2, "step": trace.n_steps}
    assert data["model"] == model.stem
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(tmp_path / "no" / "page.html"), ""))
    action.trigger()
    message = window.statusBar().currentMessage()
    assert message.startswith("Export failed:") and "does not exist" in message and "\n" not in message
