"""The window's one background runner (explorer/controllers/runner.py), without Qt: reports come back on the test's
thread through an ``Inbox``. A job's end and progress arrive in order; a newer job on a channel supersedes the older
(whose reports are dropped); cancelling reports the end, dropping reports nothing; a UserError is a message, any
other exception an internal error with its traceback logged; closing cancels, joins and drops every later report."""

from __future__ import annotations

import logging
import threading

import pytest

from explorer.controllers.runner import Inbox, Runner
from model.errors import UserError

WAIT_S = 30  # a bound on waiting for a state, not a timing claim


@pytest.fixture
def runner():
    inbox = Inbox()
    runner = Runner(inbox)
    runner.inbox = inbox
    yield runner
    assert runner.close(WAIT_S), "a job outlived its test"


def recorder(seen: list, name: str):
    return lambda *args: seen.append((name, *args))


def handlers(seen: list) -> dict:
    return {
        name: recorder(seen, name.removeprefix("on_")) for name in ("on_done", "on_error", "on_progress", "on_cancelled", "on_end")
    }


def test_progress_then_the_value_then_the_end_in_order(runner):
    seen: list = []

    def work(job):
        for done in range(3):
            job.progress(done, 3)
        return "value"

    job = runner.submit("a", work, **handlers(seen))
    assert runner.is_running("a") and runner.current("a") is job
    assert runner.inbox.wait_until(lambda: ("end",) in seen, WAIT_S)
    assert seen == [("progress", 0, 3), ("progress", 1, 3), ("progress", 2, 3), ("done", "value"), ("end",)]
    assert not runner.is_running("a") and runner.current("a") is None


def test_a_newer_job_supersedes_the_older_whose_reports_are_dropped(runner):
    seen: list = []
    release = threading.Event()

    def older(job):
        release.wait(WAIT_S)
        job.progress("older")
        return "older"

    first = runner.submit("a", older, **handlers(seen))
    second = runner.submit("a", lambda job: "newer", **handlers(seen))
    assert first.cancelled and not second.cancelled and runner.current("a") is second
    release.set()
    first.thread.join(WAIT_S)
    assert runner.inbox.wait_until(lambda: ("end",) in seen, WAIT_S)
    runner.inbox.drain()
    assert seen == [("done", "newer"), ("end",)]


def test_after_previous_starts_once_the_superseded_job_has_ended(runner):
    order: list = []
    release = threading.Event()

    def older(job):
        release.wait(WAIT_S)
        order.append("older ended")

    runner.submit("a", older)
    newer = runner.submit("a", lambda job: order.append("newer ran"), after_previous=True)
    assert order == []
    release.set()
    newer.thread.join(WAIT_S)
    assert order == ["older ended", "newer ran"]


def test_cancel_reports_the_end_and_drop_reports_nothing(runner):
    seen: list = []

    def until_cancelled(job):
        job.token.wait(WAIT_S)
        job.check()

    runner.submit("a", until_cancelled, **handlers(seen))
    assert runner.cancel("a")
    assert runner.inbox.wait_until(lambda: ("end",) in seen, WAIT_S)
    assert seen == [("cancelled",), ("end",)]
    seen.clear()
    dropped = runner.submit("a", until_cancelled, **handlers(seen))
    assert runner.cancel("a", drop=True) and not runner.is_running("a")
    dropped.thread.join(WAIT_S)
    runner.inbox.drain()
    assert seen == [] and not runner.cancel("a")


def test_the_token_calls_back_once_when_cancelled(runner):
    called: list = []
    stopped = threading.Event()

    def work(job):
        job.token.on_cancel(lambda: called.append("cancelled"))
        job.token.on_cancel(stopped.set)
        stopped.wait(WAIT_S)

    job = runner.submit("a", work)
    runner.cancel("a")
    job.thread.join(WAIT_S)
    job.token.cancel()  # again: nothing more
    assert called == ["cancelled"] and not job.thread.is_alive()


def test_a_user_error_is_its_message_and_a_bug_an_internal_error_logged(runner, caplog):
    seen: list = []

    def user_error(job):
        raise UserError("the file is not a model")

    def bug(job):
        return {}["missing"]

    runner.submit("a", user_error, **handlers(seen))
    runner.submit("b", bug, **handlers(seen))
    assert runner.inbox.wait_until(lambda: seen.count(("end",)) == 2, WAIT_S)
    assert ("error", "the file is not a model") in seen and ("error", "internal error: 'missing'") in seen
    logged = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(logged) == 1 and logged[0].name == "explorer" and "the b job" in logged[0].getMessage()
    assert logged[0].exc_info[0] is KeyError and "in bug" in caplog.text  # the traceback, with the failing function


def test_a_bug_in_a_report_handler_ends_the_job_as_an_internal_error(runner, caplog):
    seen: list = []

    def broken_progress(*_args):
        raise ValueError("cannot draw this")

    def work(job):
        job.progress(1)
        job.token.wait(WAIT_S)

    job = runner.submit("a", work, on_progress=broken_progress, on_error=recorder(seen, "error"), on_end=recorder(seen, "end"))
    assert runner.inbox.wait_until(lambda: ("end",) in seen, WAIT_S)
    job.thread.join(WAIT_S)
    runner.inbox.drain()
    assert seen == [("error", "internal error: cannot draw this"), ("end",)] and job.cancelled
    assert any(record.exc_info and record.exc_info[0] is ValueError for record in caplog.records)


def test_close_cancels_joins_and_drops_every_later_report(runner):
    seen: list = []
    never_polled = threading.Event()

    def until_cancelled(job):
        job.token.wait(WAIT_S)
        job.progress("after the close")
        return "late"

    first = runner.submit("a", until_cancelled, **handlers(seen))
    reader = runner.submit("read", lambda job: never_polled.wait(WAIT_S), joinable=False)
    assert runner.close(WAIT_S)  # the unpollable read is not waited for
    assert not first.thread.is_alive() and reader.thread.is_alive() and first.cancelled and reader.cancelled
    runner.inbox.drain()
    assert seen == []
    late = runner.submit("a", lambda job: "never", **handlers(seen))  # after the close: cancelled at once
    late.thread.join(WAIT_S)
    never_polled.set()
    reader.thread.join(WAIT_S)
    runner.inbox.drain()
    assert late.cancelled and seen == [] and not runner.is_running("a")
