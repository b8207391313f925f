"""Fixtures of the grading tests: methods registered for one test only (a constant map, a map with NaN)."""

from __future__ import annotations

import numpy as np
import pytest

from model.grading.methods import METHODS, AttributionMethod, MethodMaps, Reading, register_method


class ConstantMethod(AttributionMethod):
    """A deliberately constant "measure": the same score for every piece, whatever the model."""

    name, label, what = "constant", "Constant", "1 for every piece"

    def maps(self, reading: Reading) -> MethodMaps:
        n, s = reading.case.n_steps, reading.case.n_source
        prefix = np.ones((n, n))
        prefix[np.triu_indices(n, k=1)] = np.nan
        return MethodMaps(np.ones((n, s)), prefix)


class BrokenMethod(AttributionMethod):
    """Leave-one-out's map with NaN in the first step's row (as a measure that fails silently would give)."""

    name, label, what = "broken", "Broken", "leave-one-out, NaN at the first step"

    def maps(self, reading: Reading) -> MethodMaps:
        source = reading.scorer.full[:, None] - reading.scorer.left_out().T
        source[0, 0] = np.nan
        return MethodMaps(source)


@pytest.fixture
def test_methods():
    """ConstantMethod and BrokenMethod registered while the test runs."""
    for method in (ConstantMethod, BrokenMethod):
        register_method(method)
    yield
    for method in (ConstantMethod, BrokenMethod):
        METHODS.pop(method.name, None)


@pytest.fixture
def copy_model(copy_bundle):
    """The session's tiny copy model (150 steps: real weights, not a good model)."""
    return copy_bundle[0]


@pytest.fixture(autouse=True)
def _one_core():
    """Torch on one core, as the command line runs beside busy programs (two threads waiting for each other on two
    shared cores were several times slower); tests/conftest.py gives every core back after the test."""
    from model.runtime import set_cpu_threads

    set_cpu_threads(1)
