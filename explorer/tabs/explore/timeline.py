"""The Explore tab's timeline of the open model's training, gathered in one place: the timeline bar above the views,
the "Over training" view among them (shown while the model has a timeline), the signed difference of two snapshots
the focus and grid show, and the exports over training in the Export menu.

``ExploreTimeline`` builds the bar and the curves view for the tab (which places them) and wires them to the
timeline controllers the main window built (explorer/controllers/timeline*.py). While a difference is shown, the tab
asks it what to draw: the focus and grid as the explored snapshot minus the compared one (both reading the same
output), on a diverging colour map centred at 0 with symmetric limits, titled with both snapshots.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from PySide6.QtWidgets import QMenu

from explorer.controllers.timeline import PLAY_SECONDS, SIDE_BY_SIDE, symmetric_levels
from explorer.controllers.timeline_exports import Shown
from explorer.controllers.window import WindowControllers
from explorer.widgets.heatmap import DIVERGING
from explorer.widgets.save_dialog import ask_save_path
from explorer.widgets.timeline_bar import TimelineBar
from explorer.widgets.timeline_curves_view import CurvesView
from model.decoding.trace import Trace
from model.inspection.view import ExploreView
from model.kinds import AttentionKind
from model.timeline.source import SnapshotSource

CURVES_TAB = "Over training"
FIGURE_FILTER = "PNG image (*.png);;SVG vector image (*.svg);;PDF document (*.pdf)"
GIF_WIDTH = 5.0  # inches: 500 pixels at 100 dpi (model/timeline/animation.py's frame width)


class ExploreTimeline:
    def __init__(self, tab, controllers: WindowControllers) -> None:
        self.tab = tab
        self.timeline, self.curves, self.exports = controllers.timeline, controllers.curves, controllers.timeline_exports
        self.bar = TimelineBar(PLAY_SECONDS)
        self.bar.hide()
        self.curves_view = CurvesView()
        self.curves_view.setParent(tab)  # owned by the tab while not among the views: it goes with the window
        self.curves_view.hide()
        self._partner: Trace | None = None  # the compared snapshot's trace at the last draw (None: no difference)
        self._wire()

    def _wire(self) -> None:
        bar, line, view, curves = self.bar, self.timeline, self.curves_view, self.curves
        bar.index_chosen.connect(line.move)
        bar.play_toggled.connect(lambda playing: line.play() if playing else line.pause())
        bar.tick.connect(line.advance)
        bar.compare_chosen.connect(line.compare_with)
        bar.loop_toggled.connect(lambda loop: setattr(line, "loop", loop))
        bar.same_output_toggled.connect(line.set_same_output)
        line.opened.connect(self._on_opened)
        line.moved.connect(self._on_moved)
        line.playing_changed.connect(bar.set_playing)
        line.running_changed.connect(bar.set_busy)
        line.compare_changed.connect(self._on_compare_changed)
        view.compute_requested.connect(lambda pairs: curves.compute(importance_pairs=pairs))
        view.cancel_requested.connect(curves.cancel)
        view.change_chosen.connect(curves.go_to_change)
        curves.progress.connect(view.set_progress)
        curves.ready.connect(view.show_curves)
        curves.running_changed.connect(view.set_running)
        curves.head_chosen.connect(self._on_head_chosen)
        views = self.tab.views  # shown, the curves follow the sentence on their own
        views.currentChanged.connect(lambda _index: curves.set_shown(views.currentWidget() is view))
        for source in (line.message, curves.message, self.exports.message):
            source.connect(self.tab.explore.message)
        curves.message.connect(view.show_message)

    # --- the controllers' events -----------------------------------------------------------------
    def _on_opened(self, source: SnapshotSource | None) -> None:
        views = self.tab.views
        position = views.indexOf(self.curves_view)
        self.tab.compare_view.name_snapshot("")  # no snapshot beside the model any more
        if source is None:
            self.bar.hide()
            if position >= 0:
                views.removeTab(position)
            self._apply_colours()
            return
        self.bar.set_snapshots([self.timeline.name(index) for index in range(self.timeline.count)])
        self._on_moved(self.timeline.index)
        self.bar.set_comparison(None, self.timeline.mode)
        self.bar.show()
        if position < 0:
            views.addTab(self.curves_view, CURVES_TAB)
            views.setTabToolTip(views.indexOf(self.curves_view), "Each head's entropy, role and AER over the model's training")
        self._apply_colours()

    def _on_moved(self, index: int) -> None:
        self.bar.show_snapshot(index, self.timeline.details(index))
        source = self.timeline.source
        self.curves_view.mark_step(source.snapshots[index].step if source is not None else None)

    def _on_compare_changed(self, index: int | None, mode: str) -> None:
        self.bar.set_comparison(index, mode)
        beside = f"snapshot {index}: {self.timeline.name(index)}" if index is not None and mode == SIDE_BY_SIDE else ""
        self.tab.compare_view.name_snapshot(beside)
        if beside:
            self.tab.views.setCurrentWidget(self.tab.compare_view)
        self._apply_colours()
        self.tab.refresh()

    def _on_head_chosen(self, _kind: AttentionKind, _layer: int, _head: int) -> None:
        """A phase change's head, chosen already (the Explore controller's view): the grid shows the pair at it."""
        tab = self.tab
        if tab.views.currentWidget() is self.curves_view:
            tab.views.setCurrentWidget(tab.grid)

    def _apply_colours(self) -> None:
        name = self.colours(self.tab.colormap.currentText())
        self.tab.grid.set_colormap(name)
        self.tab.focus.set_colormap(name)

    # --- what the focus and grid draw --------------------------------------------------------------
    def colours(self, chosen: str) -> str:
        """The colour map of the focus and grid: a diverging one while a difference is shown, else ``chosen``."""
        return DIVERGING if self.timeline.differing else chosen

    def partner(self, trace: Trace | None) -> Trace | None:
        """The compared snapshot's trace of ``trace`` while a difference is shown (kept for this draw)."""
        self._partner = self.timeline.partner(trace)
        return self._partner

    def focus(self, state: ExploreView, values: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
        """(the focus's values, its colour limits): minus the compared snapshot's, symmetric, during a difference."""
        if self._partner is None:
            return values, (0.0, 1.0)
        difference = values - state.matrix(state.shown_trace(self._partner)).values  # [queries, keys]
        return difference, symmetric_levels(difference)

    def grid(self, state: ExploreView, weights: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
        """(the grid's weights [layers, heads, Q, K], colour limits), as ``focus``."""
        if self._partner is None:
            return weights, (0.0, 1.0)
        difference = weights - state.shown_trace(self._partner).matrix(state.kind)
        return difference, symmetric_levels(difference)

    def title(self, title: str = "") -> str:
        """``title`` with the snapshot explored ("step 1,200"), or the two a difference subtracts ("step 1,200 − step
        10"), on a line of its own; ``title`` alone without a timeline. Without a ``title``: the line above the grid,
        in full."""
        line = self.timeline
        if self._partner is not None and line.compare_index is not None:
            short = f"{line.name(line.index).split(' of ')[0]} − {line.name(line.compare_index).split(' of ')[0]}"
            named = f"difference: {line.describe_comparison()}" if not title else short
        else:
            named = self.tab.explore.snapshot if not title else self.tab.explore.snapshot.split(" of ")[0]
        return f"{title}<br>{named}" if title and named else title or named  # a title's own line: never clipped away

    # --- exports ---------------------------------------------------------------------------------
    def add_exports(self, menu: QMenu) -> QMenu:
        """The exports over training, as a submenu of the Export menu."""
        over = menu.addMenu("Over training")
        over.setToolTipsVisible(True)
        for text, slot, tip in (
            (
                "Animation (GIF)…",
                self.animation_dialog,
                "One frame per snapshot of what is shown: the grid, a layer (Lines) or the focus",
            ),
            ("Strip of snapshots (PNG, SVG, PDF)…", self.strip_dialog, "The snapshots in a row, on one colour scale"),
            ("Difference of two snapshots…", self.difference_dialog, "The difference the focus shows, as a figure"),
            ("Curves (CSV)…", lambda: self.curves_dialog(".csv"), "One row per snapshot and head"),
            ("Curves figure (PNG, SVG, PDF)…", lambda: self.curves_dialog(".png"), "The curves on one log step axis"),
        ):
            action = over.addAction(text)
            action.setToolTip(tip)
            action.triggered.connect(slot)
        return over

    def shown(self) -> Shown:
        """What a figure over training shows: the grid or a layer's heads when that view is shown, else the focus."""
        tab = self.tab
        state, current = tab.shown_state, tab.views.currentWidget()
        return Shown(
            state.kind,
            state.layer,
            state.head,
            "grid" if current is tab.grid else "layer" if current is tab.lines else "head",
            state.word_level,
        )

    def figure_options(self, width: float | None = None):
        from explorer.widgets.figure_settings import figure_options  # deferred: matplotlib loads with the first export

        explore = self.tab.explore
        name = Path(explore.opened.path).stem if explore.opened is not None and explore.opened.path else "unsaved model"
        options, dpi = figure_options(self.tab.settings, self.tab.colormap.currentText(), name)
        return (replace(options, width=width) if width else options), dpi

    def _ask(self, title: str, name: str, filters: str) -> str:
        folder = self.tab.settings.folder("explore/export_folder")
        path = ask_save_path(self.tab, title, folder / name, filters)  # the filter of the name's suffix chosen
        if path:
            self.tab.settings.setValue("explore/export_folder", str(Path(path).parent))
        return path

    def animation_dialog(self) -> None:
        path = self._ask("Export an animation over training", "over-training.gif", "Animated GIF (*.gif)")
        if path:
            self.export_animation(path)

    def export_animation(self, path: str | Path) -> bool:
        options, _dpi = self.figure_options(GIF_WIDTH)
        return self.exports.animation(path, self.shown(), options)

    def strip_dialog(self) -> None:
        path = self._ask("Export the snapshots in a row", "over-training.pdf", FIGURE_FILTER)
        if path:
            self.export_strip(path)

    def export_strip(self, path: str | Path) -> bool:
        options, dpi = self.figure_options()
        return self.exports.strip(path, self.shown(), options, dpi)

    def difference_dialog(self) -> None:
        path = self._ask("Export the difference of two snapshots", "difference.pdf", FIGURE_FILTER)
        if path:
            self.export_difference(path)

    def export_difference(self, path: str | Path) -> bool:
        trace, partner = self.tab.explore.trace, self.timeline.partner(self.tab.explore.trace)
        if trace is None or partner is None:
            self.tab.explore.message.emit("Export failed: compare with a snapshot as a difference first (the timeline bar).")
            return False
        options, dpi = self.figure_options()
        state = self.tab.shown_state
        shown = replace(self.shown(), word_level=False)  # the traces are cut to the step and levelled here
        return self.exports.difference(path, (state.shown_trace(partner), state.shown_trace(trace)), shown, options, dpi)

    def curves_dialog(self, suffix: str) -> None:
        filters = "CSV table (*.csv)" if suffix == ".csv" else FIGURE_FILTER
        path = self._ask("Export the curves over training", f"curves{suffix}", filters)
        if path:
            self.export_curves(path)

    def export_curves(self, path: str | Path) -> bool:
        options, dpi = self.figure_options()
        return self.exports.curves_file(path, options.width, min(dpi, 300))
