"""What an encoder-only model's head says about the typed text: the candidates for each mask token (a
masked-LM head), or the probability of each class (a classification head; per piece for a tagger).
Rows of bars drawn as rich text, so the panel reads like the candidates view without being a plot."""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtWidgets import QFrame, QTextBrowser

from model.data.token_labels import display_mask_candidate, is_special

BAR_SPACES = 30  # spaces of a probability of 1
SHOWN = 5  # candidates per mask


def _bar(probability: float, colour: str) -> str:
    """A bar of non-breaking spaces on a coloured background, as long as the probability."""
    return f'<span style="background-color:{colour}">{"&nbsp;" * max(1, int(round(BAR_SPACES * float(probability))))}</span>'


def predictions_html(trace) -> str:
    """The panel's text for a trace (empty when the trace holds no head output)."""
    parts = []
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
        parts.append("<b>Tag of each word</b> (read at its first piece), with the runner-up:")
        parts.append(f"<table cellspacing='2'>{_tag_rows(trace)}</table>")
    return "".join(parts)


def _tag_rows(trace) -> str:
    """One row per word of a tagger's text: the word, its best tag's bar and probability, the runner-up."""
    words = trace.source_tokens if trace.level == "word" else trace.source_words()[1]
    rows = []
    for word, probabilities in zip(words, trace.word_classes()):
        if is_special(word):
            continue
        order = np.argsort(probabilities)[::-1]
        best, second = int(order[0]), int(order[min(1, len(order) - 1)])
        rows.append(
            f"<tr><td>{html.escape(word)}</td><td><b>{html.escape(trace.class_names[best])}</b></td>"
            f"<td>{_bar(probabilities[best], '#f58518')}</td><td align='right'>{probabilities[best]:.3f}</td>"
            f"<td style='color:#666'>&nbsp;{html.escape(trace.class_names[second])} {probabilities[second]:.3f}</td></tr>"
        )
    return "".join(rows)


class PredictionsView(QTextBrowser):
    """The rows as a read-only rich-text document: it lays itself out to its width and scrolls in both directions
    (a rich-text label in a scroll area could keep a width its viewport had lost to a scroll bar, its last column cut
    with no sign: the long run of benchmarks/window_states.py found it, the tagger's rows at 1139×667)."""

    def __init__(self):
        super().__init__()
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.viewport().setAutoFillBackground(False)  # the window's background, as the candidates view's
        self.document().setDocumentMargin(6)
        self.setToolTip("What the model's head says about the text: each mask's most likely pieces, or the class probabilities")
        self.text = ""

    def set_trace(self, trace) -> bool:
        """Show the head output of ``trace``; False (and nothing shown) when it holds none."""
        self.text = predictions_html(trace) if trace is not None else ""
        if trace is not None and not self.text and trace.encoder_self is not None and trace.decoder_self is None:
            self.text = "This model's head gives nothing to show for this text (a masked-LM head needs a mask token)."
        self.setHtml(self.text)
        return bool(self.text)
