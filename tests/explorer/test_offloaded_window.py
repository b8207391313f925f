"""A model larger than memory in the window: opened by its folder with the process's memory options
(``transformer-explorer FOLDER --max-memory SIZE``), the status bar says it is offloaded and, once steps are decoded,
what a step costs (a job's sharing of an offloaded model: tests/model/pretrained/test_offload.py)."""

from __future__ import annotations

import pytest

from model.pretrained.offload import MemoryOptions, set_process_default
from tests.conftest import budget_with_disk

pytest.importorskip("accelerate", reason="offloading needs the large extra: pip install '.[large]'")


@pytest.fixture
def small_memory(tiny_folders):
    """The process opens Hugging Face folders within a budget that puts the tiny T5's layers on disk."""
    set_process_default(MemoryOptions(max_memory=budget_with_disk(tiny_folders["t5"])))
    yield
    set_process_default(MemoryOptions())


def test_the_status_bar_says_the_model_is_offloaded_and_what_a_step_costs(qtbot, window, tiny_folders, small_memory):
    window.open_model(tiny_folders["t5"])
    qtbot.waitUntil(lambda: window.explore.trace is not None, timeout=30000)
    bundle = window.explore.bundle
    assert bundle.config.offload is not None and bundle.config.offload.offloaded
    qtbot.waitUntil(lambda: "offloaded, " in window.model_label.text(), timeout=10000)
    window.explore_tab.controls.translate_button.click()
    qtbot.waitUntil(lambda: "a decoding step takes" in window.model_label.text(), timeout=30000)
    assert "streamed from disk" in window.model_label.text()
