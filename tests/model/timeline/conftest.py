"""The copy run's timeline, its traces of one sentence and its curves: made once per module that asks."""

from __future__ import annotations

import pytest

from model.runtime import set_cpu_threads
from model.timeline.curves import head_curves
from model.timeline.traces import snapshot_traces
from tests.model.timeline.recorded import copy_timeline

SENTENCE = "a b c d e f"


@pytest.fixture(scope="module")
def timeline():
    return copy_timeline()[0]


@pytest.fixture(scope="module")
def traces(timeline):
    set_cpu_threads(1)  # a tiny model decodes fastest on one core (each test gets every core back after it)
    return snapshot_traces(timeline, SENTENCE)


@pytest.fixture(scope="module")
def curves(timeline, traces):
    set_cpu_threads(1)
    return head_curves(timeline, traces)
