"""Tiny models run fastest on one core: each test here starts with one (the suite's fixture gives every core back after)."""

from __future__ import annotations

import pytest

from model.runtime import set_cpu_threads


@pytest.fixture(autouse=True)
def _one_core():
    set_cpu_threads(1)
