"""The Explore tab greys out the views the open model does not serve, each with the capability table's reason as its
tooltip (issue 41: "the window greys out what a model does not serve with that reason"), and enables them again, with
their own tooltips, for a model that serves them. The reasons are the ``capabilities`` command's (model/capabilities.py)."""

from __future__ import annotations

import pytest

from explorer.controllers.served_views import VIEW_TOOLS, view_reasons
from model.capabilities import row_of


def _tabs(tab) -> dict[str, tuple[bool, str]]:
    views = tab.views
    return {views.tabText(i): (views.isTabEnabled(i), views.tabToolTip(i)) for i in range(views.count())}


def test_the_reasons_are_the_capability_table_s(toy_fr_rnn_bundle, copy_bundle):
    rnn = toy_fr_rnn_bundle[0]
    reasons, row = view_reasons(rnn), row_of("rnn", rnn.model).reasons
    assert reasons["Neuron view"] == f"{row['neuron view'][:1].upper()}{row['neuron view'][1:]}."
    assert reasons["Interventions"] and reasons["Head importance"] and not reasons["Report card"]
    assert view_reasons(copy_bundle[0]) == dict.fromkeys(VIEW_TOOLS, "") == view_reasons(None)


@pytest.mark.parametrize("first", ["rnn", "t5"])
def test_views_grey_out_with_their_reason_and_come_back(qtbot, open_window, toy_fr_rnn_bundle, copy_bundle, tiny_bundles, first):
    window = open_window()
    tab = window.explore_tab
    own = _tabs(tab)  # no model: every view enabled, with its own tooltip
    assert all(enabled for enabled, _ in own.values())
    tab.views.setCurrentWidget(tab.neuron.view)  # the view the user was looking at goes grey: the grid is shown
    bundle = toy_fr_rnn_bundle[0] if first == "rnn" else tiny_bundles["t5"]
    window.explore.set_model(bundle)
    shown = _tabs(tab)
    reasons = view_reasons(bundle)
    for title, why in reasons.items():
        enabled, tooltip = shown[title]
        assert enabled == (not why) and (tooltip == f"Not for this model: {why}" if why else tooltip == own[title][1]), title
    if first == "rnn":  # no queries and keys: the view the user was looking at goes grey, the grid is shown
        assert not shown["Neuron view"][0] and tab.views.currentIndex() == 0
    else:  # a pretrained encoder-decoder serves every view
        assert all(enabled for enabled, _ in shown.values()) and tab.views.currentWidget() is tab.neuron.view
    assert shown["Interventions"][0] == (first == "t5")  # a pretrained encoder-decoder serves every intervention
    window.explore.set_model(copy_bundle[0])
    assert _tabs(tab) == own  # the app's Transformer serves them all: the views and their own tooltips are back
