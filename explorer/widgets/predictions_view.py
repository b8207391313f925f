"""What an encoder-only model's head says about the typed text: the candidates for each mask token (a
masked-LM head), or the probability of each class (a classification head; per piece for a tagger).
Rows of bars drawn as rich text, so the panel reads like the candidates view without being a plot."""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea

from model.inspection.labels import display_labels, display_mask_candidate

BAR_SPACES = 30  # spaces of a probability of 1
SHOWN = 5  # candidates per mask


def _bar(probability: float, colour: str) -> str:
    """A bar of non-breaking spaces on a coloured background, as long as the probability."""
    return f'<span style="background-color:{colour}">{"&nbsp;" * max(1, int(round(BAR_SPACES * float(probability))))}</span>'


def predictions_html(trace) -> str:
    """The panel's text for a trace (empty when the trace holds no head output)."""
    parts = []
    sources = display_labels(trace.source_tokens) if trace.level == "piece" else []
    for position, tokens, probabilities in zip(
        trace.mask_positions, trace.mask_candidate_tokens, trace.mask_candidate_probabilities
    ):
        where = f"piece {int(position) + 1}"
        parts.append(f"<b>{html.escape(where)}</b> — the model's guesses:")
        rows = "".join(
            f"<tr><td>{html.escape(display_mask_candidate(t))}</td><td>{_bar(p, '#f58518' if i == 0 else '#4c78a8')}</td>"
            f"<td align='right'>{p:.3f}</td></tr>"
            for i, (t, p) in enumerate(zip(tokens[:SHOWN], probabilities[:SHOWN]))
        )
        parts.append(f"<table cellspacing='2'>{rows}</table>")
    classes = np.asarray(trace.class_probabilities)
    if classes.ndim == 1 and classes.size:
        parts.append("<b>Class probabilities</b>")
        best = int(classes.argmax())
        rows = "".join(
            f"<tr><td>{'▶ ' if i == best else ''}{html.escape(name)}</td><td>{_bar(p, '#f58518' if i == best else '#4c78a8')}</td>"
            f"<td align='right'>{p:.3f}</td></tr>"
            for i, (name, p) in enumerate(zip(trace.class_names, classes))
        )
        parts.append(f"<table cellspacing='2'>{rows}</table>")
    elif classes.ndim == 2 and classes.size:
        parts.append("<b>Class of each piece</b>")
        rows = "".join(
            f"<tr><td>{html.escape(sources[i] if i < len(sources) else str(i + 1))}</td>"
            f"<td>{html.escape(trace.class_names[int(row.argmax())])}</td><td align='right'>{row.max():.3f}</td></tr>"
            for i, row in enumerate(classes)
        )
        parts.append(f"<table cellspacing='2'>{rows}</table>")
    return "".join(parts)


class PredictionsView(QScrollArea):
    def __init__(self):
        super().__init__()
        self.setWidgetResizable(True)
        self.label = QLabel()
        self.label.setTextFormat(Qt.RichText)
        self.label.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.label.setWordWrap(True)
        self.label.setMargin(6)
        self.setWidget(self.label)
        self.setToolTip("What the model's head says about the text: each mask's most likely pieces, or the class probabilities")
        self.text = ""

    def set_trace(self, trace) -> bool:
        """Show the head output of ``trace``; False (and nothing shown) when it holds none."""
        self.text = predictions_html(trace) if trace is not None else ""
        if trace is not None and not self.text and trace.encoder_self is not None and trace.decoder_self is None:
            self.text = "This model's head gives nothing to show for this text (a masked-LM head needs a mask token)."
        self.label.setText(self.text)
        return bool(self.text)
