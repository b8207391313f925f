"""The focus heatmap after ordinary actions (issue 39): its key labels stay on their cells, its tooltips name the key
under the cursor, no label stands after ``</s>``, and at 1280x720, 1400x900 and 1920x1080 every key column, the colour
bar and the whole title show (or the title ends with "…" and its tooltip holds it all). Checked from Qt's geometry:
each label where its axis last painted it, each cell where the image item puts it, both against the viewport."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import QApplication

UNKNOWN = "The black cat, who costs 5 euros, sees the small dog."
LONG = " ".join(["the black cat sees the small dog and"] * 20)  # 180 pieces (cut at the model's 127)
SENTENCE = "the black cat sees the small dog"
SIZES = [(1280, 720), (1400, 900), (1920, 1080)]


def translate(qtbot, window, text: str) -> None:
    tab = window.explore_tab
    tab.controls.source.setText(text)
    tab.controls.source.returnPressed.emit()
    qtbot.waitUntil(lambda: window.explore.trace is not None and window.explore.finished, timeout=60000)
    QApplication.processEvents()


def choose_kind(qtbot, tab, kind: str) -> None:
    tab.kind.setCurrentIndex(tab.kind.findData(kind))
    qtbot.wait(50)


def choose_measure(qtbot, tab, name: str) -> None:
    tab.measure_box.set_measure(name)
    qtbot.waitUntil(lambda: tab.shown is not None and tab.shown.measure == name and not tab.readings.status.text(), timeout=120000)
    qtbot.wait(50)


def painted(focus):
    """Layout settled and the view painted: the axes' ``drawn`` is what the screen shows."""
    QApplication.processEvents()
    focus.grab()
    return focus.plot.getAxis("top"), focus.plot.getAxis("left")


def to_viewport(focus, item, rect: QRectF) -> QRectF:
    return focus.viewportTransform().mapRect(item.mapRectToScene(rect))


def key_cell(focus, key: int) -> QRectF:
    """Column ``key`` of the matrix in viewport px, from the image item's mapping."""
    rows, columns = focus.image.image.shape[:2]
    width = columns / focus.values.shape[1]
    return to_viewport(focus, focus.image, QRectF(key * width, 0, width, rows))


def key_label_problems(focus) -> list[str]:
    """Each painted key label against its cell: on it (within 2 px), naming its token, for a cell there is, and shown;
    the tooltip at the label's place names that key."""
    top, _ = painted(focus)
    n_keys = focus.values.shape[1]
    port = QRectF(focus.viewport().rect())
    found = []
    for index, text, rect in top.drawn:
        if index >= n_keys:
            found.append(f"a label {text!r} stands for key {index + 1} of {n_keys}")
            continue
        if text != focus.display_key_labels[index]:
            found.append(f"key {index + 1} is labelled {text!r}, not {focus.display_key_labels[index]!r}")
        centre = to_viewport(focus, top, rect).center().x()
        cell = key_cell(focus, index)
        if abs(centre - cell.center().x()) > 2.0:
            found.append(f"label {text!r} at {centre:.0f} px, its cell's centre at {cell.center().x():.0f} px")
        if not port.adjusted(-1, -1, 1, 1).contains(QRectF(cell.center().x(), port.center().y(), 0.1, 0.1)):
            found.append(f"key column {index + 1} {text!r} is outside the panel ({cell.center().x():.0f} px of {port.width():.0f})")
        scene = focus.viewportTransform().inverted()[0].map(QPointF(centre, cell.center().y()))
        under = focus.cell_at(scene)
        tip = focus.describe_cell(*under) if under else ""
        if f"key {text!r} (#{index + 1})" not in tip:
            found.append(f"under the label {text!r} the tooltip says {tip!r}")
    if [index for index, _, _ in top.drawn] != list(range(n_keys)):
        found.append(f"keys labelled {[index for index, _, _ in top.drawn]}, not all {n_keys}")
    return found


def test_key_labels_stay_on_their_cells_after_a_long_sentence(qtbot, open_window, default_bundle):
    window = open_window(default_bundle)
    window.resize(1400, 900)
    tab = window.explore_tab
    for text in (UNKNOWN, LONG, SENTENCE):
        translate(qtbot, window, text)
    choose_kind(qtbot, tab, "encoder")
    choose_kind(qtbot, tab, "cross")
    assert tab.focus.display_key_labels == ["the", "black", "cat", "sees", "the", "small", "dog", "</s>"]
    assert key_label_problems(tab.focus) == []
    assert tab.focus.misplaced_labels() == [] and tab.focus.hidden_parts() == []
    for measure in ("ig", "shift-att"):
        choose_measure(qtbot, tab, measure)
        assert key_label_problems(tab.focus) == [], measure
        assert tab.focus.misplaced_labels() == [], measure


def test_the_focus_panel_shows_every_column_its_colour_bar_and_title(qtbot, open_window, default_bundle):
    """One window, the reading computed once, then each size in turn (a resize must lay the panel out again)."""
    window = open_window(default_bundle)
    window.resize(*SIZES[0])
    tab = window.explore_tab
    translate(qtbot, window, SENTENCE)
    choose_kind(qtbot, tab, "cross")
    choose_measure(qtbot, tab, "ig")  # the longest title: the source share and the completeness gap
    for size in SIZES:
        window.resize(*size)
        qtbot.wait(50)
        assert (window.width(), window.height()) == size
        assert focus_panel_problems(window, tab.focus) == [], size


def focus_panel_problems(window, focus) -> list[str]:
    """Every key column, the colour bar and the title inside the panel; the title whole or elided with a tooltip."""
    painted(focus)
    port = QRectF(focus.viewport().rect()).adjusted(-1, -1, 1, 1)
    found = [] if focus.mapTo(window, focus.rect().bottomRight()).x() <= window.width() else ["the panel passes the window"]
    for key in range(focus.values.shape[1]):
        if not port.contains(key_cell(focus, key).adjusted(0, 0, 0, -key_cell(focus, key).height() + 1)):
            found.append(f"key column {key + 1}")
    if not port.contains(to_viewport(focus, focus.color_bar, focus.color_bar.boundingRect())):
        found.append("colour bar")
    title = focus.plot.titleLabel
    if not port.contains(to_viewport(focus, title, title.boundingRect())):
        found.append("title")
    whole = focus.title_text()
    if "completeness gap" not in whole or "% source" not in whole:
        found.append(f"title {whole!r}")
    drawn = " ".join(title.lines)
    if not (
        drawn.replace(" ", "") == whole.replace("\n", "").replace(" ", "") or (drawn.endswith("…") and title.toolTip() == whole)
    ):
        found.append(f"title drawn as {drawn!r}")
    return found + key_label_problems(focus) + focus.hidden_parts()


def test_a_long_title_wraps_then_ends_with_an_ellipsis_and_its_tooltip_holds_it(qtbot):
    import numpy as np

    from explorer.app import make_application
    from explorer.widgets.heatmap import HeatmapView

    make_application()
    focus = HeatmapView()
    qtbot.addWidget(focus)
    focus.resize(500, 400)
    focus.show()
    long_title = "A very long title " + " ".join(f"part{i}" for i in range(80)) + "<br>second line"
    focus.set_matrix(np.full((3, 4), 0.25, np.float32), list("abc"), list("wxyz"), long_title)
    painted(focus)
    title = focus.plot.titleLabel
    assert focus.title_elided() and title.lines[-1].endswith("…") and len(title.lines) <= 4
    assert focus.title_text() == title.toolTip() == long_title.replace("<br>", "\n")
    assert focus.hidden_parts() == []
