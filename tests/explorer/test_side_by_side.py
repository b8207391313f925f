"""The Explore tab's "Side by side" view: a second model (here seed 002's RNN) beside the session's Transformer on
the same sentence, each showing its best-aligning head with its AER, stepping together with the decoding
controls, and exported as one figure; a model without cross-attention is refused with a message. What the compare
controller decides: tests/explorer/controllers/test_compare_controller.py."""

from __future__ import annotations

import html

from explorer.controllers.compare import GOLD_NOTE
from model.io import checkpoint
from tests.explorer.gui_helpers import explore_window


def _side_by_side(qtbot, open_window, transformer, rnn):
    window, tab = explore_window(open_window, transformer, "the small cat sees the dog")
    tab.views.setCurrentWidget(tab.compare_view)
    assert "Choose a model to put beside it" in tab.compare_view.note.text()
    assert tab.compare.set_model(rnn)
    # The best heads are measured in workers; each arrives as a panel heading with its AER.
    qtbot.waitUntil(lambda: all(panel.choice.corpus_aer is not None for panel in tab.compare_view.panels), timeout=60000)
    return window, tab


def test_two_models_step_together_with_their_best_heads(qtbot, open_window, toy_fr_bundle, toy_fr_rnn_bundle):
    """The compare controller's panels reach the view as the decoding steps, and the head boxes reach the controller.
    (Which head each side shows, stepping together: tests/explorer/controllers/test_compare_controller.py.)"""
    window, tab = _side_by_side(qtbot, open_window, toy_fr_bundle[0], toy_fr_rnn_bundle[0])
    view, session = tab.compare_view, window.explore
    left, right = view.panels
    assert right.choice.head == 0 and "its one attention" in view.headings[1].text()
    assert "best-aligning head" in view.headings[0].text()
    assert view.heatmaps[0].values.shape[1] == view.heatmaps[1].values.shape[1]  # the same source words
    session.reset()
    assert all(heading.text().endswith("Translation: <i>—</i>") for heading in view.headings)
    session.run_to_end()
    for panel, heading in zip(view.panels, view.headings):  # each model's own words so far, as text
        assert heading.text().endswith(f"Translation: <i>{html.escape(panel.translation())}</i>")
    assert view.panels[0].translation() == (window.explore.stepper.translation() or "—")
    assert view.panels[1].translation() == (tab.compare.stepper.translation() or "—")
    session.step_back()
    assert [panel.trace.n_steps for panel in view.panels] == [session.current_step] * 2
    # Any head can be shown instead of the best-aligning one, and back.
    box = view.head_boxes[0]
    index = [box.itemData(i) for i in range(box.count())].index((0, 1))
    assert box.itemText(index) == "layer 1, head 2"
    box.setCurrentIndex(index)
    box.activated.emit(index)
    assert (view.panels[0].choice.layer, view.panels[0].choice.head) == (0, 1) and "layer 1, head 2" in view.headings[0].text()
    box.activated.emit(0)
    assert view.panels[0].choice == left.choice
    assert [view.head_boxes[1].itemText(i) for i in range(view.head_boxes[1].count())] == ["best-aligning head", "layer 1, head 1"]


def test_a_toy_fr_sentence_brings_each_side_s_aer_and_the_pair_exports(
    qtbot, open_window, toy_fr_bundle, toy_fr_rnn_bundle, tmp_path
):
    """The fresh-sentence button reaches both controllers and the AER reaches the headings; the pair exports."""
    window, tab = _side_by_side(qtbot, open_window, toy_fr_bundle[0], toy_fr_rnn_bundle[0])
    view = tab.compare_view
    view.fresh.click()
    sentence = tab.controls.source.text()
    assert window.explore.text == sentence and tab.compare.gold(sentence) is not None
    assert "on this sentence" in view.headings[0].text() and view.note.text() == GOLD_NOTE
    for suffix in ("png", "svg", "pdf"):
        written = tab.exports.export_pair(tmp_path / f"pair.{suffix}")
        assert written is not None and written.stat().st_size > 1000
    svg = (tmp_path / "pair.svg").read_text(encoding="utf-8")
    assert "Cross-attention side by side" in svg and sentence.split()[1] in svg


def test_a_model_without_cross_attention_is_refused_and_files_open_in_a_worker(
    qtbot, open_window, toy_fr_bundle, toy_fr_rnn_bundle, tmp_path
):
    """The compare controller's messages reach the window's, a file opened reaches the view, "(none)" clears it.
    (What is refused and opened: tests/explorer/controllers/test_compare_controller.py.)"""
    from model.io.bundle import ModelBundle
    from model.nn.classifier import ClassifierConfig, EncoderClassifier

    tokenizer = toy_fr_bundle[0].source_tokenizer
    tagger = ModelBundle(EncoderClassifier(ClassifierConfig(vocab_size=tokenizer.vocab_size)), tokenizer, tokenizer)
    window, tab = explore_window(open_window, toy_fr_bundle[0], "the cat sleeps")
    messages = []
    window.explore.message.connect(messages.append)
    assert not tab.compare.set_model(tagger)
    assert messages == ["unknown corpus has no cross-attention to compare (it is encoder-only)."]
    assert window.statusBar().currentMessage() == messages[0]
    path = checkpoint.save(toy_fr_rnn_bundle[0], tmp_path / "rnn.safetensors")
    tab.compare.open(str(path))
    qtbot.waitUntil(lambda: len(tab.compare_view.panels) == 2, timeout=30000)
    assert tab.compare_view.panels[1].name == "rnn"
    tab.compare.open(str(tmp_path / "missing.safetensors"))
    qtbot.waitUntil(lambda: any("Could not open" in text for text in messages), timeout=30000)
    assert len(tab.compare_view.panels) == 2  # the model beside it is still there
    tab.compare_view.partner.setCurrentIndex(0)
    tab.compare_view.partner.activated.emit(0)  # "(none)"
    assert tab.compare_view.panels == [] and not tab.compare_view.export_button.isEnabled()
    assert tab.compare.bundle is None and tab.compare_view.note_text == tab.compare.unavailable()
