"""Which tool serves which network, and why not: each tool's own check, asked of a network (the registry's answer).

Every answer is what the tool's own check says when it is asked of a network, the same call the tool makes before it
computes (the stepper's ``beam_unavailable``, ``check_heads``, ``check_importance``, the measures' ``unsupported``,
``check_gradable_model``, the neuron view's ``check_model``, the hooked pass's ``check_tool``, the corpus index's
``check_network``): so nothing claims what the code does not keep. The ``capabilities`` command prints it as a table
(model/cli/capabilities.py); the window greys out the views a model's row refuses, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from model.attribution.importance import check_importance
from model.attribution.measures import unsupported
from model.corpus.extract import check_network
from model.decoding.stepper import beam_unavailable
from model.errors import UserError
from model.family import INTERVENTION_TOOLS, InterventionTool, capabilities_of
from model.grading.cases import check_gradable_model
from model.interventions.hooked import check_tool
from model.network import Network
from model.neuron.vectors import check_model as check_neuron_model
from model.nn.masking import Head, check_heads


def _beam(model: Network) -> None:
    why = beam_unavailable(capabilities_of(model))  # the stepper's own check
    if why:
        raise UserError(why)


def _knock_out(model: Network) -> None:
    check_heads(model, (Head(capabilities_of(model).kinds[0], 0, 0),))


def _measures(model: Network) -> None:
    why = unsupported(model, "alti")  # what every measure beyond attention needs (the ``attribute`` command's check)
    if why:
        raise UserError(why)


def _intervention(tool: InterventionTool) -> Callable[[Network], object]:
    return lambda model: check_tool(model, tool)


CHECKS: dict[str, Callable[[Network], object]] = {  # each tool's own check, by the name the table shows
    "attention views": lambda model: None,  # every family has a kind of attention
    "beam search": _beam,
    "head knock-out": _knock_out,
    "head importance": check_importance,
    "contribution measures": _measures,
    "report card": check_gradable_model,
    "neuron view": check_neuron_model,
    **{str(tool): _intervention(tool) for tool in INTERVENTION_TOOLS},
    "corpus index": check_network,
}


@dataclass(frozen=True)
class Row:
    """One model's answers: its name in the table, and per tool '' (served) or the tool's one line."""

    name: str
    reasons: dict[str, str]


def row_of(name: str, model: Network) -> Row:
    """What each tool's check says of ``model``."""
    reasons = {}
    for tool, check in CHECKS.items():
        try:
            check(model)
            reasons[tool] = ""
        except UserError as error:
            reasons[tool] = str(error)
    return Row(name, reasons)
