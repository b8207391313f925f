"""The main window: tabs (Explore, Positional encoding, Train), the menus (explorer/window_menus.py),
drag-and-drop of checkpoints, the status bar naming the model and device, and settings that persist.

It builds the window's controllers (explorer/controllers/window.py) over one runner whose reports arrive on the
window's thread (explorer/qt_runner.py), hands each tab the controllers it shows, and closes them (every job
cancelled and joined) when it closes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow, QMessageBox, QTabWidget, QWidget

from explorer.pretrained_dialog import PretrainedDialog
from explorer.qt_runner import gui_runner
from explorer.runtime import COLLECT_EVERY_MS, COLLECTOR, freeze_long_lived, thaw
from explorer.settings_values import SettingsValues
from explorer.widgets.model_info import ModelInfoDialog
from explorer.widgets.scroll_area import scrolled
from explorer.window_menus import MenuActions, WindowMenus
from model.errors import UserError

if TYPE_CHECKING:
    from explorer.controllers.explore import ExploreController
    from explorer.controllers.window import WindowControllers

EXPLORE_TAB, POSITIONAL_TAB, TRAIN_TAB, CORPUS_TAB = 0, 1, 2, 3  # positions in the tab bar
OPEN_CHANNEL = "open-model"  # the runner's channel of model loads
CLOSE_TIMEOUT_S = 60  # how long closing waits for the jobs to end (each stops within a step, a pair or a batch)

MODEL_FILTER = "Transformer Explorer models (*.safetensors);;All files (*)"


class MainWindow(QMainWindow):
    """``build=False`` shows the frame at once and leaves the tabs (which load PyTorch) to ``build()``,
    so the window appears in well under a second; tests build at once."""

    def __init__(
        self, settings: QSettings | SettingsValues | None = None, explore: ExploreController | None = None, build: bool = True
    ):
        super().__init__()
        self.settings = SettingsValues.of(settings)  # every value read is checked; a damaged one is named in the status bar
        self._explore = explore
        self.error_box: QMessageBox | None = None
        self.built = False
        self._collect_timer: QTimer | None = None  # built: runs the collection due on this thread (explorer/runtime.py)
        self._built_tabs: dict[int, QWidget] = {}
        self.setWindowTitle("Transformer Explorer")
        self.setAcceptDrops(True)
        self.resize(1400, 900)
        self.settings_label = QLabel()  # which saved settings were damaged and ignored (hidden when none)
        self.settings_label.setStyleSheet("color: #d35400;")  # orange: worth a look, nothing is wrong with the window
        self.statusBar().addPermanentWidget(self.settings_label)
        self.settings.damaged.connect(self._show_settings_problems)
        self._show_settings_problems()
        self.settings.restore("window/geometry", self.restoreGeometry)
        self.model_label = QLabel("Loading PyTorch and the model…")
        self.model_label.setMinimumWidth(1)  # a long description is cut short, never laid over the settings line
        self.statusBar().addPermanentWidget(self.model_label, 1)
        # A message (an export written, a note on the sentence) takes the model's line while it shows: beside it, the
        # model's long description left the message no room at all.
        self.statusBar().messageChanged.connect(lambda text: self.model_label.setVisible(not text))
        loading = QLabel("Loading…")
        loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setCentralWidget(loading)
        self.closed_early = False  # closed before build(): build() then does nothing
        # Ctrl+Q works from the first frame on; the File menu's Quit takes over once built.
        self._early_quit = QShortcut(QKeySequence("Ctrl+Q"), self, self.close, context=Qt.ShortcutContext.ApplicationShortcut)
        if build:
            self.build()

    def build(self) -> None:
        """The tabs, menus and session (imports the core and PyTorch)."""
        if self.closed_early or self.built:
            return
        self._early_quit.setEnabled(False)
        self._early_quit.deleteLater()
        from explorer.controllers.window import WindowControllers  # deferred: PyTorch loads after the frame shows
        from explorer.tabs.explore.tab import ExploreTab  # deferred: as above
        from model.device import describe_device, resolve_device  # deferred: as above

        self.runner = gui_runner()
        self.controllers: WindowControllers = WindowControllers.build(self.runner, self._explore)
        self.explore = self.controllers.explore
        self.tabs = QTabWidget()
        self.explore_tab = ExploreTab(self.controllers, self.settings)
        # The other two tabs are built the first time they are shown (or asked for): the window
        # opens sooner, with the default model decoded.
        self._lazy_tabs = {
            POSITIONAL_TAB: self._make_positional_tab,
            TRAIN_TAB: self._make_training_tab,
            CORPUS_TAB: self._make_corpus_tab,
        }
        self._built_tabs[EXPLORE_TAB] = self.explore_tab
        self.tabs.addTab(self.explore_tab, "&Explore")
        self.tabs.addTab(QWidget(), "&Positional encoding")
        self.tabs.addTab(QWidget(), "&Train")
        self.tabs.addTab(QWidget(), "&Corpus")
        for index, tip in enumerate(
            (
                "Type a sentence, step through decoding and inspect every attention head",
                "The model's positional encodings and their relative-position property",
                "Train a new model on a built-in corpus or your own file",
                "Index a corpus with the model: similar tokens, sentences where a head behaves so, query-key maps",
            )
        ):
            self.tabs.setTabToolTip(index, tip)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        # In a scroll area: a window smaller than what a tab needs (1024×640 with the beam's panels, a long sentence's
        # token rows) keeps the size asked and shows scroll bars, where it grew past the screen's edge, cutting off what
        # lay beyond it with nothing saying so. At ordinary sizes no scroll bar shows.
        self.setCentralWidget(scrolled(self.tabs))

        self.device_label = QLabel(f"Device: {describe_device(resolve_device('auto'))}")
        self.statusBar().addPermanentWidget(self.device_label)
        self.explore.model_changed.connect(self._on_model_changed)
        self.explore.trace_changed.connect(self._on_trace_changed)
        self._explore_note = ""  # the Explore controller's last note in the status bar
        self.explore.message.connect(self._on_message)
        self.controllers.corpus.show_requested.connect(lambda: self.tabs.setCurrentIndex(CORPUS_TAB))
        self.controllers.corpus.explore_requested.connect(lambda: self.tabs.setCurrentIndex(EXPLORE_TAB))
        self.controllers.lengths.opened.connect(lambda _scheme, _length: self.tabs.setCurrentIndex(EXPLORE_TAB))
        self._build_menus()
        self._restore_settings()
        self._on_model_changed(self.explore.bundle)
        self.built = True
        freeze_long_lived()  # PyTorch's and Qt's modules live as long as the app (explorer/runtime.py)
        self._collect_timer = QTimer(self)  # cyclic garbage is collected on this thread only (explorer/runtime.py)
        self._collect_timer.timeout.connect(COLLECTOR.check)
        self._collect_timer.start(COLLECT_EVERY_MS)
        COLLECTOR.start()

    # --- tabs -----------------------------------------------------------------------------------
    def _make_positional_tab(self) -> QWidget:
        from explorer.tabs.lengths_page import lengths_page  # deferred: built when first shown
        from explorer.tabs.positional_tab import PositionalTab

        return PositionalTab(self.explore, self.settings, lengths_page(self.controllers.lengths))

    def _make_training_tab(self) -> QWidget:
        from explorer.tabs.training_tab import TrainingTab  # deferred: built when first shown

        tab = TrainingTab(self.explore, self.controllers.training, self.settings)
        tab.trained.connect(self._on_trained)
        tab.confirm_start = lambda: self.confirm_replacing_model("The model this training makes will replace it.")
        tab.failed.connect(lambda text: self.show_error("Training failed", text))
        return tab

    def _make_corpus_tab(self) -> QWidget:
        from explorer.tabs.corpus_tab import CorpusTab  # deferred: built when first shown

        return CorpusTab(self.controllers, self.settings)

    def _tab(self, index: int) -> QWidget:
        """The tab at index, built (in place of its placeholder) on first use."""
        if index not in self._built_tabs:
            widget = self._built_tabs[index] = self._lazy_tabs[index]()
            current, label, tip = self.tabs.currentIndex(), self.tabs.tabText(index), self.tabs.tabToolTip(index)
            placeholder = self.tabs.widget(index)
            self.tabs.blockSignals(True)
            self.tabs.removeTab(index)
            self.tabs.insertTab(index, widget, label)
            self.tabs.setTabToolTip(index, tip)
            self.tabs.setCurrentIndex(current)
            self.tabs.blockSignals(False)
            if placeholder is not None:
                placeholder.deleteLater()
        return self._built_tabs[index]

    def _on_tab_changed(self, index: int) -> None:
        self._tab(index)

    @property
    def positional_tab(self):
        return self._tab(POSITIONAL_TAB)

    @property
    def training_tab(self):
        return self._tab(TRAIN_TAB)

    @property
    def corpus_tab(self):
        return self._tab(CORPUS_TAB)

    def is_training(self) -> bool:
        return self.built and self.controllers.training.running

    # --- menus ----------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        actions = MenuActions(
            self._on_open_requested,
            self.open_model,
            self._on_open_pretrained_requested,
            self._on_save_requested,
            self._on_info_requested,
            self.close,
        )
        self.menus = WindowMenus(self, self.settings, self.tabs, actions)
        self.recent_menu, self.save_action = self.menus.recent_menu, self.menus.save_action

    def recent_models(self) -> list[str]:
        return self.menus.recent_models()

    # --- opening and saving models -----------------------------------------------------------
    def _on_open_requested(self) -> None:
        start = str(self.settings.folder("last_model_folder"))
        path, _ = QFileDialog.getOpenFileName(self, "Open model", start, MODEL_FILTER)
        if path:
            self.open_model(path)

    def _on_open_pretrained_requested(self) -> None:

        self.pretrained_dialog = dialog = PretrainedDialog(self, str(self.settings.folder("last_model_folder")))
        dialog.accepted.connect(lambda: self.open_model(dialog.chosen))
        dialog.open()

    def _on_info_requested(self) -> None:

        if self.explore.opened is None:
            self.show_error("No model", "Open or train a model first.")
            return
        self.info_dialog = ModelInfoDialog(self.explore.opened.info(), self)
        self.info_dialog.open()

    def open_model(self, path: str) -> None:
        """Load a model file, a shipped model, or a pretrained model's folder or cached id in the thread pool;
        on failure say why and keep the current model."""
        from explorer.controllers.background import with_job_template  # deferred: PyTorch loads after the frame shows
        from model.io.models import open_model

        if not self.confirm_replacing_model():
            return
        self.statusBar().showMessage(f"Opening {path}…")

        def done(bundle):
            self.explore.set_model(bundle)
            if Path(path).exists():
                self.menus.remember(str(Path(path).resolve()))
                self.settings.setValue("last_model_folder", str(Path(path).resolve().parent))
            self.statusBar().showMessage(f"Opened {path}", 5000)

        def failed(text):
            self.statusBar().clearMessage()
            self.show_error("Could not open the model", f"{path}\n\n{text}\n\nThe model you had is still open.")

        # A daemon thread: a read that never ends (a FIFO) never keeps the process alive after the window closes.
        opening = lambda job: with_job_template(open_model(path))  # noqa: E731 - its model's jobs' template kept there
        self.runner.submit(OPEN_CHANNEL, opening, on_done=done, on_error=failed, joinable=False)

    def is_opening(self) -> bool:
        """Whether a model is being loaded."""
        return self.built and self.runner.is_running(OPEN_CHANNEL)

    def confirm_replacing_model(self, what_happens: str = "Opening another model replaces it.") -> bool:
        """Before another model replaces the active one (or the window closes): a model trained in this
        session and never saved would be lost, so ask (Save… / Discard / Cancel). True when it may go on."""
        if not self.explore.has_unsaved_training():
            return True
        answer = self.ask_to_keep_trained_model(what_happens)
        if answer == QMessageBox.StandardButton.Save:
            return self._on_save_requested()
        return answer == QMessageBox.StandardButton.Discard

    def ask_to_keep_trained_model(self, what_happens: str = "Opening another model replaces it."):
        """Asked before an unsaved trained model is lost (tests replace it): Save, Discard or Cancel."""
        return QMessageBox.question(
            self,
            "Save the trained model?",
            f"The model trained in this session has not been saved. {what_happens}\n\n"
            "Save it first, discard it, or cancel and keep it open?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )

    def _on_save_requested(self) -> bool:
        """The save dialog (of the model opened or trained, whichever snapshot of its training is explored); True when
        the model was saved."""
        if self.explore.opened is None:
            self.show_error("Nothing to save", "Open or train a model first.")
            return False
        if not self.explore.opened.family.capabilities.trainable:
            self.show_error(
                "A pretrained model stays in its folder",
                f"{self.explore.opened.path}\n\nModel files hold this app's own Transformer; the pretrained model "
                "is already on disk, and exports save what you see of it.",
            )
            return False
        start = self.explore.opened.path or str(self.settings.folder("last_model_folder") / "model.safetensors")
        path, _ = QFileDialog.getSaveFileName(self, "Save model as", start, MODEL_FILTER)
        return bool(path) and self.save_model(path)

    def save_model(self, path: str) -> bool:
        from model.io import checkpoint  # deferred: PyTorch loads after the frame shows
        from model.io.bundle import require_own  # deferred: as above

        bundle = self.explore.opened
        if bundle is None:
            return False
        try:
            saved = checkpoint.save(require_own(bundle, "only the app's own models are saved as model files"), path)
        except UserError as error:
            self.show_error("Could not save the model", f"{path}\n\n{error}")
            return False
        bundle.path = str(saved)
        self.menus.remember(str(Path(saved).resolve()))
        self.statusBar().showMessage(f"Saved {saved}", 5000)
        self._on_model_changed(self.explore.opened)
        return True

    def _on_trained(self, bundle) -> None:
        self.explore.set_model(bundle, trained=True)
        self.statusBar().showMessage("Training done: the new model is active. File ▸ Save model as… keeps it.", 10000)

    # --- feedback -------------------------------------------------------------------------------
    def show_error(self, title: str, text: str) -> None:
        """A window-modal message that does not block the event loop (tests read ``error_box``)."""
        self.error_box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        self.error_box.open()

    def _on_message(self, text: str) -> None:
        """The Explore controller's note on the sentence decoded; "" (a sentence with none) clears its last note, not
        another message the status bar shows ("Opened …")."""
        if text:
            self.statusBar().showMessage(text, 8000)
        elif self.statusBar().currentMessage() == self._explore_note:
            self.statusBar().clearMessage()
        self._explore_note = text

    def _on_model_changed(self, bundle) -> None:
        if bundle is None:
            self.model_label.setText("No model: File ▸ Open model… (Ctrl+O), or train one in the Train tab")
            self.save_action.setEnabled(False)
            return
        self.save_action.setEnabled(bundle.family.capabilities.trainable)
        self._show_model_line(bundle)
        self.setWindowTitle(f"Transformer Explorer{self._model_place(bundle)}")

    @staticmethod
    def _model_place(bundle) -> str:
        return f" — {Path(bundle.path).name}" if bundle.path else " — unsaved"

    def _show_model_line(self, bundle) -> None:
        """The model's line: its description (an offloaded model's says so, and what a decoding step costs)."""
        self.model_label.setText(f"Model: {bundle.describe()}{self._model_place(bundle)}")

    def _on_trace_changed(self, _trace) -> None:
        """A step decoded: the line is said again (an offloaded model's step cost follows its steps)."""
        if self.explore.bundle is not None:
            self._show_model_line(self.explore.bundle)

    # --- drag and drop --------------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        files = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if files:
            event.acceptProposedAction()
            self.open_model(files[0])

    # --- settings and closing -------------------------------------------------------------------
    def _restore_settings(self) -> None:
        self.settings.restore("window/state", self.restoreState)
        self.tabs.setCurrentIndex(self.settings.integer("window/tab", EXPLORE_TAB, 0, self.tabs.count() - 1))

    def _show_settings_problems(self, _key: str = "") -> None:
        """The orange line naming the saved settings that were ignored (the file, or damaged values)."""
        summary = self.settings.summary()
        self.settings_label.setText(summary)
        self.settings_label.setToolTip(f"{summary}\n\nThe saved settings: {self.settings.fileName()}")
        self.settings_label.setMinimumWidth(self.settings_label.sizeHint().width())  # the model's line gives way
        self.settings_label.setVisible(bool(summary))

    def closeEvent(self, event) -> None:
        if not self.built:  # still loading: nothing to save or ask about
            self.closed_early = True
            event.accept()
            return
        if self.is_training():
            answer = self.ask_to_stop_training()
            if answer != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
        elif not self.confirm_replacing_model("Quitting closes it."):
            event.ignore()
            return
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.setValue("window/tab", self.tabs.currentIndex())
        self.explore_tab.save_settings()
        if TRAIN_TAB in self._built_tabs:
            self.training_tab.save_settings()
        self.settings.sync()
        self.close_controllers()
        event.accept()

    def close_controllers(self) -> bool:
        """Stop training (nothing kept) and every other job, and join them; True when all have ended. Nothing a job
        reports afterwards reaches the window. The window's objects may be collected again (explorer/runtime.py)."""
        ended = self.controllers.close(CLOSE_TIMEOUT_S)
        thaw()
        if self._collect_timer is not None and self._collect_timer.isActive():  # once: a built window's first close
            self._collect_timer.stop()
            COLLECTOR.stop()
        return ended

    def ask_to_stop_training(self):
        """Asked on close while training runs (tests replace it)."""
        return QMessageBox.question(
            self,
            "Training is running",
            "Training is still running. Stop it and quit? What it learned will be lost "
            "unless you stop with “Stop & keep” and save first.",
        )

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.built:
            QTimer.singleShot(0, self.explore_tab.setFocus)
