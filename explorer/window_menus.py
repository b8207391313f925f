"""The main window's menu bar: File (open a model, a shipped one, a pretrained one, the recent ones, save, info,
quit), View (the tabs) and Help (shortcuts, about). The window hands it what each entry does (``MenuActions``);
the recent models are kept in the window's settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QMessageBox, QTabWidget

from explorer.settings_values import SettingsValues
from model.io.shipped import shipped_models

MAX_RECENT = 8
SHORTCUTS = "\n".join(
    [
        "Ctrl+O  open a model      Ctrl+Shift+S  save it as…      Ctrl+Q  quit",
        "Ctrl+1/2/3/4  Explore / Positional encoding / Train / Corpus",
        "Explore: Enter translate, Alt+Right / Alt+Left step, Alt+End run to end, Alt+Home reset,",
        "  Ctrl+E export the focus view, Ctrl+Shift+C copy it to the clipboard",
        "Train: Ctrl+Return start, Ctrl+P pause/resume, Escape cancel",
    ]
)
OPEN_TIP = "Open a model file (.safetensors); you can also drop one onto the window"
PRETRAINED_TIP = "A Hugging Face model on this computer (its cache, or a save_pretrained folder): T5, Marian, BART, BERT, GPT-2"
SAVE_TIP = "Save the active model, its tokenizers and training history to one file"
ABOUT = (
    "See inside the Transformer of “Attention Is All You Need”: train a small "
    "encoder-decoder, step through decoding and inspect every layer's and head's attention."
)


@dataclass
class MenuActions:
    """What the window does for each entry."""

    open_requested: Callable[[], object]  # the file dialog
    open_model: Callable[[str], object]  # a path, a shipped model's or a recent one
    open_pretrained_requested: Callable[[], object]
    save_requested: Callable[[], object]
    info_requested: Callable[[], object]
    quit: Callable[[], object]


def add_action(
    owner: QMainWindow, menu: QMenu, text: str, slot: Callable[..., object], shortcut: object = None, tip: str = ""
) -> QAction:
    action = QAction(text, owner)
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))  # type: ignore[call-overload]
    action.setStatusTip(tip)
    action.setToolTip(tip)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


class WindowMenus:
    def __init__(self, window: QMainWindow, settings: SettingsValues, tabs: QTabWidget, actions: MenuActions) -> None:
        self.window, self.settings, self.actions = window, settings, actions
        self._file_menu(window.menuBar().addMenu("&File"))
        view_menu = window.menuBar().addMenu("&View")
        for index, key in enumerate(("Ctrl+1", "Ctrl+2", "Ctrl+3", "Ctrl+4")):
            choose = lambda checked=False, i=index: tabs.setCurrentIndex(i)  # noqa: E731
            self._add(view_menu, tabs.tabText(index).replace("&", ""), choose, key)
        help_menu = window.menuBar().addMenu("&Help")
        shortcuts = lambda: QMessageBox.information(window, "Keyboard shortcuts", SHORTCUTS)  # noqa: E731
        self._add(help_menu, "&Keyboard shortcuts", shortcuts, "F1")
        self._add(help_menu, "&About", lambda: QMessageBox.about(window, "Transformer Explorer", ABOUT))
        self.update_recent_menu()

    def _file_menu(self, menu: QMenu) -> None:
        actions, add = self.actions, self._add
        add(menu, "&Open model…", actions.open_requested, QKeySequence.StandardKey.Open, OPEN_TIP)
        shipped = menu.addMenu("Open &shipped model")
        for name in shipped_models():
            open_shipped = lambda checked=False, n=name: actions.open_model(str(shipped_models()[n]))  # noqa: E731
            add(shipped, name, open_shipped, tip=f"The {name} model that comes with the app")
        shipped.setEnabled(bool(shipped_models()))
        add(menu, "Open &pretrained model…", actions.open_pretrained_requested, "Ctrl+Shift+O", PRETRAINED_TIP)
        self.recent_menu = menu.addMenu("&Recent models")
        self.save_action = add(menu, "&Save model as…", actions.save_requested, QKeySequence.StandardKey.SaveAs, SAVE_TIP)
        add(menu, "Model &info…", actions.info_requested, "Ctrl+I", "Family, sizes, parameters, attention, tokenizer")
        menu.addSeparator()
        add(menu, "&Quit", actions.quit, "Ctrl+Q", "Quit Transformer Explorer")

    def _add(self, menu: QMenu, text: str, slot: Callable[..., object], shortcut: object = None, tip: str = "") -> QAction:
        return add_action(self.window, menu, text, slot, shortcut, tip)

    # --- recent models ----------------------------------------------------------------------------
    def recent_models(self) -> list[str]:
        return self.settings.texts("recent_models")

    def remember(self, path: str) -> None:
        recent = [path] + [p for p in self.recent_models() if p != path]
        self.settings.setValue("recent_models", recent[:MAX_RECENT])
        self.update_recent_menu()

    def update_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self.recent_models():
            self._add(self.recent_menu, path, lambda checked=False, p=path: self.actions.open_model(p), tip=path)
        self.recent_menu.setEnabled(bool(self.recent_models()))
