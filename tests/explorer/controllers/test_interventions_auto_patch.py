"""Patching computes on its own (issue 39; the README: "the attribution preview at once, then the exact grids, in the
background"): the pair the Patching sub-tab shows is patched while that sub-tab is shown, and only then; the same pair
is not patched twice for one model; another direction, step or model patches it again, superseding a stale job; a
sentence still to type waits without a word."""

from __future__ import annotations

from explorer.controllers.interventions import PATCHING
from tests.explorer.controllers.recording import WAIT_S, Recorder

SENTENCE = "the cat sees the dog"
CORRUPTED = "the cats see the dog"


def _exact(events) -> list:
    return [args[1] for args in events.of("ready") if args[0] == PATCHING and args[1] is not None and args[1].method == "exact"]


def test_the_pair_shown_is_patched_on_its_own_while_its_sub_tab_is_shown(controllers, default_bundle):
    explore, interventions = controllers.explore, controllers.interventions
    explore.set_model(default_bundle)
    events = Recorder(interventions, "ready", "message")
    assert not interventions.want_patch(SENTENCE, CORRUPTED)  # hidden: it waits
    interventions.set_active(True)  # the Interventions view, another sub-tab: still waiting
    assert not controllers.runner.is_running("interventions-patching")
    interventions.set_active(True, patching=True)  # the Patching sub-tab shown: patched at once
    assert controllers.runner.is_running("interventions-patching")
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    assert [result.direction for result in _exact(events)] == ["denoising"]
    interventions.set_active(False)
    interventions.set_active(True, patching=True)  # shown again, the same pair: nothing again
    assert not controllers.runner.is_running("interventions-patching")
    assert interventions.want_patch(SENTENCE, CORRUPTED, "noising")  # another direction: at once
    assert interventions.want_patch(SENTENCE, CORRUPTED, "noising", 2)  # another step supersedes it
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    assert [(result.direction, result.step) for result in _exact(events)][-1] == ("noising", 2)
    assert interventions.results[PATCHING].step == 2
    explore.set_model(default_bundle)  # another model: the pair shown, patched through it
    assert controllers.runner.is_running("interventions-patching")
    assert controllers.inbox.wait_until(lambda: not interventions.running, WAIT_S)
    assert interventions.results[PATCHING].step == 2
    messages = len(events.of("message"))
    assert not interventions.want_patch(SENTENCE, "  ")  # a sentence still to type: no job, no word
    assert not controllers.runner.is_running("interventions-patching") and len(events.of("message")) == messages
