"""The window's exports on a disk that fills while they write (the kernel's file size limit: every write past it
fails, in the middle of matplotlib's, Pillow's, numpy's or csv's writing): each export says so in one status-bar
message naming the file, an earlier file of that name stays byte-identical and no temporary file is left; Export
all (written in the background, its PNGs by two writer threads) reports one message once every writer has ended."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QFileDialog

from tests.file_limits import file_size_limit, partial_files

EARLIER = b"the earlier file, which must survive"
LIMIT = 100  # bytes: less than any file exported here (an NPY header alone is 128), more than nothing


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf", ".csv", ".npy"])
def test_an_export_onto_a_full_disk_is_one_message_and_keeps_the_earlier_file(translated_copy, tmp_path, monkeypatch, suffix):
    _window, tab, messages = translated_copy
    out = tmp_path / "exports" / f"focus{suffix}"
    out.parent.mkdir()
    out.write_bytes(EARLIER)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(out), ""))
    with file_size_limit(LIMIT):
        tab.exports.export_dialog("focus")
    assert len(messages) == 1 and messages[0].startswith(f"Export failed: {out}: cannot be written ("), messages
    assert out.read_bytes() == EARLIER and not partial_files(out.parent)


def test_the_positional_export_onto_a_full_disk_is_one_message(translated_copy, tmp_path, monkeypatch):
    window, _tab, messages = translated_copy
    out = tmp_path / "positional.pdf"
    out.write_bytes(EARLIER)
    positional = window._tab(1)  # the Positional encoding tab, built when first asked for
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(out), ""))
    with file_size_limit(LIMIT):
        positional._on_export_requested()
    assert len(messages) == 1 and messages[0].startswith(f"Export failed: {out}: cannot be written ("), messages
    assert out.read_bytes() == EARLIER and not partial_files(tmp_path)


def test_export_all_onto_a_full_disk_is_one_message_once_its_writers_have_ended(translated_copy, qtbot, tmp_path, monkeypatch):
    _window, tab, messages = translated_copy
    folder = tmp_path / "all"
    folder.mkdir()
    (folder / "index.csv").write_bytes(EARLIER)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(folder))
    with file_size_limit(LIMIT):
        tab.exports.export_all_dialog()
        qtbot.waitUntil(lambda: any(m.startswith("Export failed") for m in messages), timeout=20000)
    qtbot.wait(50)  # nothing more arrives
    failures = [m for m in messages if m.startswith("Export failed")]
    assert len(failures) == 1 and f"{folder}/" in failures[0] and ": cannot be written (" in failures[0], messages
    assert not any(m.startswith("Exported") for m in messages)
    assert (folder / "index.csv").read_bytes() == EARLIER and not partial_files(folder)
