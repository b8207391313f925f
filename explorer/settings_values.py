"""The window's saved settings, read through one typed accessor: every value is checked as it is read (its type,
its range, the values allowed), and one that fails (a hand edit, another version's file, a crash half-way
through a write) is ignored: the default takes its place, the key is named once in the log and in the window's
status bar, and nothing is written back for it (the window saves only what it shows or what the user changes).

``open_settings`` opens the settings file itself without ever blocking or failing: a FIFO, a device or a folder
where the file should be is never opened (Qt would wait for ever on a FIFO), and a file Qt cannot read leaves
the defaults. Writes go through ``setValue`` as on a QSettings.
"""

from __future__ import annotations

import logging
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from PySide6.QtCore import QByteArray, QCoreApplication, QObject, QSettings, QStandardPaths, Signal

log = logging.getLogger(__name__)

T = TypeVar("T")
D = TypeVar("D")  # a default: None where the caller tells "nothing usable saved" from any value
_MISSING = object()  # no value stored under the key: the default, silently
_UNDECODABLE = object()  # a value Qt could not decode (a damaged @Variant): refused
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def default_settings_path() -> Path:
    """Where Qt keeps the app's settings (QSettings' native format on Linux and the other Unixes): the user's
    config folder, ``TransformerExplorer/Transformer Explorer.conf``."""
    folder = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericConfigLocation)
    return Path(folder) / QCoreApplication.organizationName() / f"{QCoreApplication.applicationName()}.conf"


