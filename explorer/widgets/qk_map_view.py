"""The joint query-key map in the window (pyqtgraph): one scatter plot per head (small multiples for a layer), queries
as circles and keys as triangles, coloured by position, token or query/key as the exported figure
(model/figures/qk_map.py) colours them, with what the colours mean beside them (a colour bar of the positions; a legend
of the frequent tokens, or of query and key). Hovering a point shows its token, position and sentence; clicking it asks for
that sentence at that token (``point_chosen``). It shows the panels it is given (plain arrays), nothing more.
"""

from __future__ import annotations

import html
from typing import Any

import matplotlib
import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal

from explorer.widgets.plot_style import show_light_grid
from model.data.token_labels import display_labels
from model.figures.attention import FigureOptions
from model.figures.qk_map import KEY_COLOUR, MAX_COLUMNS, OTHER_TOKENS, QUERY_COLOUR, MapPanel, frequent_tokens, point_colours

SYMBOLS = {True: "o", False: "t1"}  # queries (circles), keys (triangles pointing up, as in the figure)
PANEL_HEIGHT = 230  # px a row of panels needs to be read: a layer of 32 heads is 8 rows, scrolled (see ``set_panels``)


def _qcolours(colours: list) -> list:
    """matplotlib RGBA tuples (0-1) or hex strings as pyqtgraph brushes."""
    brushes = []
    for colour in colours:
        if isinstance(colour, str):
            brushes.append(pg.mkBrush(colour))
        else:
            red, green, blue, alpha = (int(round(255 * part)) for part in colour)
            brushes.append(pg.mkBrush(red, green, blue, int(alpha * 0.8)))
    return brushes


class QKMapView(pg.GraphicsLayoutWidget):
    point_chosen = Signal(int, str, int)  # sentence id, side, position

    def __init__(self) -> None:
        super().__init__()
        self.setToolTip("Each head's queries (●) and keys (▲) from the index's sentences; hover a point, click it to open it")
        self.setMinimumHeight(300)
        self.panels: list[MapPanel] = []
        self.scatters: list[pg.ScatterPlotItem] = []
        self.colour_by = "position"

    def set_panels(self, panels: list[MapPanel], colour_by: str = "position") -> None:
        self.clear()
        self.panels, self.scatters, self.colour_by = list(panels), [], colour_by
        if not panels:
            return
        colormap = FigureOptions().colours()
        max_position = int(max(panel.positions.max(initial=0) for panel in panels))
        top_tokens = frequent_tokens(panels) if colour_by == "token" else []
        columns = min(len(panels), MAX_COLUMNS)
        plots = []
        rows = -(-len(panels) // columns)
        self.setMinimumHeight(max(300, rows * PANEL_HEIGHT))  # in a scroll area: many heads scroll, never squash
        for number, panel in enumerate(panels):
            title = f"{html.escape(panel.title)}<br><span style='font-size:8pt'>{html.escape(' · '.join(panel.notes))}</span>"
            plot = self.addPlot(row=number // columns, col=number % columns, title=title, enableMenu=False)
            plots.append(plot)
            show_light_grid(plot)
            plot.setLabel("bottom", panel.axis_names[0])
            plot.setLabel("left", panel.axis_names[1])
            brushes = np.array(_qcolours(point_colours(panel, colour_by, top_tokens, colormap, max_position)), dtype=object)
            for is_query in (False, True):
                chosen = np.flatnonzero(panel.is_query == is_query)
                if not len(chosen):
                    continue
                scatter = pg.ScatterPlotItem(
                    x=panel.xy[chosen, 0],
                    y=panel.xy[chosen, 1],
                    data=[(number, int(point)) for point in chosen],
                    symbol=SYMBOLS[is_query],
                    size=7,
                    pen=None,
                    brush=list(brushes[chosen]),
                    hoverable=True,
                    hoverSize=11,
                    tip=self.tip,
                )
                scatter.sigClicked.connect(self._on_clicked)
                plot.addItem(scatter)
                self.scatters.append(scatter)
        self._add_key(plots[0], colour_by, top_tokens, colormap, max_position, rows, columns)

    def _add_key(
        self, first: pg.PlotItem, colour_by: str, top_tokens: list[str], colormap, max_position: int, rows: int, columns: int
    ) -> None:
        """What the colours mean, as the exported figure's legend says: a colour bar of the positions (right of the
        panels), or a legend of the frequent tokens (the rest grey) or of queries and keys (in the first panel)."""
        if colour_by == "position":
            samples = np.linspace(0.0, 1.0, 64)
            bar_map = pg.ColorMap(samples, [tuple(int(round(255 * part)) for part in colormap(value)[:3]) for value in samples])
            bar = pg.ColorBarItem(values=(0, max(max_position, 1)), colorMap=bar_map, interactive=False, label="position", width=14)
            bar.setLevels((0, max(max_position, 1)))
            self.addItem(bar, row=0, col=columns, rowspan=rows)
            return
        legend = first.addLegend(offset=(4, 4), labelTextSize="8pt")
        legend.setBrush(pg.mkBrush(255, 255, 255, 200))
        entries: list[tuple[str, Any, str]]  # label, colour (hex or RGBA), symbol
        if colour_by == "qk":
            entries = [("query", QUERY_COLOUR, "o"), ("key", KEY_COLOUR, "t1")]
        else:
            palette = matplotlib.colormaps["tab10"]
            entries = [(label, palette(index % 10), "s") for index, label in enumerate(display_labels(top_tokens))]
            entries.append(("other", OTHER_TOKENS, "s"))
        for label, colour, symbol in entries:
            sample = pg.ScatterPlotItem(symbol=symbol, size=8, pen=None, brush=_qcolours([colour])[0])
            legend.addItem(sample, html.escape(label))  # rich text: a piece such as <s> is shown, never read as a tag

    def describe_point(self, panel_number: int, point: int) -> str:
        """A point's token, kind (query or key), position and sentence, as its tooltip says."""
        panel = self.panels[panel_number]
        token = display_labels([panel.tokens[point]])[0]
        what = "query" if panel.is_query[point] else "key"
        sentence = int(panel.sentence_ids[point])
        text = panel.sentence_texts.get(sentence, "")
        return f"{token} ({what}, position {panel.positions[point]})\nsentence {sentence}: {text}"

    def tip(self, x: float, y: float, data: tuple[int, int]) -> str:
        """Rich text, so that a piece such as <s> is shown, never read as a tag."""
        return "<qt>" + html.escape(self.describe_point(*data)).replace("\n", "<br>") + "</qt>"

    def point_side(self, panel_number: int, point: int) -> str:
        panel = self.panels[panel_number]
        return panel.sides[0] if panel.is_query[point] else panel.sides[1]

    def choose(self, panel_number: int, point: int) -> None:
        """Ask for a point's sentence at its token (what a click does)."""
        panel = self.panels[panel_number]
        self.point_chosen.emit(int(panel.sentence_ids[point]), self.point_side(panel_number, point), int(panel.positions[point]))

    def _on_clicked(self, _scatter, points, _event=None) -> None:
        if len(points):
            self.choose(*points[0].data())
