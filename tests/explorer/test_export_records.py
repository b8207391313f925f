"""The window's exports carry the same record as the command line's for the same view (issue 44): the Export menu's
file names the ``export`` command of the view shown, and that command, run, writes a file whose record is the same
and which ``reproduce`` draws again the same; what the command line cannot draw yet (a measure, forced tokens) is
named in the record, and ``reproduce`` says so in one line."""

from __future__ import annotations

from model.cli.commands import main
from model.io import checkpoint
from model.io.shipped import resolve_model
from model.kinds import AttentionKind
from model.provenance.embed import read_record
from tests.explorer.gui_helpers import explore_window

SENTENCE = "the black cat sees the small dog"


def test_the_windows_export_and_the_commands_carry_the_same_record(qtbot, open_window, tmp_path, capsys):
    path = str(resolve_model("default"))
    window, tab = explore_window(open_window, checkpoint.load(path), SENTENCE)
    tab.explore.choose_view(kind=AttentionKind.CROSS, layer=2, head=1)
    tab.refresh()
    written = tab.export_view("focus", tmp_path / "window.svg")
    record = read_record(written)
    assert record.command[:5] == ["export", "--model", path, "--text", SENTENCE]
    assert {"--layer", "3", "--head", "2"} <= set(record.command) and "not on the command line" not in record.view
    assert main([*record.command, "--out", str(tmp_path / "cli.svg")]) == 0
    assert read_record(tmp_path / "cli.svg").to_json() == record.to_json()
    assert (tmp_path / "cli.svg").read_bytes() == written.read_bytes()  # the same file, not only the same record
    capsys.readouterr()
    assert main(["reproduce", str(written)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "reproduced: window.svg is drawn again the same"
    tab.measure_box.setCurrentIndex(tab.measure_box.findData("alti"))  # a contribution measure, not the weights
    qtbot.waitUntil(lambda: not window.controllers.measures.running and tab.view_trace is not None, timeout=60_000)
    other = tab.export_view("focus", tmp_path / "measure.png")
    assert "not on the command line" in read_record(other).view
    assert main(["reproduce", str(other)]) == 1
    assert "shows what the command line cannot draw yet" in capsys.readouterr().err


def test_the_interventions_saves_carry_the_lens_and_patch_commands_records(qtbot, open_window, tmp_path, capsys):
    path = str(resolve_model("default"))
    window, tab = explore_window(open_window, checkpoint.load(path), SENTENCE)
    view = tab.interventions.view
    tab.views.setCurrentWidget(view)
    qtbot.waitUntil(lambda: not window.controllers.interventions.running and "logit lens" in view.results, timeout=60_000)
    for tool, name in (("logit lens", "lens.svg"), ("DecoderLens", "decoder.csv"), ("logit attribution", "dla.svg")):
        written = tab.interventions.save(tool, tmp_path / name)
        record = read_record(written)
        assert record.command[:5] == ["lens", "--model", path, "--text", SENTENCE] and "not on the command line" not in record.view
        assert main([*record.command, "--out", str(tmp_path / f"cli-{name}")]) == 0
        assert read_record(tmp_path / f"cli-{name}").to_json() == record.to_json(), tool
    view.show_tool("patching")
    view.patching.corrupted.setText("the cats see the small dog")  # the number pair of SENTENCE's first words
    view.patching.clean.setText("the cat sees the small dog")
    view.patching.corrupted.editingFinished.emit()
    controller = window.controllers.interventions
    qtbot.waitUntil(
        lambda: not controller.running and getattr(view.results.get("patching"), "method", "") == "exact", timeout=60_000
    )
    written = tab.interventions.save("patching", tmp_path / "patch.csv")
    record = read_record(written)
    assert record.command[:3] == ["patch", "--model", path]
    assert main([*record.command, "--out", str(tmp_path / "cli-patch.csv")]) == 0
    assert read_record(tmp_path / "cli-patch.csv").to_json() == record.to_json()
    assert (tmp_path / "cli-patch.csv").read_bytes() == written.read_bytes()
    capsys.readouterr()


def test_the_neuron_views_save_carries_the_neuron_commands_record(qtbot, open_window, tmp_path):
    path = str(resolve_model("default"))
    window, tab = explore_window(open_window, checkpoint.load(path), SENTENCE)
    tab.views.setCurrentWidget(tab.neuron.view)
    neuron = window.controllers.neuron
    qtbot.waitUntil(lambda: neuron.row is not None and not neuron.running, timeout=60_000)
    written = tab.neuron.save(tmp_path / "neuron.svg")
    record = read_record(written)
    assert record.command[:5] == ["neuron", "--model", path, "--text", SENTENCE] and "--query" in record.command
    assert main([*record.command, "--out", str(tmp_path / "cli.svg")]) == 0
    assert read_record(tmp_path / "cli.svg").to_json() == record.to_json()
    assert (tmp_path / "cli.svg").read_bytes() == written.read_bytes()


def test_the_positional_tabs_export_carries_the_export_commands_record(qtbot, open_window, tmp_path):
    path = str(resolve_model("default"))
    window, _tab = explore_window(open_window, checkpoint.load(path), SENTENCE)
    positional = window.positional_tab
    qtbot.waitUntil(lambda: positional.report is not None, timeout=60_000)
    for name in ("positional.svg", "positional.csv"):
        written = positional.export_to(tmp_path / name)
        record = read_record(written)
        assert record.command[:5] == ["export", "--model", path, "--view", "positional"]
        assert main([*record.command, "--out", str(tmp_path / f"cli-{name}")]) == 0
        assert read_record(tmp_path / f"cli-{name}").to_json() == record.to_json()
        assert (tmp_path / f"cli-{name}").read_bytes() == written.read_bytes()
