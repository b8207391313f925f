"""Issue 28 in the window: the Alignment (AER) tab and the side-by-side view measure the best head on the app's one
set of AER pairs (200 held-out toy-fr test pairs, seed 0, by default), so they report exactly the head and AER that
``evaluate`` does for the same count and seed, and every label and tooltip with an AER names both.
(The commands: tests/model/inspection/test_one_aer.py.)"""

from __future__ import annotations

import json

import pytest

from explorer.controllers.runner import Inbox, Runner
from explorer.controllers.window import WindowControllers
from explorer.widgets.alignment_view import AlignmentView
from model.cli.commands import main
from model.inspection.alignment import measured_aer
from tests.conftest import saved_model

WAIT_S = 120  # a bound on waiting for a state, not a timing claim


@pytest.fixture
def controllers(toy_fr_bundle):
    inbox = Inbox()
    built = WindowControllers.build(Runner(inbox))
    built.inbox = inbox
    built.explore.set_model(toy_fr_bundle[0])
    yield built
    assert built.close(WAIT_S), "a job outlived its test"


def scored(controllers, *args, **kwargs):
    alignment = controllers.alignment
    assert alignment.compute(*args, **kwargs)
    assert controllers.inbox.wait_until(lambda: not alignment.running, WAIT_S)
    assert alignment.table is not None
    return alignment.table


def test_the_aer_tab_s_best_head_is_evaluate_s(controllers, toy_fr_bundle, tmp_path, capsys):
    bundle = toy_fr_bundle[0]
    table = scored(controllers, names=("attention",))  # the defaults, as the tab's button sends them
    report = measured_aer(bundle)
    assert report is not None and table.report is not None
    assert table.report.best == report.best and table.n_pairs == report.n_pairs and table.seed == 0
    model = saved_model(bundle, tmp_path)
    assert main(["evaluate", "--model", str(model), "--corpus", "toy-fr", "--n", "5", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    aer, layer, head, _ = table.report.best
    assert (scores["aer"], scores["aer_head"]["layer"], scores["aer_head"]["head"]) == (round(aer, 6), layer + 1, head + 1)
    assert (scores["aer_pairs"], scores["aer_seed"]) == (table.n_pairs, 0)
    # Another count and seed: the same as evaluate --aer-pairs 12 --aer-seed 5.
    table = scored(controllers, 12, ("attention",), seed=5)
    assert table.report is not None and table.report.best == measured_aer(bundle, 12, 5).best
    assert table.where() == "12 toy-fr test pairs, seed 5"


def test_side_by_side_shows_the_same_head_with_its_pairs_and_seed(controllers, toy_fr_bundle, toy_fr_rnn_bundle):
    explore, compare = controllers.explore, controllers.compare
    compare.aer_pairs, compare.aer_seed = 12, 5
    explore.translate("the small cat sees the dog")
    assert compare.set_model(toy_fr_rnn_bundle[0])
    assert controllers.inbox.wait_until(lambda: not compare.running, WAIT_S)
    left, right = compare.panels()
    aer, layer, head, _ = measured_aer(toy_fr_bundle[0], 12, 5).best
    assert (left.choice.layer, left.choice.head, left.choice.corpus_aer) == (layer, head, aer)
    assert (
        left.details()
        == f"layer {layer + 1}, head {head + 1}, the best-aligning head: AER {aer:.3f} on 12 toy-fr test pairs, seed 5"
    )
    assert right.choice.corpus_aer == measured_aer(toy_fr_rnn_bundle[0], 12, 5).best[0]
    assert right.details().endswith("on 12 toy-fr test pairs, seed 5")


def test_the_tab_s_labels_and_tooltips_name_the_pairs_and_seed(qtbot, controllers):
    from explorer.app import make_application
    from explorer.tabs.explore.measures import wire_alignment

    make_application()
    view = AlignmentView()
    qtbot.addWidget(view)
    wire_alignment(view, controllers.alignment)
    assert (view.pairs.value(), view.seed.value()) == (200, 0)
    assert "200 toy-fr test pairs (held out of training) drawn with seed 0" in view.note.text()
    requests = []
    view.score_requested.connect(lambda *args: requests.append(args))
    view.seed.setValue(5)
    view.pairs.setValue(5)  # every measure is scored: the fewest pairs the box allows
    view.score_button.click()
    assert requests == [(5, 5)]
    assert controllers.inbox.wait_until(lambda: not controllers.alignment.running, WAIT_S)
    table = controllers.alignment.table
    assert table is not None and table.report is not None and table.where() == "5 toy-fr test pairs, seed 5"
    assert view.status.text().startswith("Scored on 5 toy-fr test pairs, seed 5;")
    assert f"Best cross-attention head: {table.best_head()}." in view.status.text()
    assert view.table.item(0, 0).toolTip().endswith("on 5 toy-fr test pairs, seed 5")
