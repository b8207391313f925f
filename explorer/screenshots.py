"""Make the README's screenshots by driving the real app: Explore (model grid + focus heatmap, and
the lines view), the positional-encoding tab, and the Train tab mid-training; with ``--families``, the
side-by-side view (the RNN with Bahdanau attention beside the Transformer) and the tagger instead; with
``--measures``, each contribution measure in the focus view, the importance grid with a head knocked out, the
pruning curve and the AER table of every measure; with ``--timeline``, the default model's timeline: an early
snapshot, its difference from the final model, and the curves over training; with ``--interventions``, the
Interventions view: the logit lens and activation patching of a number minimal pair; with ``--neuron``, the neuron view
of the reverse model's decoder self-attention, layer 1, head 3 (positional by its terms).
Interventions view: the logit lens and activation patching of a number minimal pair; with ``--corpus``, the Corpus
tab over an index of toy-fr sentences (built first, or ``--index FOLDER``): a source token's nearest tokens, a
decoder head's sentences and the query-key maps of decoder layer 1.

    python -m explorer.screenshots --out resources/screenshots [--model default] [--train-seconds 40]
    python -m explorer.screenshots --out resources/screenshots --families
    python -m explorer.screenshots --out resources/screenshots --measures
    python -m explorer.screenshots --out resources/screenshots --timeline
    python -m explorer.screenshots --out resources/screenshots --interventions
    python -m explorer.screenshots --out resources/screenshots --neuron --model reverse --text "t p n b e h j b"
    python -m explorer.screenshots --out resources/screenshots --corpus [--index FOLDER]

Runs under any Qt platform: a real or virtual X server (``xvfb-run``), or ``QT_QPA_PLATFORM=offscreen``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app import make_application
from explorer.main_window import MainWindow
from model.attribution.measures import CONTRIBUTIONS, MEASURES
from model.kinds import AttentionKind
from model.nn.masking import Head

SENTENCE = "the black cat sees the small dog"
ONSET_STEP = 232  # the shipped default's layer-3 cross heads are alignment-like from this snapshot on (timeline)


def _wait(app, seconds: float, until=lambda: False) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until():
        app.processEvents()
        time.sleep(0.02)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="resources/screenshots")
    parser.add_argument("--model", default="default")
    parser.add_argument("--text", default=SENTENCE)
    parser.add_argument("--size", default="1500x950")
    parser.add_argument("--train-seconds", type=float, default=80.0)
    parser.add_argument("--families", action="store_true", help="the side-by-side and tagger screenshots only")
    parser.add_argument("--measures", action="store_true", help="the measures, importance and AER screenshots only")
    parser.add_argument("--timeline", action="store_true", help="the timeline screenshots only (the model's snapshots)")
    parser.add_argument("--interventions", action="store_true", help="the Interventions view's screenshots only")
    parser.add_argument("--neuron", action="store_true", help="the neuron view's screenshot only (of --model reverse)")
    parser.add_argument("--corpus", action="store_true", help="the Corpus tab's screenshots only")
    parser.add_argument("--index", help="--corpus: an index of the model to show (default: 2,000 toy-fr sentences, built)")
    args = parser.parse_args(argv)
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    app = make_application()
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "screenshots.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings)
    window.ask_to_stop_training = lambda: QMessageBox.StandardButton.Yes  # type: ignore[method-assign]
    width, height = (int(v) for v in args.size.split("x"))
    window.resize(width, height)
    window.show()
    window.open_model(args.model)
    _wait(app, 30, lambda: window.explore.bundle is not None)
    if window.explore.bundle is None:
        print(f"could not open model {args.model!r}", file=sys.stderr)
        return 1
    tab = window.explore_tab
    tab.controls.source.setText(args.text)
    tab.controls.translate_button.click()
    tab.kind.setCurrentIndex(tab.kind.findData("cross"))
    _wait(app, 0.5)

    def shot(name: str) -> None:
        _wait(app, 0.3)
        path = out / f"{name}.png"
        window.grab().save(str(path))
        print(f"wrote {path}")

    window.tabs.setCurrentWidget(tab)
    if args.families:
        return family_shots(app, window, shot)
    if args.measures:
        return measure_shots(app, window, shot)
    if args.timeline:
        return timeline_shots(app, window, shot)
    if args.interventions:
        return intervention_shots(app, window, shot)
    if args.neuron:
        return neuron_shot(app, window, shot)
    if args.corpus:
        return corpus_shots(app, window, shot, args.index)
    tab.views.setCurrentWidget(tab.grid)
    report_layer = window.explore.bundle.config.n_decoder_layers - 1
    tab.layer_box.setValue(report_layer + 1)
    shot("explore-grid")
    tab.views.setCurrentWidget(tab.lines)
    shot("explore-lines")
    window.tabs.setCurrentWidget(window.positional_tab)
    shot("positional-encoding")
    window.tabs.setCurrentWidget(window.training_tab)
    form = window.training_tab.form
    form.corpus.setCurrentText("toy-fr")  # its preset, as a user would start it
    _wait(app, 2)
    shot("training-presets")
    window.training_tab.start_button.click()
    _wait(app, args.train_seconds)
    shot("training")
    window.close()
    return 0


def family_shots(app, window, shot) -> int:
    """The RNN with Bahdanau attention beside the Transformer on a fresh toy-fr sentence, then the tagger with a
    sentence typed."""
    tab = window.explore_tab
    tab.views.setCurrentWidget(tab.compare_view)
    tab.compare.open("rnn-bahdanau")
    _wait(app, 30, lambda: len(tab.compare_view.panels) == 2)
    tab.compare_view.partner.setCurrentText("rnn-bahdanau")
    tab.compare_view.fresh.click()
    _wait(app, 30, lambda: all(p.choice.corpus_aer is not None for p in tab.compare_view.panels))
    window.explore.run_to_end()
    shot("side-by-side")
    window.open_model("tagger")
    _wait(app, 30, lambda: window.explore.bundle is not None and window.explore.bundle.family.capabilities.labels)
    tab.controls.source.setText("The old farmers that her dog follows do not cook the fish.")
    tab.controls.translate_button.click()
    tab.views.setCurrentWidget(tab.grid)
    shot("tagger")
    window.close()
    return 0


def measure_shots(app, window, shot) -> int:
    """Each measure in the focus view (cross-attention where it has it, at the fourth step), then head importance
    on the grid with the best alignment head knocked out, the pruning curve, and the AER table of every measure."""

    tab = window.explore_tab
    tab.views.setCurrentWidget(tab.grid)
    window.explore.go_to_step(4)
    for name in CONTRIBUTIONS:
        kind = MEASURES[name].kinds[-1]
        tab.kind.setCurrentIndex(tab.kind.findData(kind))
        tab.measure_box.set_measure(name)
        _wait(app, 120, lambda name=name: tab.shown is not None and tab.shown.measure == name and not tab.readings.status.text())
        tab.layer_box.setValue(tab.layer_box.maximum())
        shot(f"measure-{name}")
    tab.measure_box.set_measure("attention")
    tab.kind.setCurrentIndex(tab.kind.findData(AttentionKind.CROSS))
    importance = tab.readings.importance
    importance.compute(100)
    _wait(app, 600, lambda: importance.curve is not None)
    # the best-aligning head: layer 3, head 1, AER 0.104 on 200 toy-fr test pairs, seed 0 (evaluate's default)
    window.explore.toggle_head(Head(AttentionKind.CROSS, 2, 0))
    tab.views.setCurrentWidget(tab.grid)
    shot("importance-grid-knocked-out")
    tab.views.setCurrentWidget(tab.readings.importance_view)
    shot("pruning-curve")
    window.explore.restore_heads()
    tab.views.setCurrentWidget(tab.readings.alignment_view)
    tab.readings.alignment.compute()  # the app's default pairs and seed: the best head evaluate reports
    _wait(app, 900, lambda: tab.readings.alignment.table is not None)
    shot("alignment-table")
    window.close()
    return 0


def timeline_shots(app, window, shot) -> int:
    """The Over training bar on the grid at the snapshot where layer 3's cross heads became alignment-like, that
    snapshot minus the one before it, and the curves over training with their phase changes."""
    tab, timeline = window.explore_tab, window.controllers.timeline
    bar = tab.over_training.bar
    _wait(app, 30, lambda: bar.isVisible() and not timeline.running)
    if not bar.isVisible():
        print("the model has no timeline", file=sys.stderr)
        return 1
    tab.views.setCurrentWidget(tab.grid)
    tab.layer_box.setValue(tab.layer_box.maximum())
    tab.grid.cell_clicked.emit(tab.layer_box.maximum() - 1, 0)  # the best-aligning head: layer 3, head 1
    onset = next(i for i in range(timeline.count) if timeline.source.snapshots[i].step >= ONSET_STEP)
    bar.slider.setValue(onset)
    _wait(app, 30, lambda: not timeline.running)
    shot("timeline-grid")
    timeline.compare_with(onset - 1)
    _wait(app, 30, lambda: not timeline.running)
    shot("timeline-difference")
    timeline.compare_with(None)
    curves, view = window.controllers.curves, tab.over_training.curves_view
    tab.views.setCurrentWidget(view)
    view.compute_button.click()
    _wait(app, 300, lambda: curves.curves is not None and not curves.running)
    shot("timeline-curves")
    window.close()
    return 0


def intervention_shots(app, window, shot) -> int:
    """The logit lens of the sentence at its third step, then the number pair patched: the encoder's residual."""
    tab, interventions = window.explore_tab, window.controllers.interventions
    view = tab.interventions.view
    tab.views.setCurrentWidget(view)
    _wait(app, 60, lambda: not interventions.running and "logit lens" in view.results)
    window.explore.go_to_step(3)
    view.show_tool("logit lens")
    shot("interventions-lens")
    view.show_tool("patching")
    view.patching.feature.setCurrentText("number")
    view.patching.patch_button.click()
    _wait(app, 60, lambda: not interventions.running and "patching" in view.results)
    view.patching.grid_box.setCurrentText("cross heads")
    shot("interventions-patching")
    window.close()
    return 0


