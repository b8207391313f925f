"""The report-card controller without a window (and without Qt): a card graded in a job with progress (after training
a model on shuffled targets when asked), Save as a CSV or a figure, Cancel ending a run at once, another model clearing
the card, and a model it cannot grade refused with the reason. (The view: tests/explorer/test_report_card_window.py.)"""

from __future__ import annotations

import csv

from explorer.controllers.report_card import SHUFFLED
from model.grading.grader import PAIRS, SANITY
from model.io.models import open_model
from model.provenance.embed import read_record
from tests.conftest import assert_figure
from tests.explorer.controllers.recording import WAIT_S, Recorder

EVENTS = ("progress", "ready", "running_changed", "message")


def test_a_card_in_a_job_then_saved(controllers, copy_bundle, tmp_path):
    explore, report_card = controllers.explore, controllers.report_card
    events = Recorder(report_card, *EVENTS)
    assert not report_card.save(tmp_path / "none.csv") and "press Grade" in events.of("message")[-1][0]
    explore.set_model(copy_bundle[0])
    assert report_card.unavailable() == ""
    assert report_card.compute(1, 1, shuffled_steps=4)
    assert report_card.running
    assert controllers.inbox.wait_until(lambda: not report_card.running, WAIT_S)
    card = report_card.card
    assert card is not None and events.of("ready")[-2:] == [(None,), (card,)] and card.n_pairs == 1
    assert card.data_randomisation == "4 steps on shuffled copy targets"
    assert all(row.sanity is None or row.sanity.data is not None for row in card.rows)
    stages = [args[0] for args in events.of("progress")]
    assert stages[0] == SHUFFLED and PAIRS in stages and stages[-1] == SANITY
    assert events.of("running_changed") == [(True,), (False,)]
    written = report_card.save(tmp_path / "card.csv")
    with open(written, encoding="utf-8") as handle:
        assert [row["method"] for row in csv.DictReader(handle)] == [row.name for row in card.rows]
    report_card.save(tmp_path / "card.svg")
    assert_figure(tmp_path / "card.svg", width=7.2, texts=("Explanation report card",))
    for name in ("card.csv", "card.svg"):  # the report-card command of this Grade (model/provenance/)
        command = read_record(tmp_path / name).command
        assert command[:2] == ["report-card", "--model"] and command[3:] == [
            "--n",
            "1",
            "--sanity-pairs",
            "1",
            "--train-shuffled",
            "4",
        ]
    assert not report_card.save(tmp_path / "card.txt") and "saved as .csv" in events.of("message")[-1][0]
    explore.set_model(copy_bundle[0])  # another model (the same file again): the card is cleared
    assert report_card.card is None and events.of("ready")[-1] == (None,)


def test_cancel_ends_a_run_at_once(controllers, copy_bundle):
    report_card = controllers.report_card
    events = Recorder(report_card, *EVENTS)
    controllers.explore.set_model(copy_bundle[0])
    assert report_card.compute(200, 10)
    report_card.cancel()
    assert not report_card.running and events.of("message") == [("Report card cancelled.",)]
    assert controllers.runner.join(WAIT_S)
    controllers.inbox.drain()
    assert report_card.card is None and events.of("ready") == [(None,), (None,)]  # the model, the run: no card


def test_without_a_model_it_says_so(controllers):
    report_card = controllers.report_card
    events = Recorder(report_card, *EVENTS)
    assert not report_card.compute(5) and events.of("message")[-1][0].startswith("Open or train a model first")
    assert not report_card.running


def test_an_encoder_only_tagger_is_graded_on_its_corpus_and_on_the_text_shown(controllers):
    """The shipped tagger: its held-out texts' tags (with the twin trained on shuffled tags), then the text the Explore
    tab reads (model/grading/text_cases.py)."""
    explore, report_card = controllers.explore, controllers.report_card
    explore.set_model(open_model("tagger"))
    assert report_card.unavailable() == "" and report_card.shuffled_unavailable() == ""
    assert report_card.compute(1, 1, shuffled_steps=4)
    assert controllers.inbox.wait_until(lambda: not report_card.running, WAIT_S)
    card = report_card.card
    assert card is not None and card.n_pairs == 1 and "tags as the model decides them" in card.corpus
    assert card.data_randomisation == "4 steps on shuffled toy-fr-tags targets"
    assert explore.translate("the black cat sees the small dog") and explore.trace is not None
    assert report_card.compute_sentence(0)
    assert controllers.inbox.wait_until(lambda: not report_card.running, WAIT_S)
    card = report_card.card
    assert card is not None and card.n_steps == 7 and "the text “the black cat sees the small dog”" in card.corpus


def test_a_pretrained_model_is_graded_on_the_corpus_chosen_for_it(controllers, tiny_bundles):
    """A Hugging Face folder says no training corpus: the built-in translation corpus is offered, and the card of its
    held-out pairs is graded in a job."""
    explore, report_card = controllers.explore, controllers.report_card
    explore.set_model(tiny_bundles["marian"])
    assert report_card.corpora() == ["toy-fr"]
    assert "does not say which corpus" in report_card.unavailable()
    assert "not trained here" in report_card.shuffled_unavailable()
    report_card.choose_corpus("toy-fr")
    assert report_card.unavailable() == "" and report_card.compute(2, 0)
    assert controllers.inbox.wait_until(lambda: not report_card.running, WAIT_S)
    card = report_card.card
    assert card is not None and card.n_pairs == 2 and card.corpus == "toy-fr"
    assert card.row("attention").cells["aer"].value is not None
