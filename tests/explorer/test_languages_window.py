"""The Explore tab's language boxes (issue 41): shown for a multilingual model (a tiny NLLB-layout folder built here),
with its codes and the current pair; choosing a target language decodes the sentence again, its code forced first
(given in the trace); hidden for a model without languages."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def nllb_folder(tmp_path_factory) -> str:
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.tiny import build  # deferred: the hf extra may be absent (skipped above)

    return str(build("nllb", tmp_path_factory.mktemp("nllb") / "nllb"))


def test_the_language_boxes_choose_what_is_decoded(qtbot, open_window, nllb_folder, copy_bundle):
    from model.io.models import open_model  # deferred: the fixture above skips without the hf extra

    window = open_window()
    controls, explore = window.explore_tab.controls, window.explore
    assert not controls.source_language.isVisibleTo(window)  # no model: no languages
    window.explore.set_model(open_model(nllb_folder))
    explore.translate("The house is small .")
    qtbot.waitUntil(lambda: explore.trace is not None, timeout=30000)
    boxes = controls.source_language, controls.target_language
    assert all(box.isVisibleTo(window) for box in boxes)
    assert [boxes[1].itemText(i) for i in range(boxes[1].count())] == ["eng_Latn", "fra_Latn", "deu_Latn"]
    assert (boxes[0].currentText(), boxes[1].currentText()) == ("eng_Latn", "fra_Latn")
    messages: list[str] = []
    explore.message.connect(messages.append)
    boxes[1].setCurrentIndex(2)
    boxes[1].activated.emit(2)  # the user picks German
    german = explore.bundle.target_tokenizer.tokenizer.convert_tokens_to_ids("deu_Latn")
    qtbot.waitUntil(lambda: explore.trace is not None and explore.trace.chosen_ids[:1].tolist() == [german], timeout=30000)
    assert explore.trace.n_given == 1 and bool(explore.trace.forced[0]) and explore.bundle.target_language == "deu_Latn"
    assert any("writing deu_Latn" in message for message in messages)
    window.explore.set_model(copy_bundle[0])
    assert not any(box.isVisibleTo(window) for box in boxes)
