"""The alignment-table controller without a window (and without Qt): a run scores the chosen measures on fresh toy-fr
pairs in a job, can be cancelled (the table shown is unchanged) or dropped by another model, ends with the runner,
refuses a model without gold alignments, and turns a failure into a message with its traceback logged.
(The table's view: tests/explorer/test_alignment_view.py.)"""

from __future__ import annotations

import pytest

from explorer.controllers.alignment import NO_GOLD
from tests.conftest import tiny_bundle
from tests.explorer.controllers.recording import WAIT_S, Recorder

EVENTS = ("ready", "progress", "running_changed", "message")


@pytest.fixture
def alignment(controllers, toy_fr_bundle):
    """The alignment controller with the toy-fr model open."""
    controllers.explore.set_model(toy_fr_bundle[0])
    return controllers.alignment


def test_the_alignment_table_scores_and_another_model_clears_it(controllers, toy_fr_bundle):
    explore, alignment = controllers.explore, controllers.alignment
    events = Recorder(alignment, *EVENTS)
    explore.set_model(toy_fr_bundle[0])
    assert alignment.compute(5, ("attention", "norm"))
    assert controllers.inbox.wait_until(lambda: not alignment.running, WAIT_S)
    [(cleared,), (table,)] = events.of("ready")  # the model opened clears the table first
    assert cleared is None and table is alignment.table and [m.measure for m in table.measures] == ["attention", "norm"]
    assert events.of("progress")[-1] == (5, 5) and alignment.done_pairs == 5 and table.n_pairs == 5
    assert events.of("running_changed") == [(True,), (False,)]
    copy_model, _ = tiny_bundle("copy", size=100)
    explore.set_model(copy_model)
    assert alignment.table is None and events.of("ready")[-1] == (None,)
    assert not alignment.compute(5) and events.of("message")[-1] == (NO_GOLD,)


def test_cancel_stops_the_run_early_and_closing_joins_it(controllers, alignment):
    """Was test_alignment_view.py's test_cancel_stops_the_run_early_and_stop_joins_it (the run)."""
    events = Recorder(alignment, *EVENTS)
    assert alignment.compute(400, ("attention",))
    alignment.cancel()
    assert controllers.inbox.wait_until(lambda: not alignment.running, WAIT_S)
    done = alignment.done_pairs
    assert done < 400 and events.of("message") == [(f"Scoring cancelled after {done} pairs: the table shown is unchanged.",)]
    assert events.of("ready") == [] and alignment.table is None and events.of("running_changed") == [(True,), (False,)]
    assert controllers.runner.join(WAIT_S)
    # Closing the runner during a run (the window closing) cancels and joins it at once, reporting nothing.
    assert alignment.compute(400, ("attention",))
    thread = controllers.runner.current("alignment-table").thread
    assert controllers.runner.close(WAIT_S) and not thread.is_alive()
    controllers.inbox.drain()  # whatever the job had queued is delivered, and dropped
    assert events.of("ready") == [] and not alignment.running and len(events.of("message")) == 1


def test_a_model_without_gold_alignments_gives_a_message_and_no_run(controllers, alignment):
    """Was test_alignment_view.py's test of the same name (the messages)."""
    explore = controllers.explore
    copy_model, _ = tiny_bundle("copy", size=100)
    explore.set_model(copy_model)
    assert alignment.unavailable() == NO_GOLD
    events = Recorder(alignment, *EVENTS)
    assert not alignment.compute(6)
    assert events.seen == [("message", NO_GOLD)] and not alignment.running
    explore.set_model(None)
    assert not alignment.compute(6)
    no_model = "Open or train a model first: its cross-attention is scored against toy-fr's gold alignments."
    assert events.of("message")[-1] == (no_model,) and events.of("running_changed") == []


def test_another_model_drops_a_run_and_its_table_never_arrives(controllers, alignment):
    """Was test_alignment_view.py's test_another_model_clears_the_table_and_drops_a_run (the run)."""
    events = Recorder(alignment, *EVENTS)
    assert alignment.compute(400, ("attention",))
    thread = controllers.runner.current("alignment-table").thread
    controllers.explore.set_model(None)
    assert events.of("ready") == [(None,)] and events.of("running_changed") == [(True,), (False,)]
    assert not alignment.running and alignment.table is None
    thread.join(WAIT_S)  # the dropped job ends at its next pair
    controllers.inbox.drain()  # its end is delivered, and dropped
    assert events.of("ready") == [(None,)] and events.of("running_changed") == [(True,), (False,)]
    assert events.of("message") == []


def test_a_failing_run_is_an_internal_error_with_its_traceback_logged(controllers, alignment, monkeypatch, caplog):
    """Was test_alignment_view.py's test of the same name (the message and the log)."""
    import explorer.controllers.alignment as controller

    def broken(*_args, **_kwargs):
        raise ValueError("the measure broke")

    monkeypatch.setattr(controller, "alignment_table", broken)
    events = Recorder(alignment, *EVENTS)
    assert alignment.compute(5, ("attention",))
    assert controllers.inbox.wait_until(lambda: not alignment.running, WAIT_S)
    assert events.of("message") == [("The alignment table could not be computed: internal error: the measure broke",)]
    assert events.of("ready") == [] and alignment.table is None and events.of("running_changed") == [(True,), (False,)]
    logged = [record for record in caplog.records if record.name == "explorer" and record.exc_info]
    assert len(logged) == 1 and "alignment-table" in logged[0].getMessage()
    assert logged[0].exc_info[0] is ValueError and "broken" in caplog.text  # the traceback names the failing function
