"""The main window's invariants after random sequences of a user's actions (issue 39): Hypothesis's rule-based state
machine (tests/explorer/window_actions.py) drives one real window per sequence and, after every action, checks that
the views hold the trace for the selection the boxes show, labels sit on their cells, titles name what is drawn, and
nothing holding data is clipped without a sign (tests/explorer/window_invariants.py).

CI runs a bounded, repeatable number of sequences (derandomized, no example database); the long run is
``python benchmarks/window_states.py --examples 1000``."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.explorer.window_actions import WindowStates

EXAMPLES = int(os.environ.get("WINDOW_STATES_EXAMPLES", "30"))
STEPS = int(os.environ.get("WINDOW_STATES_STEPS", "20"))

pytest.importorskip("transformers", reason='the tiny Hugging Face model needs the hf extra: pip install ".[hf]"')

TestWindowStates = WindowStates.TestCase
TestWindowStates.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)
