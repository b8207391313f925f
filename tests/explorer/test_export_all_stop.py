"""Stopping the window's Export all (its job on the window's one runner): "Stop exporting all" after the first figure
stops it there, the first figure's files are kept whole, no index or temporary file is written, the status bar says
so, and the window goes on working (a second Export all runs to its end)."""

from __future__ import annotations

import threading

from PySide6.QtWidgets import QFileDialog

from model.figures import export
from tests.file_limits import partial_files


def test_export_all_stopped_after_the_first_figure_keeps_its_files_and_the_window_works(
    translated_copy, qtbot, tmp_path, monkeypatch
):
    window, tab, messages = translated_copy
    first_figure, stopped = threading.Event(), threading.Event()
    select = export.select

    def select_then_wait(*args, **kwargs):  # the first figure waits (in the job's thread) until Stop is chosen
        if not first_figure.is_set():
            first_figure.set()
            assert stopped.wait(30)
        return select(*args, **kwargs)

    monkeypatch.setattr(export, "select", select_then_wait)
    folder = tmp_path / "stopped"
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(folder))
    assert not tab.exports.stop_all_action.isEnabled()
    tab.exports.all_action.trigger()
    assert first_figure.wait(30) and tab.exports.stop_all_action.isEnabled()
    tab.exports.stop_all_action.trigger()
    stopped.set()
    qtbot.waitUntil(lambda: messages[-1].startswith("Export all stopped"), timeout=30000)
    kind = window.explore.trace.kinds[0]
    kept = sorted(path.name for path in folder.iterdir() if not path.name.endswith(".record.json"))  # records beside
    assert kept == [f"{kind}_L1_H1.csv", f"{kind}_L1_H1.npy", f"{kind}_L1_H1.png"]  # the first figure, no index
    assert "3 files" in messages[-1] and str(folder) in messages[-1]
    assert not partial_files(folder) and (folder / kept[2]).read_bytes().startswith(b"\x89PNG")
    assert not tab.exports.stop_all_action.isEnabled()
    assert not any(message.startswith(("Exported", "Export failed")) for message in messages)

    monkeypatch.setattr(export, "select", select)
    folder = tmp_path / "whole"
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(folder))
    tab.exports.all_action.trigger()  # the window goes on: the next Export all runs to its end
    qtbot.waitUntil(lambda: messages[-1].startswith("Exported"), timeout=60000)
    assert (folder / "index.csv").is_file() and not partial_files(folder)
