"""Exporting what a view shows: PNG at 1x-4x, SVG (vector, token labels as text, through Qt's
QSvgGenerator because pyqtgraph 0.14's SVGExporter fails under PySide6 6.12), the data as CSV
(labels in the first row and column) and NPY, a whole folder for every kind x layer x head, and
the clipboard.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QGraphicsView, QWidget

from model.selection import write_csv

IMAGE_SUFFIXES = (".png", ".svg")
DATA_SUFFIXES = (".csv", ".npy")


class ExportError(ValueError):
    pass


def _source(widget: QWidget) -> tuple[QGraphicsView | None, QRectF]:
    """The graphics view inside a widget (itself, or its first child view) and the scene area on screen."""
    view = widget if isinstance(widget, QGraphicsView) else widget.findChild(QGraphicsView)
    if view is None:
        return None, QRectF(widget.rect())
    return view, view.mapToScene(view.viewport().rect()).boundingRect()


def _paint(widget: QWidget, painter: QPainter, target: QRectF) -> None:
    view, area = _source(widget)
    if view is not None and widget is view:
        view.scene().render(painter, target, area)
    else:
        painter.scale(target.width() / max(widget.width(), 1), target.height() / max(widget.height(), 1))
        widget.render(painter)


def render_image(widget: QWidget, scale: float = 2.0) -> QImage:
    """The widget drawn at ``scale`` times its on-screen size (vector items stay sharp)."""
    if not 1 <= scale <= 4:
        raise ExportError("scale must be between 1 and 4")
    size = QSize(max(1, int(widget.width() * scale)), max(1, int(widget.height() * scale)))
    image = QImage(size, QImage.Format_ARGB32)
    image.fill(widget.palette().color(widget.backgroundRole()) if not isinstance(widget, QGraphicsView)
               else widget.backgroundBrush().color() if widget.backgroundBrush().style() != Qt.NoBrush
               else QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setRenderHint(QPainter.TextAntialiasing)
    _paint(widget, painter, QRectF(0, 0, size.width(), size.height()))
    painter.end()
    return image


def save_svg(widget: QWidget, path: str | Path, title: str = "") -> None:
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(widget.size())
    generator.setViewBox(QRectF(0, 0, widget.width(), widget.height()))
    generator.setTitle(title or "Transformer Explorer")
    generator.setDescription("Exported by Transformer Explorer")
    painter = QPainter(generator)
    _paint(widget, painter, QRectF(0, 0, widget.width(), widget.height()))
    painter.end()


def save_image(widget: QWidget, path: str | Path, scale: float = 2.0, title: str = "") -> Path:
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".svg":
        save_svg(widget, path, title)
    elif suffix == ".png":
        if not render_image(widget, scale).save(str(path), "PNG"):
            raise ExportError(f"could not write {path}")
    else:
        raise ExportError(f"images are saved as .png or .svg, not {suffix or 'no extension'}")
    return path


def save_table(values: np.ndarray, row_labels: list[str], column_labels: list[str], path: str | Path,
               corner: str = "") -> Path:
    """A 2-D array as CSV (labels in the first row and column) or NPY (the array exactly)."""
    path = Path(path)
    values = np.asarray(values)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        np.save(path, values, allow_pickle=False)
    elif suffix == ".csv":
        if values.ndim != 2:
            raise ExportError("CSV holds a 2-D table")
        write_csv(values, row_labels, column_labels, path, corner)
    else:
        raise ExportError(f"data is saved as .csv or .npy, not {suffix or 'no extension'}")
    return path


def copy_to_clipboard(widget: QWidget, scale: float = 2.0) -> QImage:
    image = render_image(widget, scale)
    QGuiApplication.clipboard().setImage(image)
    return image


def export_all(trace, folder: str | Path, make_heatmap, step: int | None = None,
               formats: tuple[str, ...] = (".png", ".csv", ".npy")) -> list[Path]:
    """Every kind x layer x head (and the mean over heads) of the trace at ``step`` into ``folder``,
    named like ``cross_L2_H3.png``. ``make_heatmap(matrix)`` returns a widget showing one matrix."""
    from model.selection import select

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in ("encoder", "decoder", "cross"):
        weights = trace.matrix(kind)
        for layer in range(weights.shape[0]):
            for head in [*range(weights.shape[1]), "mean"]:
                matrix = select(trace, kind, layer, head, step)
                name = f"{kind}_L{layer + 1}_{'H' + str(head + 1) if isinstance(head, int) else head}"
                for suffix in formats:
                    path = folder / f"{name}{suffix}"
                    if suffix in DATA_SUFFIXES:
                        save_table(matrix.values, matrix.query_labels, matrix.key_labels, path, "query \\ key")
                    elif matrix.values.size:
                        save_image(make_heatmap(matrix), path, 1.0, matrix.title)
                    else:
                        continue
                    written.append(path)
    return written
