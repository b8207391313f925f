"""Pretrained-layout models in the window: each family opens (by folder, through open_model as drag-and-drop and
the command line's PATH do), its views show the kinds it has and nothing raises; an encoder-only model's head
output is shown; T5's relative bias fills the positional tab; the info panel; a pretrained model is not saved."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')


@pytest.fixture(autouse=True)
def empty_hub_cache(tmp_path, monkeypatch):
    """An empty hub cache of the test's own (never the user's, never the network)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


SHAPE_KINDS = {
    "t5": ["encoder", "decoder", "cross"],
    "bart": ["encoder", "decoder", "cross"],
    "marian": ["encoder", "decoder", "cross"],
    "gpt2": ["decoder"],
    "bert-mlm": ["encoder"],
    "bert-classifier": ["encoder"],
}


def opened(qtbot, window, folder: str):
    window.open_model(folder)
    qtbot.waitUntil(lambda: window.explore.bundle is not None and window.explore.bundle.path is not None, timeout=30000)
    qtbot.waitUntil(lambda: window.explore.trace is not None, timeout=30000)
    return window.explore.bundle


def test_every_family_opens_and_its_views_show_its_kinds(qtbot, window, tiny_folders):
    tab = window.explore_tab
    for family in ("t5", "gpt2", "bert-mlm", "bert-classifier", "bart", "marian"):
        window.explore.set_model(None)
        bundle = opened(qtbot, window, tiny_folders[family])
        assert bundle.config.model_type in family.replace("-mlm", "").replace("-classifier", "")
        text = {"bert-mlm": "the small [MASK] sees the dog"}.get(family, "the small cat sees the dog")
        window.explore.translate(text)
        trace = window.explore.trace
        kinds = [tab.kind.itemData(i) for i in range(tab.kind.count())]
        assert [str(kind) for kind in kinds] == SHAPE_KINDS[family], family
        for index in range(tab.views.count()):  # grid, lines, heads: each draws what the trace holds
            tab.views.setCurrentIndex(index)
            qtbot.wait(10)
        assert [str(kind) for kind in trace.kinds] == SHAPE_KINDS[family]
        assert family in window.model_label.text() or bundle.name in window.model_label.text()
        if family.startswith("bert"):
            assert tab.predictions.isVisibleTo(window) and not tab.candidates.isVisibleTo(window)
            assert ("guesses" if family == "bert-mlm" else "Class probabilities") in tab.predictions.text
        else:
            assert tab.candidates.isVisibleTo(window) and not tab.predictions.isVisibleTo(window)
            assert trace.n_steps > 0
        tab.word_level.setChecked(True)
        tab.word_level.setChecked(False)


def test_relative_bias_in_the_positional_tab_and_the_info_panel(qtbot, window, tiny_folders, tmp_path):
    bundle = opened(qtbot, window, tiny_folders["t5"])
    window.tabs.setCurrentIndex(1)
    qtbot.waitUntil(lambda: window.positional_tab.report is not None, timeout=20000)
    report = window.positional_tab.report
    assert report.kind == "relative" and report.table.shape[1] == bundle.config.n_heads
    assert "relative" in window.positional_tab.summary.text() or "bias" in window.positional_tab.summary.text()
    written = window.positional_tab.export_to(tmp_path / "bias.png")
    assert written.stat().st_size > 1000
    window._on_info_requested()
    rows = dict(window.info_dialog.rows)
    assert rows["Attention"].startswith("eager") and rows["Parameters"].replace(",", "").isdigit()
    window.info_dialog.close()
    assert not window.save_action.isEnabled()
    assert window._on_save_requested() is False
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=5000)
    assert "stays in its folder" in window.error_box.windowTitle() + window.error_box.text()


def test_a_missing_id_keeps_the_open_model_and_says_how_to_fetch_it(qtbot, window, tiny_folders):
    bundle = opened(qtbot, window, tiny_folders["gpt2"])
    window.error_box = None
    window.open_model("nobody-here/no-such-model")
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=20000)
    assert "hf download nobody-here/no-such-model" in window.error_box.text()
    assert window.explore.bundle is bundle


def test_the_open_pretrained_dialog_lists_the_cache(qtbot, window, tiny_folders, tmp_path, monkeypatch):
    import shutil

    from explorer.pretrained_dialog import PretrainedDialog

    snapshot = tmp_path / "hub" / "models--org--tiny-gpt2" / "snapshots" / "abc"
    shutil.copytree(tiny_folders["gpt2"], snapshot)
    dialog = PretrainedDialog(window)
    assert dialog.list.count() == 1 and "org/tiny-gpt2" in dialog.list.item(0).text()
    dialog.list.setCurrentRow(0)
    dialog.accept()
    assert dialog.chosen == "org/tiny-gpt2"
    window.open_model(dialog.chosen)
    qtbot.waitUntil(lambda: window.explore.bundle is not None and window.explore.bundle.name == "org/tiny-gpt2", timeout=30000)


def test_t5s_bias_is_drawn_as_heads_from_1_over_distance_without_a_rotation_panel(qtbot, window, tiny_folders, copy_bundle):
    """After a model with a sinusoidal table, T5's relative bias: the dimension list written for the table is
    replaced by heads 1-4 (no red "Ignored"), the colour bars name the bias, the curves are heads over key − query,
    heads are numbered from 1 and there is no rotation to show."""
    window.explore.set_model(copy_bundle[0])
    window.tabs.setCurrentIndex(1)
    tab = window.positional_tab
    qtbot.waitUntil(lambda: tab.report is not None and tab.report.kind == "sinusoidal", timeout=20000)
    tab.dimensions.setText("0, 1, 8, 9, 31")
    tab.dimensions.editingFinished.emit()
    assert tab.curves.legend_names() == ["dim 0", "dim 1", "dim 8", "dim 9", "dim 31"]
    bundle = opened(qtbot, window, tiny_folders["t5"])
    qtbot.waitUntil(lambda: tab.report.kind == "relative", timeout=20000)
    n_heads = bundle.config.n_heads
    assert tab.dimensions.text() == ", ".join(str(h) for h in range(1, min(n_heads, 4) + 1))
    assert tab.dimension_problems == [] and tab.dimensions_error.isHidden()
    assert tab.dimensions_label.text() == "Heads:"
    assert tab.curves.legend_names() == [f"head {h}" for h in range(1, min(n_heads, 4) + 1)]
    assert tab.curves.plot_item.getAxis("bottom").labelText == "key − query"
    assert tab.table_view.key_labels == [str(h) for h in range(1, n_heads + 1)]
    assert tab.table_view._value_label == tab.similarity_view._value_label == "bias added to the attention logit"
    assert not tab.rotation.isVisibleTo(window)
    tab.dimensions.setText(f"1, {n_heads + 1}")
    tab.dimensions.editingFinished.emit()  # a list typed for this model is flagged, not replaced
    assert tab.dimension_problems == [f"{n_heads + 1} is out of range 1..{n_heads}"]
    window.explore.set_model(copy_bundle[0])
    assert tab.report.kind == "sinusoidal" and tab.rotation.isVisibleTo(window)
    assert tab.table_view._value_label == "encoding value" and tab.dimensions_label.text() == "Dimensions:"
