"""Which of the Explore tab's views a model serves, and why not: the capability table's answer for the open model
(model/capabilities.py: each tool's own check), read per view. Qt-free: the tab greys out a view whose reason is not
empty and shows the reason as the view's tooltip (explorer/tabs/explore/served_tabs.py)."""

from __future__ import annotations

from model.capabilities import row_of
from model.family import INTERVENTION_TOOLS, Bundle

# A view of the Explore tab (its tab's title) -> the tools it shows: it is served when any of them is.
VIEW_TOOLS: dict[str, tuple[str, ...]] = {
    "Head importance": ("head importance",),
    "Interventions": tuple(str(tool) for tool in INTERVENTION_TOOLS),
    "Neuron view": ("neuron view",),
    "Report card": ("report card",),
}


def view_reasons(bundle: Bundle | None) -> dict[str, str]:
    """Each view of VIEW_TOOLS -> '' when ``bundle``'s model serves it (or no model is open: nothing to refuse), else
    why not, as one sentence (its first tool's one line)."""
    if bundle is None:
        return dict.fromkeys(VIEW_TOOLS, "")
    reasons = row_of(bundle.describe(), bundle.model).reasons
    answers = {}
    for view, tools in VIEW_TOOLS.items():
        refused = [reasons[tool] for tool in tools if reasons[tool]]
        answers[view] = "" if len(refused) < len(tools) else f"{refused[0][:1].upper()}{refused[0][1:]}."
    return answers
