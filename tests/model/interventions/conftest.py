"""Tiny models run fastest on one core: each test here starts with one (the suite's fixture gives every core back after)."""

from __future__ import annotations

import pytest

from model.io import checkpoint
from model.io.shipped import resolve_model
from model.runtime import set_cpu_threads


@pytest.fixture(autouse=True)
def _one_core():
    set_cpu_threads(1)


@pytest.fixture(scope="session")
def default_bundle():
    """The shipped default model (3+3 layers, post-norm, English -> French), loaded once."""
    return checkpoint.load(resolve_model("default"))
