"""Selecting what a view shows (model/inspection/selection.py): what the trace does not have is refused with
a SelectionError, and heads are read as numbers from 1 or as "mean"."""

from __future__ import annotations

import pytest

from model.decoding.stepper import Stepper
from model.inspection.selection import SelectionError, parse_head, select


def test_selection_rejects_what_the_trace_does_not_have(copy_bundle):
    stepper = Stepper(copy_bundle[0], "a b")
    stepper.run()
    trace = stepper.trace()
    with pytest.raises(SelectionError, match="rollout"):
        select(trace, "cross", 0, "rollout")
    with pytest.raises(SelectionError, match="step"):
        select(trace, "cross", 0, 0, step=99)
    with pytest.raises(SelectionError):
        parse_head("zero")
    assert parse_head("2") == 1 and parse_head("mean") == "mean"