def _not_a_file(path: Path) -> str:
    """Why ``path`` cannot be a settings file ("" when it can: a regular file, or none yet)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if stat.S_ISDIR(mode):
        return "is a folder"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    return ""


def open_settings(path: str | os.PathLike | None = None) -> SettingsValues:
    """The settings at ``path`` (an INI file), or the app's own (QSettings' native place and format) when None.
    A path that is not a regular file is never opened: the window then starts from the defaults and keeps its
    settings for this session only (in a temporary file), and ``problem`` says why."""
    native = path is None
    where = default_settings_path() if native else Path(path)  # type: ignore[arg-type]
    problem = _not_a_file(where)
    if problem:
        stand_in = Path(tempfile.mkdtemp(prefix="transformer-explorer-settings-")) / "settings.ini"
        settings = QSettings(str(stand_in), QSettings.Format.IniFormat)
        return SettingsValues(settings, f"{where} {problem}; defaults used, and nothing is saved this session")
    settings = QSettings() if native else QSettings(str(where), QSettings.Format.IniFormat)
    return SettingsValues(settings)


class SettingsValues(QObject):
    """A QSettings whose values are read only through typed, checked reads (``integer``, ``number``, ``boolean``,
    ``text``, ``choice``, ``texts``, ``state``, ``restore``). ``damaged_keys`` names the keys refused so far
    (``damaged`` signals each, once); ``problem`` says why the file itself could not be used ("" when it could)."""

    damaged = Signal(str)  # a key whose stored value was refused (the first time it is read)

    def __init__(self, settings: QSettings, problem: str = "") -> None:
        super().__init__()
        self.settings = settings
        self.damaged_keys: list[str] = []
        status = settings.status()
        if not problem and status != QSettings.Status.NoError:
            why = "cannot be read" if status == QSettings.Status.AccessError else "is not a settings file"
            problem = f"{settings.fileName()} {why}; defaults used"
        self.problem = problem
        if problem:
            log.warning("settings: %s", problem)

    @staticmethod
    def of(settings: QSettings | SettingsValues | None) -> SettingsValues:
        """``settings`` itself when it is one already, else a SettingsValues over it (the app's own when None)."""
        if isinstance(settings, SettingsValues):
            return settings
        return SettingsValues(settings) if settings is not None else open_settings()

    # --- writing, as on a QSettings ---------------------------------------------------------------
    def setValue(self, key: str, value: object) -> None:  # noqa: N802 - QSettings' name, so callers write alike
        self.settings.setValue(key, value)

    def sync(self) -> None:
        self.settings.sync()

    def fileName(self) -> str:  # noqa: N802 - QSettings' name
        return self.settings.fileName()

    # --- typed reads --------------------------------------------------------------------------------
    def integer(self, key: str, default: D, minimum: int = -(2**31), maximum: int = 2**31 - 1) -> int | D:
        """A whole number between ``minimum`` and ``maximum`` (the range of a Qt spin box by default)."""
        return self._read(key, default, lambda value: _in_range(_whole_number(value), minimum, maximum))

    def number(self, key: str, default: D, minimum: float = -math.inf, maximum: float = math.inf) -> float | D:
        """A finite number between ``minimum`` and ``maximum``."""
        return self._read(key, default, lambda value: _in_range(_finite_number(value), minimum, maximum))

    def boolean(self, key: str, default: D) -> bool | D:
        return self._read(key, default, _truth)

    def text(self, key: str, default: D) -> str | D:
        """A line of text (a list, a number Qt decoded or a NUL character are refused)."""
        return self._read(key, default, lambda value: value if isinstance(value, str) and "\0" not in value else None)

    def folder(self, key: str) -> Path:
        """A folder a file dialog starts in (the home folder by default)."""
        return Path(self.text(key, str(Path.home())))

    def choice(self, key: str, default: D, allowed: Iterable[str]) -> str | D:
        """One of ``allowed``."""
        allowed = tuple(allowed)
        return self._read(key, default, lambda value: value if isinstance(value, str) and value in allowed else None)

    def texts(self, key: str) -> list[str]:
        """A list of lines of text (one line alone reads as a list of one); none stored: []."""
        return self._read(key, list[str](), _lines)

    def state(self, key: str) -> QByteArray | None:
        """A saved widget state or geometry (a QByteArray); None when none is stored or the stored one is damaged."""
        return self._read(key, None, lambda value: value if isinstance(value, QByteArray) and not value.isEmpty() else None)

    def restore(self, key: str, restore: Callable[[QByteArray], bool]) -> None:
        """Give a saved state to ``restore`` (a splitter's or window's restoreState, restoreGeometry); one it
        refuses is damaged as well."""
        state = self.state(key)
        if state is not None and not restore(state):
            self._refuse(key, state)

    def summary(self) -> str:
        """The one line the window shows about refused settings ("" when there is nothing to say)."""
        parts = [f"Settings: {self.problem}"] if self.problem else []
        if self.damaged_keys:
            parts.append(f"Settings: ignored damaged values of {', '.join(self.damaged_keys)}; defaults used")
        return " · ".join(parts)

    # --- the checks ---------------------------------------------------------------------------------
    def _stored(self, key: str) -> object:
        try:
            value = self.settings.value(key)
        except Exception:  # noqa: BLE001 - a value PySide cannot convert is as damaged as one Qt cannot decode
            return _UNDECODABLE
        if value is None:
            return _UNDECODABLE if self.settings.contains(key) else _MISSING
        return value

    def _read(self, key: str, default: D, check: Callable[[object], T | None]) -> T | D:
        stored = self._stored(key)
        if stored is _MISSING:
            return default
        value = None if stored is _UNDECODABLE else check(stored)
        if value is None:
            self._refuse(key, stored)
            return default
        return value

    def _refuse(self, key: str, stored: object = _UNDECODABLE) -> None:
        if key in self.damaged_keys:
            return
        self.damaged_keys.append(key)
        shown = "a value that cannot be decoded" if stored is _UNDECODABLE else _shown(stored)
        log.warning("settings: ignored the damaged value of %s (%s); the default is used", key, shown)
        self.damaged.emit(key)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _whole_number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value) and len(value) < 40:
        return int(value)
    return None


def _finite_number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _in_range(number: T | None, minimum, maximum) -> T | None:
    return number if number is not None and minimum <= number <= maximum else None


def _truth(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else ""
    return True if text in _TRUE else False if text in _FALSE else None


def _lines(value: object) -> list[str] | None:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if items is None or not all(isinstance(item, str) and "\0" not in item for item in items):
        return None
    return list(items)