def neuron_shot(app, window, shot) -> int:
    """The neuron view of decoder self-attention, layer 1, head 3 (the reverse model's: positional by its terms), at the
    fifth query."""
    tab, neuron = window.explore_tab, window.controllers.neuron
    tab.kind.setCurrentIndex(tab.kind.findData("decoder"))
    tab.grid.cell_clicked.emit(0, 2)
    tab.views.setCurrentWidget(tab.neuron.view)
    tab.main_splitter.setSizes([640, 240])  # the view's room, the candidates below it
    _wait(app, 60, lambda: not neuron.running and neuron.row is not None)
    neuron.set_query(4)
    shot("neuron-view")
    window.close()
    return 0


def corpus_shots(app, window, shot, index: str | None) -> int:
    """The Corpus tab: the nearest tokens of the sentence's third source piece, the sentences where decoder layer 1
    head 2 looks at the previous token, and the query-key maps of decoder layer 1's heads."""
    tab, corpus = window.explore_tab, window.controllers.corpus
    corpus_tab = window.corpus_tab
    if index is None:
        corpus_tab.source.setEditText("toy-fr")
        corpus_tab.limit.setValue(2000)
        corpus_tab.folder.setText(str(Path(tempfile.mkdtemp()) / "toy-fr-index"))
        corpus_tab.build()
        _wait(app, 600, lambda: not corpus.building)
    elif not corpus_tab.open_index(index):
        print(corpus_tab.status.text(), file=sys.stderr)
        return 1
    window.tabs.setCurrentWidget(tab)
    tab.corpus_search.find_similar("encoder", 2)
    _wait(app, 60, lambda: corpus_tab.similar.table.rowCount() > 0)
    corpus_tab.similar.table.selectRow(1)
    shot("corpus-similar-tokens")
    corpus_tab.heads.set_head(Head(AttentionKind.DECODER, 0, 1), "previous >= 0.5 and entropy < 0.3")
    corpus_tab.heads.run_button.click()
    _wait(app, 60, lambda: corpus_tab.heads.table.rowCount() > 0)
    shot("corpus-head-query")
    corpus_tab.panels.setCurrentWidget(corpus_tab.maps)
    corpus_tab.maps.sentences_box.setValue(150)
    corpus_tab.maps.draw_button.click()
    _wait(app, 120, lambda: len(corpus_tab.maps.view.panels) > 0)
    shot("corpus-qk-maps")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
