"""The neuron view of the Explore tab in the window: the head chosen in the tab shown inside with the core's numbers,
the query chosen by a row of the head's attention, the query box or a source piece, the heads table's term shares, the
row saved, and a model without queries and keys said in one line. (The controller alone:
tests/explorer/controllers/test_neuron_controller.py.)"""

from __future__ import annotations

import dataclasses

import numpy as np

from model.kinds import AttentionKind
from model.neuron.tables import read_sentence
from model.neuron.terms import head_terms, neuron_row
from model.nn.registry import build_network
from model.nn.rnn_config import RNNConfig
from tests.conftest import assert_figure
from tests.explorer.gui_helpers import explore_window

SENTENCE = "the cat sees the dog"
WAIT_MS = 60_000  # a bound on waiting for a job, not a timing claim


def test_the_neuron_view_shows_the_chosen_head_and_query_inside(qtbot, open_window, default_bundle, tmp_path):
    window, tab = explore_window(open_window, default_bundle, SENTENCE)
    view, controller = tab.neuron.view, window.controllers.neuron
    tab.kind.setCurrentIndex(tab.kind.findData("cross"))
    tab._on_head_chosen(2, 1)  # a cell of the model grid: layer 3, head 2
    tab.views.setCurrentWidget(view)
    qtbot.waitUntil(lambda: not controller.running and view.row is not None, timeout=WAIT_MS)
    assert not tab.focus.isVisibleTo(tab)  # the view takes the focus view's place
    trace, vectors = read_sentence(default_bundle, SENTENCE)
    row = view.row
    assert (row.kind, row.layer, row.head, row.query) == (AttentionKind.CROSS, 2, 1, 5)  # the last step's row
    expected = neuron_row(vectors, "cross", 2, 1, 5, trace.axis_labels("cross"))
    np.testing.assert_allclose(view.products.values, expected.products, rtol=0, atol=1e-5)
    np.testing.assert_allclose(view.vectors.values[:, 0], expected.query_vector, rtol=0, atol=1e-5)
    np.testing.assert_allclose(view.attention.values, expected.head_weights, rtol=0, atol=1e-6)
    assert view.attention.highlighted_row == 5 and view.vectors.display_key_labels[0] == "q: </s>"
    assert view.title.text() == "<b>cross-attention (encoder-decoder), layer 3, head 2, query 6 “&lt;/s&gt;”</b>"
    assert "(by its terms: " in view.shares.text() and view.query_box.count() == 6
    view.attention.cell_clicked.emit(2, 0)  # a row of the head's attention: its query
    assert view.row.query == 2 and view.query_box.currentIndex() == 2 and view.attention.highlighted_row == 2
    view.query_box.activated.emit(1)
    assert view.row.query == 1
    np.testing.assert_allclose(view.row.weights, trace.matrix("cross")[2, 1, 1], rtol=0, atol=5e-6)
    tab.kind.setCurrentIndex(tab.kind.findData("encoder"))
    tab.source_tokens.token_clicked.emit(3)  # a source piece: the encoder's query
    assert view.row.kind is AttentionKind.ENCODER and view.row.query == 3 and view.row.layer == 2
    written = tab.neuron.save(tmp_path / "neuron.png")
    assert written is not None
    assert_figure(written, dpi=300)
    # The heads table: each head's class by its terms, from the same vectors.
    tab.views.setCurrentWidget(tab.head_table)
    table = tab.head_table
    assert not table.isColumnHidden(8)
    terms = head_terms(vectors.of("encoder"))
    labels = {(r["layer"], r["head"]): r["terms"] for r in table.rows}
    assert labels[(0, 0)] == terms.label(0, 0) and labels[(0, 0)].split()[0] in ("positional", "content", "mixed")


def test_a_model_without_queries_and_keys_is_said_in_one_line(qtbot, open_window, default_bundle):
    vocabulary = default_bundle.config.source_vocab_size
    rnn = build_network(RNNConfig(source_vocab_size=vocabulary, target_vocab_size=vocabulary, d_embed=16, d_hidden=32))
    window, tab = explore_window(open_window, dataclasses.replace(default_bundle, model=rnn.eval()), SENTENCE)
    tab.views.setCurrentWidget(tab.neuron.view)
    view = tab.neuron.view
    assert view.row is None and not view.save_button.isEnabled() and tab.head_table.isColumnHidden(8)
    assert view.status.text().startswith("The neuron view is not available for this family (RNN")
