"""Why this token and not that one: the contrastive saliency of one step, as coloured tokens.

Ctrl+click (or right-click) a candidate other than the chosen token: the saliency of log p(chosen) − log p(other)
(gradient × input, or integrated gradients when that is the reading) is computed in the background
(explorer/controllers/measures.py) and shown here over the source pieces and the decoder's inputs up to that step.
Orange tokens speak for the chosen token, blue ones for the other; the stronger the colour, the larger the share
of the total |attribution|, which each token also carries as a signed percentage.
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from model.attribution.integration import integration_text
from model.data.token_labels import display_labels

FOR_CHOSEN = (245, 133, 24)  # orange, as the chosen candidate's bar
FOR_OTHER = (76, 120, 168)  # blue, as the other candidates' bars


def _chip(token: str, share: float, signed: float) -> str:
    colour = FOR_CHOSEN if signed >= 0 else FOR_OTHER
    alpha = min(1.0, abs(share) * 2.5)  # a token with 40% of the total is fully coloured
    background = f"rgba({colour[0]}, {colour[1]}, {colour[2]}, {alpha:.2f})"
    text = html.escape(token)
    return (
        f'<span style="background-color: {background}; padding: 2px; margin: 2px;">{text}'
        f'<sub style="color: #555;">{signed * 100:+.0f}%</sub></span>'
    )


class ContrastView(QWidget):
    closed = Signal()

    def __init__(self):
        super().__init__()
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.tokens = QLabel()
        self.tokens.setWordWrap(True)
        self.tokens.setTextFormat(Qt.TextFormat.RichText)
        self.tokens.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QPushButton("×")
        close.setFixedWidth(28)
        close.setToolTip("Close the contrastive saliency")
        close.clicked.connect(self._on_close_clicked)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.tokens, 1)
        self.setToolTip(
            "Contrastive saliency: what made the model choose its token rather than the one you picked "
            "(Ctrl+click or right-click a candidate). Orange: for the chosen token; blue: for the other; "
            "each token's signed share of the total |attribution|."
        )
        self.contrast = None
        self.hide()

    def set_contrast(self, contrast) -> None:
        """A controllers.measures.Contrast, or None to hide the view."""
        self.contrast = contrast
        if contrast is None:
            self.hide()
            return
        values = np.concatenate([contrast.source_values, contrast.prefix_values]).astype(np.float64)
        total = float(np.abs(values).sum()) or 1.0
        ig = contrast.method == "ig"
        method = "integrated gradients" if ig else "gradient × input"
        chosen, other = display_labels([contrast.chosen, contrast.other])
        self.title.setText(
            f"<b>Step {contrast.step + 1}: why “{html.escape(chosen)}” and not “{html.escape(other)}”</b> — "
            f"{method} of log p({html.escape(chosen)}) − log p({html.escape(other)}); "
            f"source {np.abs(contrast.source_values).sum() / total:.0%}, target prefix "
            f"{np.abs(contrast.prefix_values).sum() / total:.0%}"
            + (f"; {html.escape(integration_text(contrast.completeness_gap, contrast.points, contrast.converged))}" if ig else "")
        )
        source = " ".join(
            _chip(t, v / total, v / total) for t, v in zip(display_labels(contrast.source_tokens), contrast.source_values)
        )
        prefix = " ".join(
            _chip(t, v / total, v / total) for t, v in zip(display_labels(contrast.prefix_tokens), contrast.prefix_values)
        )
        self.tokens.setText(f"<p><b>Source:</b> {source}</p><p><b>Target prefix:</b> {prefix}</p>")
        self.show()

    def _on_close_clicked(self) -> None:
        self.set_contrast(None)
        self.closed.emit()
