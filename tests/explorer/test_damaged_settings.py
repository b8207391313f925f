"""A damaged settings file never stops the window: each value is checked as it is read (explorer/settings_values.py),
and one that fails (``window/tab`` = abc, inf or 1e400, an attention kind ``bogus``, a splitter state saved as a
string, the Train form's ``d_model`` = inf or 1e30, ...) is ignored: the window opens with the default, names the key
in one orange status-bar line and one log line, and never writes the damaged value back. A settings file of random
bytes, of 0 bytes, one that cannot be read, a folder or a FIFO in its place: the window opens with the defaults."""

from __future__ import annotations

import logging
import os
import random
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QByteArray, QSettings

from explorer.settings_values import SettingsValues, open_settings
from model.kinds import AttentionKind
from tests.conftest import ROOT
from tests.explorer.gui_helpers import close_window
from tests.explorer.test_startup_close import DRIVER as START_UP_DRIVER

EXPLORE_TAB, TRAIN_TAB = 0, 2


def write_ini(path: Path, values: dict[str, str]) -> None:
    """``values`` (key: the text after ``=``, as a hand edit leaves it) as an INI file in Qt's layout."""
    sections: dict[str, list[str]] = {}
    for key, text in values.items():
        section, _, name = key.rpartition("/")
        sections.setdefault(section or "General", []).append(f"{name}={text}")
    path.write_text("".join(f"[{section}]\n" + "\n".join(lines) + "\n\n" for section, lines in sections.items()), "utf-8")


def settings_line(window) -> str:
    return window.settings_label.text() if window.settings_label.isVisible() else ""


# key, damaged text, what the window shows instead (a check of the opened window)
DAMAGED = {
    "tab abc": ("window/tab", "abc", lambda w: w.tabs.currentIndex() == EXPLORE_TAB),
    "tab inf": ("window/tab", "inf", lambda w: w.tabs.currentIndex() == EXPLORE_TAB),
    "tab 1e400": ("window/tab", "1e400", lambda w: w.tabs.currentIndex() == EXPLORE_TAB),
    "tab 7": ("window/tab", "7", lambda w: w.tabs.currentIndex() == EXPLORE_TAB),
    "kind bogus": ("explore/kind", "bogus", lambda w: w.explore_tab.state.kind == AttentionKind.CROSS),
    "splitter as a string": ("explore/splitter", "a splitter state", lambda w: w.explore_tab.main_splitter.count() == 2),
    "splitter bytes": ("explore/top_splitter", "@ByteArray(garbage)", lambda w: w.explore_tab.top_splitter.count() == 2),
    "geometry as a number": ("window/geometry", "12", lambda w: w.isVisible()),
    "colour map": ("explore/colormap", "rainbow", lambda w: w.explore_tab.colormap.currentText() == "viridis"),
    "words": ("explore/word_level", "maybe", lambda w: not w.explore_tab.word_level.isChecked()),
    "recent undecodable": ("recent_models", "@Variant(garbage)", lambda w: w.recent_models() == []),
}


@pytest.mark.parametrize("case", DAMAGED)
def test_a_damaged_value_is_ignored_named_and_replaced_by_its_default(open_window, tmp_path, caplog, case):
    key, text, shows_the_default = DAMAGED[case]
    write_ini(tmp_path / "settings.ini", {key: text, "explore/text": "the cat"})
    with caplog.at_level(logging.WARNING, logger="explorer.settings_values"):
        window = open_window()
    assert window.built and shows_the_default(window)
    assert settings_line(window) == f"Settings: ignored damaged values of {key}; defaults used"
    assert window.explore_tab.controls.source.text() == "the cat"  # the sound values around it are kept
    logged = [record.getMessage() for record in caplog.records if key in record.getMessage()]
    assert len(logged) == 1 and logged[0].startswith(f"settings: ignored the damaged value of {key} (")
    assert logged[0].endswith("); the default is used")


@pytest.mark.parametrize("d_model", ["inf", "1e30", "-5", "thirty-two"])
def test_a_damaged_train_form_value_leaves_the_preset_and_is_not_saved_again(open_window, tmp_path, d_model):
    path = tmp_path / "settings.ini"
    write_ini(path, {"window/tab": "2", "train/changed": "d_model,heads", "train/d_model": d_model, "train/heads": "2"})
    window = open_window()
    form = window.training_tab.form
    assert window.tabs.currentIndex() == TRAIN_TAB and settings_line(window).endswith("of train/d_model; defaults used")
    assert form.changed == {"heads"} and form.heads.value() == 2  # the sound one is restored
    assert form.d_model.value() == form.preset.model["d_model"]  # the preset's value
    close_window(window)
    saved = QSettings(str(path), QSettings.Format.IniFormat)
    assert saved.value("train/changed") == "heads"  # d_model no longer counts as changed: never read again


