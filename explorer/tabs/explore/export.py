"""The Explore tab's exports: its Export menu (a view as a figure or data, Export all, the interactive HTML page),
Ctrl+E (export the focus view) and Ctrl+Shift+C (copy it), each bound once. Figures and pages are made by the core
(``model.figures.export``), from the trace the window shows and an ExportRequest built from the window's choices,
so the ``export`` command with the same settings writes the same file. Errors are shown in the status bar; nothing
is half-written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QGuiApplication, QImage, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu

from model.files import OutputError
from model.inspection.selection import SelectionError

EXPORT_FILTER = "PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf);;CSV table (*.csv);;NumPy array (*.npy)"
PAGE_FILTER = "Interactive page (*.html)"
EXPORT_CHANNEL = "export-all"  # the runner's channel of Export all
VIEW_NAMES = {"focus": "focus view", "grid": "model grid", "lines": "lines view", "candidates": "candidates"}


def export_errors() -> tuple[type[Exception], ...]:
    """The errors an export reports to the user (a bad path, choice or figure setting)."""
    from model.figures.layout import FigureError  # deferred: matplotlib loads with the first export

    return OutputError, SelectionError, FigureError


class ExploreExports(QObject):
    """Export actions of an ExploreTab (``tab``): it reads the tab's choices and the Explore controller's trace."""

    def __init__(self, tab):
        super().__init__(tab)
        self.tab = tab
        self.menu = QMenu(tab)
        self.focus_action = self._action("Focus view…", lambda: self.export_dialog("focus"), "Ctrl+E")
        for name in ("grid", "lines", "candidates"):
            self._action(
                f"{VIEW_NAMES[name][0].upper()}{VIEW_NAMES[name][1:]}…", lambda checked=False, n=name: self.export_dialog(n)
            )
        self.all_action = self._action("Export all kinds × layers × heads…", self.export_all_dialog)
        self.stop_all_action = self._action("Stop exporting all", self.stop_export_all)
        self.stop_all_action.setEnabled(False)  # while Export all runs
        self.page_action = self._action("Interactive page (HTML)…", self.export_page_dialog)
        self.menu.addSeparator()
        self.copy_action = self._action("Copy focus view to clipboard", lambda: self.copy_view("focus"), "Ctrl+Shift+C")
        self._action("Figure settings…", self.settings_dialog)

    def _action(self, text: str, slot, shortcut: str | None = None) -> QAction:
        action = QAction(text, self.tab)
        action.triggered.connect(slot)
        if shortcut:  # one binding: the action lives in the tab (so the key works there) and in the menu
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.tab.addAction(action)
        self.menu.addAction(action)
        return action

    def add_view(self, text: str, slot) -> QAction:
        """Another view's export (the neuron view's), listed with the views, before Export all."""
        action = QAction(text, self.tab)
        action.triggered.connect(slot)
        self.menu.insertAction(self.all_action, action)
        return action

    # --- what is exported -----------------------------------------------------------------------
    def request(self, view: str):
        """The ExportRequest (model.figures.export) of a view as the window shows it."""
        from explorer.widgets.figure_settings import figure_options  # deferred: matplotlib loads with the first export
        from model.figures.export import ExportRequest

        tab = self.tab
        bundle, snapshot = tab.explore.opened, tab.explore.snapshot
        model_name = Path(bundle.path).stem if bundle is not None and bundle.path else "unsaved model"
        model_name += f", {snapshot}" if snapshot else ""  # the snapshot of its training explored, in the caption
        options, dpi = figure_options(tab.settings, tab.colormap.currentText(), model_name)
        heads = tab.lines.visible_heads() if view == "lines" and tab.lines.head_boxes else None
        state = tab.shown_state  # fitted to the trace at the last refresh: what the views show
        return ExportRequest(**vars(state), view=view, figure=options, dpi=dpi, heads=heads)

    def trace(self):
        """The trace the views draw: the Explore controller's, with the measure chosen in place of the weights."""
        trace = self.tab.explore.trace
        if trace is not None and self.tab.view_trace is not None:
            trace = self.tab.view_trace
        if trace is None:
            raise OutputError("nothing to export yet: translate a sentence first")
        return trace

    def model_path(self) -> tuple:
        bundle = self.tab.explore.bundle
        return (bundle.path,) if bundle is not None and bundle.path else ()

    # --- doing it -------------------------------------------------------------------------------
    def record(self, request):
        """The record of an export of ``request``'s view (model/provenance/): the ``export`` command of the same view,
        as the command line writes it, and what the window shows that the command line cannot draw yet (a measure,
        sampling, forced tokens, a snapshot, a beam hypothesis other than the best), named."""
        from model.cli.recorded import export_record, model_reference  # deferred: matplotlib loads with the first export

        explore, tab = self.tab.explore, self.tab
        bundle = explore.bundle
        if bundle is None:  # a trace shown without its model (nothing to name)
            return None
        options = explore.options
        beam, masked = self._decoding_flags()
        model = model_reference(bundle)
        record = export_record(request, bundle, str(model), explore.text, beam, masked, explore.snapshot)
        trace = explore.trace
        beyond = [
            f"the measure {tab.measure_box.currentText()!r}" if tab.measure_box.measure != "attention" else "",
            f"sampling (seed {options.seed})" if options.strategy == "sample" else "",
            "forced tokens" if trace is not None and bool(np.asarray(trace.forced).any()) else "",
            f"the snapshot {explore.snapshot}" if explore.snapshot else "",
            f"beam hypothesis {request.hypothesis + 1}" if request.hypothesis else "",
        ]
        if any(beyond):
            record.beyond_the_command("; ".join(part for part in beyond if part))
        if trace is not None and bool(np.asarray(trace.forced).any()):
            record.input["forced"] = [token for token, forced in zip(trace.target_tokens, trace.forced) if forced]
        return record

    def export_view(self, view: str, path: str | Path) -> Path:
        from model.figures.export import export_view  # deferred: matplotlib loads with the first export

        request = self.request(view)
        return export_view(self.trace(), request, path, self.model_path(), self.record(request))

    def export_all_to(self, folder: str | Path) -> list[Path]:
        from model.figures.export import export_all  # deferred: matplotlib loads with the first export

        request = self.request("focus")
        return export_all(self.trace(), folder, request, record_for=self.records(request))

    def records(self, request):
        """Export all's records, one per file's view (``record`` of the first, its digests computed once here in the
        window's thread: the job then only builds each file's command)."""
        from model.cli.recorded import export_records, language_flags  # deferred: matplotlib loads with the first export

        base, bundle = self.record(request), self.tab.explore.bundle
        if base is None or bundle is None:
            return None
        beam, masked = self._decoding_flags()
        return export_records(base, base.command[2], self.tab.explore.text, beam, masked, language_flags(bundle))

    def _decoding_flags(self) -> tuple[int | None, str]:
        """(the beam's width, or None for another strategy; the heads knocked out as ``--mask-heads`` spells them)."""
        explore = self.tab.explore
        beam = explore.options.beam_width if explore.options.strategy == "beam" else None
        return beam, ",".join(f"{head.kind}:{head.layer + 1}:{head.head + 1}" for head in explore.masked_heads)

    def export_pair(self, path: str | Path) -> Path | None:
        """The side-by-side view's two heatmaps as one figure; a message says where it went or why not."""
        from explorer.widgets.figure_settings import figure_options  # deferred: matplotlib loads with the first export
        from model.figures.comparison import pair_figure
        from model.figures.saving import save_figure  # deferred: matplotlib loads with the first export

        tab = self.tab
        panels = tab.compare_view.panels
        try:
            if len(panels) != 2:
                raise OutputError("nothing to export yet: choose a second model and translate a sentence")
            options, dpi = figure_options(tab.settings, tab.colormap.currentText(), "")
            written = save_figure(pair_figure(panels, options), path, dpi)
        except export_errors() as error:
            tab.explore.message.emit(f"Export failed: {error}")
            return None
        tab.explore.message.emit(f"Exported {written}")
        return written

    def figure_image(self, view: str) -> QImage:
        from model.figures.export import draw, request_trace  # deferred: matplotlib loads with the first export
        from model.figures.saving import figure_png

        request = self.request(view)
        figure = draw(request_trace(self.trace(), request), request)
        image = QImage()
        image.loadFromData(figure_png(figure, min(request.dpi, 200)), "PNG")
        return image

    def copy_view(self, view: str) -> QImage | None:
        try:
            image = self.figure_image(view)
        except export_errors() as error:
            self.tab.explore.message.emit(f"Copy failed: {error}")
            return None
        QGuiApplication.clipboard().setImage(image)
        self.tab.explore.message.emit(f"Copied the {VIEW_NAMES[view]} to the clipboard")
        return image

    # --- dialogs --------------------------------------------------------------------------------
    def suggested_name(self, view: str) -> str:
        tab = self.tab
        head = tab.head if isinstance(tab.head, str) else f"H{tab.head + 1}"
        return f"{view}_{tab.current_kind()}_L{tab.layer + 1}_{head}.png"

    def export_dialog(self, view: str, page: bool = False) -> None:
        """Ask for a file and export ``view`` into it; ``page``: the interactive page (HTML) of the current trace."""
        folder = self.tab.settings.folder("explore/export_folder")
        name = self.suggested_name(view)
        title = f"Export the {VIEW_NAMES[view]}"
        if page:
            name, title = str(Path(name.replace(f"{view}_", "page_", 1)).with_suffix(".html")), "Export an interactive page"
        path, _ = QFileDialog.getSaveFileName(self.tab, title, str(folder / name), PAGE_FILTER if page else EXPORT_FILTER)
        if not path:
            return
        try:
            written = self.export_view(view, path)
        except export_errors() as error:
            self.tab.explore.message.emit(f"Export failed: {error}")
            return
        self.tab.settings.setValue("explore/export_folder", str(Path(path).parent))
        self.tab.explore.message.emit(f"Exported {written}")

    def export_page_dialog(self) -> None:
        """The interactive page (model.figures.html_page): every kind, layer, head and step of the current trace in
        one self-contained HTML file, opening on the view the window shows."""
        self.export_dialog("focus", page=True)

    def export_all_dialog(self) -> None:
        """Export all into a chosen folder, in a job of the window's runner (a few seconds for a large model): the
        window stays responsive, "Stop exporting all" stops it between two figures (the files written are kept, each
        whole), and the status bar says when the files are written."""
        folder = QFileDialog.getExistingDirectory(
            self.tab, "Export every kind, layer and head into a folder", str(self.tab.settings.folder("explore/export_folder"))
        )
        if not folder:
            return
        try:
            trace, request = self.trace(), self.request("focus")  # the trace is a snapshot: stepping on is safe
        except export_errors() as error:
            self.tab.explore.message.emit(f"Export failed: {error}")
            return
        self.start_export_all(trace, folder, request)

    def start_export_all(self, trace, folder: str, request) -> None:
        """Export all of ``trace`` into ``folder`` on the runner's Export all channel."""
        message = self.tab.explore.message
        kept: list[Path] = []  # the files a stopped export had written

        records = self.records(request)

        def work(job):
            from model.figures.export import ExportStopped, export_all  # deferred: matplotlib loads with the first export

            try:
                return export_all(trace, folder, request, stop=job.token.is_cancelled, record_for=records)
            except ExportStopped as stopped:
                kept.extend(stopped.written)
                job.check()  # cancelled: the runner reports it as such
                raise

        message.emit(f"Exporting every kind, layer and head to {folder}…")
        self.stop_all_action.setEnabled(True)
        self.tab.runner.submit(
            EXPORT_CHANNEL,
            work,
            on_done=lambda written: message.emit(f"Exported {len(written)} files to {folder} (index.csv names them)"),
            on_error=lambda text: message.emit(f"Export failed: {text}"),
            on_cancelled=lambda: message.emit(f"Export all stopped: {len(kept)} files written to {folder} are kept"),
            on_end=lambda: self.stop_all_action.setEnabled(False),
        )

    def stop_export_all(self) -> bool:
        """Stop Export all between two figures; True when one was running."""
        return self.tab.runner.cancel(EXPORT_CHANNEL)

    def settings_dialog(self):
        from explorer.widgets.figure_settings import FigureSettingsDialog  # deferred: matplotlib loads with the first export

        dialog = FigureSettingsDialog(self.tab.settings, self.tab)
        dialog.open()
        return dialog
