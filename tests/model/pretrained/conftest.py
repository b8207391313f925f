"""The pretrained-model tests (their tiny models come from tests/conftest.py: tiny_folders, tiny_bundles).
Nothing touches the network: the hub is offline and every test sees an empty hub cache of its own.
Skipped without the hf extra."""

from __future__ import annotations

import os

import pytest

from tests.conftest import PRETRAINED_FAMILIES as FAMILIES  # noqa: F401  (the families the fixtures build)

pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')


@pytest.fixture(autouse=True)
def empty_hub_cache(tmp_path, monkeypatch):
    """Every test sees an empty hub cache of its own (never the user's, never the network)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield
    assert os.environ["HF_HUB_OFFLINE"] == "1"