def test_damaged_values_are_not_written_back(open_window, tmp_path):
    """Every damaged value at once: all named; after closing, the next start finds none of them, except the colour
    map, which the window saves only when the user chooses one (till then the file keeps what it had)."""
    path = tmp_path / "settings.ini"
    write_ini(path, {key: text for key, text, _check in DAMAGED.values()})
    window = open_window()
    named = settings_line(window)
    assert all(key in named for key, _text, _check in DAMAGED.values()), named
    close_window(window)
    again = open_window()
    assert settings_line(again) == "Settings: ignored damaged values of explore/colormap, recent_models; defaults used"
    saved = QSettings(str(path), QSettings.Format.IniFormat)
    assert saved.value("explore/colormap") == "rainbow" and saved.value("explore/kind") == "cross"
    assert saved.value("window/tab") in (0, "0") and isinstance(saved.value("explore/splitter"), QByteArray)


def test_figure_settings_are_checked_when_an_export_reads_them(tmp_path):
    from explorer.widgets.figure_settings import figure_options

    path = tmp_path / "settings.ini"
    write_ini(path, {"export/width": "nan", "export/font_size": "1e400", "export/dpi": "3.5", "export/caption": "no"})
    settings = SettingsValues(QSettings(str(path), QSettings.Format.IniFormat))
    options, dpi = figure_options(settings, "viridis", "model")
    assert (options.width, options.font_size, dpi, options.caption) == (6.9, 8.0, 300.0, False)
    assert settings.damaged_keys == ["export/width", "export/font_size", "export/dpi"]


def fifo_watch(path: Path, stop: threading.Event, opened: list[bool]) -> None:
    """If anything opens the FIFO to read it, open its other end (so the reader gets an end of file instead of
    waiting for ever) and say so."""
    while not stop.wait(0.05):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            continue  # no reader: as it should be
        opened.append(True)


def test_a_settings_file_that_is_no_settings_file_leaves_the_defaults(open_window, tmp_path):
    path = tmp_path / "settings.ini"
    # Qt's INI reader refuses some byte soups (status FormatError: the status bar then says so) and reads others as
    # no keys; either way the defaults are used. Seeded bytes: the same file at every run.
    said = f"Settings: {path} is not a settings file; defaults used"
    for content in (random.Random(4).randbytes(4000), b"", b"\xff\xfe[window]\x00tab=\x00\n"):
        path.write_bytes(content)
        window = open_window(settings=open_settings(path))
        assert window.built and window.tabs.currentIndex() == EXPLORE_TAB and settings_line(window) in ("", said)
        close_window(window)
    path.unlink()
    path.mkdir()
    window = open_window(settings=open_settings(path))
    assert settings_line(window) == f"Settings: {path} is a folder; defaults used, and nothing is saved this session"
    close_window(window)
    assert path.is_dir() and not any(path.iterdir())


def test_a_fifo_in_place_of_the_settings_file_is_never_opened(open_window, tmp_path):
    path = tmp_path / "settings.ini"
    os.mkfifo(path)
    stop, opened = threading.Event(), []
    watch = threading.Thread(target=fifo_watch, args=(path, stop, opened), daemon=True)
    watch.start()
    try:
        window = open_window(settings=open_settings(path))
        assert settings_line(window).startswith(f"Settings: {path} is not a regular file; defaults used")
        close_window(window)
    finally:
        stop.set()
        watch.join()
    assert not opened and stat.S_ISFIFO(path.stat().st_mode)


def test_a_settings_file_that_cannot_be_read_leaves_the_defaults(open_window):
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o755)
        path = folder / "settings.ini"
        write_ini(path, {"window/tab": "2"})
        path.chmod(0)
        as_root = os.geteuid() == 0  # root reads any file: open it as nobody
        if as_root:
            os.seteuid(65534)
        try:
            settings = open_settings(path)
        finally:
            if as_root:
                os.seteuid(0)
        window = open_window(settings=settings)
        assert window.tabs.currentIndex() == EXPLORE_TAB
        assert settings_line(window) == f"Settings: {path} cannot be read; defaults used"
    finally:
        path.chmod(0o644)
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()


def test_the_app_starts_with_a_fifo_where_its_settings_file_should_be(tmp_path):
    """The real start (the launcher, the app's own settings in the user's config folder): Qt would wait for ever on
    the FIFO; the window opens, says why the settings were not read, and the process ends cleanly."""
    conf = tmp_path / "config" / "TransformerExplorer" / "Transformer Explorer.conf"
    conf.parent.mkdir(parents=True)
    os.mkfifo(conf)
    environment = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(conf.parent.parent)}
    command = [sys.executable, "-c", START_UP_DRIVER, "frame"]  # closed once its frame shows (test_startup_close.py)
    result = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert f"settings: Settings: {conf} is not a regular file; defaults used" in result.stdout, (result.stdout, result.stderr)
    assert stat.S_ISFIFO(conf.stat().st_mode)
