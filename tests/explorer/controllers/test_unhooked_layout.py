"""The Interventions controller (headless) on a pretrained encoder-decoder whose layout has no hooked pass (a tiny
mBART, its adapter taken out of the registry entry's table for the test): the model is declared without interventions
(model.family.capabilities_of), and the view's message says so in one line, with no tool offered and nothing
computed."""

from __future__ import annotations

import pytest

from model.family import capabilities_of
from tests.explorer.controllers.recording import Recorder


@pytest.fixture(scope="module")
def tiny_mbart(tmp_path_factory):
    """A tiny Hugging Face mBART built here (model/pretrained/tiny.py)."""
    pytest.importorskip("transformers", reason='the pretrained-model tests need the hf extra: pip install ".[hf]"')
    from model.pretrained.loading import load_pretrained  # deferred: the hf extra may be absent (skipped above)
    from model.pretrained.tiny import build  # deferred: the hf extra may be absent (skipped above)

    return load_pretrained(str(build("mbart", tmp_path_factory.mktemp("tiny-mbart") / "mbart")))


def test_an_unhooked_layout_is_declared_without_interventions_and_the_view_says_so_in_one_line(
    controllers, tiny_mbart, monkeypatch
):
    from model.pretrained import families as pretrained  # deferred: the hf extra may be absent (skipped by the fixture)

    monkeypatch.delitem(pretrained.HOOKED_LAYOUTS, "mbart")
    assert not capabilities_of(tiny_mbart.model).hooked
    interventions = controllers.interventions
    events = Recorder(interventions, "message", "running_changed")
    controllers.explore.set_model(tiny_mbart)
    controllers.explore.translate("The house is small .")
    why = interventions.unavailable()
    assert why and "\n" not in why and "mbart" in why and "hooked pass" in why
    assert interventions.tools() == ()
    interventions.set_active(True)
    assert events.of("message")[-1] == (why,) and not interventions.running and interventions.results == {}
