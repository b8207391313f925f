"""The Train tab trains every family: the RNN with attention on a translation corpus (its own settings shown),
the encoder-only classifier on the labelled corpora (the only family offered there); and the Explore tab then shows
what each has: the RNN's one cross-attention head, the tagger's encoder self-attention and a tag for every word."""

from __future__ import annotations

from model.kinds import AttentionKind
from model.training.presets import RNN_MODEL, builtin_preset


def test_the_family_follows_the_corpus_and_brings_its_settings(window):
    form = window.training_tab.form
    group = form.model_group
    form.corpus.setCurrentText("toy-fr-tags")
    assert group.current_family() == "classifier"
    enabled = {group.family.itemData(i): group.family.model().item(i).isEnabled() for i in range(group.family.count())}
    assert enabled == {"transformer": False, "rnn": False, "classifier": True}
    assert form.encoder_layers.value() == builtin_preset("toy-fr-tags").model["n_layers"]
    assert not form.decoder_layers.isVisible() or not group.form.isRowVisible(form.decoder_layers)
    request = form.request()
    assert request.family == "classifier" and request.model_options["n_layers"] == form.encoder_layers.value()

    form.corpus.setCurrentText("toy-fr")
    assert group.current_family() == "transformer"
    group.family.setCurrentIndex(group.family.findData("rnn"))
    group.family.activated.emit(group.family.currentIndex())
    assert form.hidden.value() == RNN_MODEL["d_hidden"] and form.attention.currentText() == "bahdanau"
    assert group.form.isRowVisible(form.attention) and not group.form.isRowVisible(form.heads)
    form.attention.setCurrentText("luong-general")
    form.local_window.setValue(3)
    request = form.request()
    assert request.family == "rnn"
    assert request.model_options["attention"] == "luong-general" and request.model_options["local_window"] == 3


def _train_small(qtbot, window, corpus: str, family: str) -> None:
    tab = window.training_tab
    form = tab.form
    form.corpus.setCurrentText(corpus)
    group = form.model_group
    group.family.setCurrentIndex(group.family.findData(family))
    group.family.activated.emit(group.family.currentIndex())
    form.corpus_size.setValue(400)
    boxes = [(form.vocab_size, 100), (form.max_minutes, 0), (form.max_steps, 8), (form.valid_every, 0)]
    if family == "rnn":
        boxes += [(form.d_embed, 16), (form.hidden, 32)]
    else:
        boxes += [(form.encoder_layers, 1), (form.d_model, 32), (form.heads, 2), (form.d_ff, 64)]
    for box, value in boxes:
        box.setValue(value)
    tab.start_button.click()
    qtbot.waitUntil(lambda: not tab.is_training(), timeout=90000)
    qtbot.waitUntil(lambda: window.explore.bundle is not None and window.explore.bundle.family.name == family, timeout=10000)


def test_an_rnn_trained_in_the_window_is_explored_through_its_one_head(qtbot, window):
    """The RNN trained from the form becomes the explored model and the Explore tab offers its one head. (What its
    trace holds: tests/explorer/controllers/test_training_controller.py.)"""
    _train_small(qtbot, window, "copy", "rnn")
    session = window.explore
    window.tabs.setCurrentWidget(window.explore_tab)
    session.translate("a b c")
    tab = window.explore_tab
    trace = session.trace
    assert trace is not None and tab.current_kind() == AttentionKind.CROSS and tab.focus.values.shape == trace.cross[0, 0].shape
    assert tab.head_box.itemText(0) == "head 1" and tab.head_box.findText("head 2") == -1  # its one head


def test_a_tagger_trained_in_the_window_shows_a_tag_for_every_word(qtbot, window):
    _train_small(qtbot, window, "toy-fr-tags", "classifier")
    session = window.explore
    window.tabs.setCurrentWidget(window.explore_tab)
    session.translate("The small cat sleeps.")
    tab = window.explore_tab
    assert tab.predictions.isVisible() and "Tag of each word" in tab.predictions.text
    for word in ("small", "cat", "sleeps"):
        assert f"<td>{word}</td>" in tab.predictions.text
    session.translate("The small cats sleep.")  # an edited sentence: the tags and the attention follow
    assert "<td>cats</td>" in tab.predictions.text
    tab.controls.source.setText("The small dogs sleep.")  # typing: the tags follow without Enter
    tab.controls.source.textEdited.emit("The small dogs sleep.")
    qtbot.waitUntil(lambda: "<td>dogs</td>" in tab.predictions.text, timeout=5000)
    assert session.trace is not None and session.trace.encoder_self is not None
