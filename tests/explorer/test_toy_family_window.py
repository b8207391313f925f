"""A family defined only in the tests (tests/toy_family.py: one cross-attention layer, no positions), registered before
the window opens, is offered by the Train tab, trains there for a few steps and becomes the explored model; then every
view of the Explore tab and every tool (measures, the AER table, head importance, Interventions, the neuron view, the
report card, the positional tab) either works with it or says in one line why it cannot — no internal error is logged
and no error box opens. No project file names the family."""

from __future__ import annotations

import logging

import pytest

from model.kinds import AttentionKind
from tests.explorer.gui_helpers import shut
from tests.toy_family import TOY_NAME, toy_family_registered

SENTENCE = "le chat voit le chien"


@pytest.fixture
def toy_window(open_window, caplog):
    """A window opened with the toy family registered (the Train form lists the families it knows when it is built),
    and shut while the family is still known."""
    caplog.set_level(logging.WARNING, logger="explorer")
    with toy_family_registered():
        window = open_window()
        yield window
        problems = shut(window)
    assert not problems and not _errors(caplog)


def _errors(caplog) -> list[str]:
    return [f"{record.name}: {record.getMessage()}" for record in caplog.records if record.levelno >= logging.ERROR]


def _train_the_toy(qtbot, window) -> None:
    tab = window.training_tab
    form, group = tab.form, tab.form.model_group
    form.corpus.setCurrentText("toy-fr")
    index = group.family.findData(TOY_NAME)
    assert index >= 0 and group.family.model().item(index).isEnabled()  # offered: it learns translation
    group.family.setCurrentIndex(index)
    group.family.activated.emit(index)
    assert group.current_family() == TOY_NAME
    assert group.form.isRowVisible(form.d_model) and not group.form.isRowVisible(form.heads)  # its one option
    form.corpus_size.setValue(400)
    for box, value in [(form.vocab_size, 200), (form.max_minutes, 0), (form.max_steps, 6), (form.valid_every, 0)]:
        box.setValue(value)
    form.d_model.setValue(32)
    request = form.request()
    assert request.family == TOY_NAME and request.model_options == {"d_model": 32}
    tab.start_button.click()
    qtbot.waitUntil(lambda: not tab.is_training(), timeout=120000)
    qtbot.waitUntil(lambda: window.explore.bundle is not None and window.explore.bundle.family.name == TOY_NAME, timeout=10000)


VIEWS = {"Model grid", "Lines", "Heads", "Alignment (AER)", "Head importance", "Side by side", "Interventions", "Neuron view",
         "Report card"}  # fmt: skip


def _one_line(text: str) -> bool:
    return bool(text) and "\n" not in text


def test_the_toy_family_trains_in_the_train_tab_and_every_view_and_tool_works_or_says_why(qtbot, toy_window, caplog, tmp_path):
    window = toy_window
    messages: list[str] = []
    window.explore.message.connect(messages.append)
    _train_the_toy(qtbot, window)
    assert window.explore.bundle.config.d_model == 32 and window.explore.bundle.history["steps"][-1][0] == 6
    path = tmp_path / "toy.model"
    assert window.save_model(str(path))  # saved, then opened again from its file
    window.open_model(str(path))
    qtbot.waitUntil(lambda: window.explore.bundle is not None and window.explore.bundle.path == str(path), timeout=30000)
    assert window.explore.bundle.family.name == TOY_NAME

    window.tabs.setCurrentWidget(window.explore_tab)
    tab = window.explore_tab
    window.explore.translate(SENTENCE)
    trace = window.explore.trace
    assert trace is not None and trace.kinds == (AttentionKind.CROSS,) and trace.n_steps > 0
    assert [tab.kind.itemData(i) for i in range(tab.kind.count())] == [AttentionKind.CROSS]  # its only kind
    titles = set()
    for index in range(tab.views.count()):  # every view drawn with it
        tab.views.setCurrentIndex(index)
        qtbot.wait(20)
        titles.add(tab.views.tabText(index))
    assert VIEWS <= titles
    assert tab.head_table.rowCount() == 2 and tab.focus.values.shape == trace.cross[0].mean(0).shape  # 1 layer, 2 heads

    # The tools its family cannot serve say why, in one line.
    interventions, neuron = tab.interventions.view.status.text(), tab.neuron.view.status.text()
    assert _one_line(interventions) and "model (toy cross-attention model) has" in interventions
    assert _one_line(neuron) and "it has no queries and keys" in neuron
    for name, reason in tab.measure_box.reasons.items():  # measures beyond attention: each refused with its reason
        tab.measure_box.set_measure(name)
        qtbot.wait(20)
        assert reason == "" or tab.hint.text() == f"{reason}: showing the attention weights.", name
    tab.measure_box.set_measure("attention")
    readings = tab.readings
    # The views it does not serve are greyed out, each with the capability table's reason as its tooltip.
    for view, reason in (
        (readings.importance_view, "a classifier's labels), not on this model"),
        (tab.interventions.view, "model (toy cross-attention model) has"),
        (tab.neuron.view, "it has no queries and keys"),
    ):
        index = tab.views.indexOf(view)
        assert not tab.views.isTabEnabled(index) and reason in tab.views.tabToolTip(index), tab.views.tabText(index)
    assert tab.views.isTabEnabled(tab.views.indexOf(tab.report_card.view))  # it grades any cross-attention

    # The tools that serve any cross-attention work: the AER table and the report card, each on a few toy-fr pairs.
    alignment, card = readings.alignment_view, tab.report_card.view
    tab.views.setCurrentWidget(alignment)
    alignment.pairs.setValue(alignment.pairs.minimum())
    alignment.score_button.click()
    qtbot.waitUntil(lambda: alignment.table_shown is not None, timeout=60000)
    assert "Best cross-attention head: layer 1" in alignment.status.text()
    tab.views.setCurrentWidget(card)
    card.sentences.setValue(card.sentences.minimum())
    card.sanity_pairs.setValue(card.sanity_pairs.minimum())
    card.grade_button.click()
    qtbot.waitUntil(lambda: card.card is not None, timeout=120000)
    assert card.note.text().startswith("toy: ") and "held-out pairs of toy-fr" in card.note.text()  # the model is toy.model

    window.tabs.setCurrentIndex(1)  # the positional tab: no table to show, and why
    qtbot.waitUntil(lambda: "no positional table" in window.positional_tab.summary.text(), timeout=10000)
    window.tabs.setCurrentWidget(window.explore_tab)
    assert tab.export_all_to(tmp_path / "all")  # its views exported
    assert window.error_box is None and not _errors(caplog)
