"""Figure settings for exports: width (one column 3.3 in, two columns 6.9 in, or custom), font size,
PNG resolution, the caption line and the current-step outline. Kept between launches; the
``export`` command takes the same settings as options (--width, --font-size, --dpi, --no-caption,
--outline-step)."""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QSpinBox

from explorer.settings_values import SettingsValues
from model.figures.attention import FigureOptions
from model.figures.layout import MIN_FONT_SIZE, WIDTH_PRESETS

WIDTHS = (("One column (3.3 in)", WIDTH_PRESETS["column"]), ("Two columns (6.9 in)", WIDTH_PRESETS["page"]), ("Custom", None))
MAX_WIDTH, MAX_FONT_SIZE, MIN_DPI, MAX_DPI = 40.0, 36.0, 50, 1200


def saved_figure_settings(settings: SettingsValues) -> tuple[float, float, int, bool, bool]:
    """(width in inches, font size, PNG dpi, caption, outline of the step) as saved, each checked (a damaged one
    reads as its default)."""
    return (
        settings.number("export/width", WIDTH_PRESETS["page"], 1.0, MAX_WIDTH),
        settings.number("export/font_size", 8.0, MIN_FONT_SIZE, MAX_FONT_SIZE),
        settings.integer("export/dpi", 300, MIN_DPI, MAX_DPI),
        settings.boolean("export/caption", True),
        settings.boolean("export/outline_step", False),
    )


class FigureSettingsDialog(QDialog):
    def __init__(self, settings: QSettings | SettingsValues, parent=None):
        super().__init__(parent)
        self.settings = SettingsValues.of(settings)
        self.setWindowTitle("Figure settings")
        self.preset = QComboBox()
        for name, inches in WIDTHS:
            self.preset.addItem(name, inches)
        self.width_box = QDoubleSpinBox()
        self.width_box.setRange(1.0, MAX_WIDTH)
        self.width_box.setSingleStep(0.1)
        self.width_box.setSuffix(" in")
        self.font_size = QDoubleSpinBox()
        self.font_size.setRange(MIN_FONT_SIZE, MAX_FONT_SIZE)
        self.font_size.setSuffix(" pt")
        self.font_size.setToolTip("Labels shrink from this size (down to 4 pt) so that every token is labelled")
        self.dpi = QSpinBox()
        self.dpi.setRange(MIN_DPI, MAX_DPI)
        self.dpi.setSuffix(" dpi")
        self.dpi.setToolTip("Resolution of PNG files (SVG and PDF are vector)")
        self.caption = QCheckBox("Caption: sentence, model, kind, layer, head and step")
        self.outline = QCheckBox("Outline the current step's row (a window aid, off for papers)")
        form = QFormLayout(self)
        form.addRow("Width", self.preset)
        form.addRow("Custom width", self.width_box)
        form.addRow("Font size", self.font_size)
        form.addRow("PNG resolution", self.dpi)
        form.addRow(self.caption)
        form.addRow(self.outline)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.preset.currentIndexChanged.connect(self._on_preset_changed)
        self.accepted.connect(self.save)
        self.load()

    def load(self) -> None:
        width, font_size, dpi, caption, outline_step = saved_figure_settings(self.settings)
        self.width_box.setValue(width)
        index = next((i for i, (_n, inches) in enumerate(WIDTHS) if inches == width), len(WIDTHS) - 1)
        self.preset.setCurrentIndex(index)
        self._on_preset_changed(index)
        self.font_size.setValue(font_size)
        self.dpi.setValue(dpi)
        self.caption.setChecked(caption)
        self.outline.setChecked(outline_step)

    def _on_preset_changed(self, index: int) -> None:
        inches = self.preset.itemData(index)
        self.width_box.setEnabled(inches is None)
        if inches is not None:
            self.width_box.setValue(inches)

    def save(self) -> None:
        self.settings.setValue("export/width", self.width_box.value())
        self.settings.setValue("export/font_size", self.font_size.value())
        self.settings.setValue("export/dpi", self.dpi.value())
        self.settings.setValue("export/caption", self.caption.isChecked())
        self.settings.setValue("export/outline_step", self.outline.isChecked())


def figure_options(settings: QSettings | SettingsValues, colormap: str, model_name: str) -> tuple[FigureOptions, float]:
    """The saved settings as the core's FigureOptions, and the PNG dpi."""
    width, font_size, dpi, caption, outline_step = saved_figure_settings(SettingsValues.of(settings))
    options = FigureOptions(
        width=width, font_size=font_size, colormap=colormap, caption=caption, outline_step=outline_step, model_name=model_name
    )
    return options, float(dpi)
