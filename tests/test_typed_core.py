"""The analysis half of the core is typed: no parameter of model/interventions, model/attribution, model/grading or
model/neuron is typed exactly ``Any`` (a network, config, bundle, tokenizer or module has a protocol or a torch type),
and the intervention tools and patching components are enums whose values are the names shown and saved."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from model.family import INTERVENTION_TOOLS, InterventionTool
from model.interventions.hooked import InterventionError
from model.interventions.patching import COMPONENTS, Component

ROOT = Path(__file__).resolve().parent.parent
TYPED = ("model/interventions", "model/attribution", "model/grading", "model/neuron")


def _any_parameters(path: Path, root: Path = ROOT) -> list[str]:
    """'file:line function(parameter)' for each parameter of ``path`` annotated exactly ``Any`` (``*args``, ``**kwargs``
    included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        for argument in every:
            if argument is not None and argument.annotation is not None:
                if ast.unparse(argument.annotation) in ("Any", "typing.Any", "'Any'", '"Any"'):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}({argument.arg})")
    return found


def test_no_parameter_is_typed_any() -> None:
    sources = sorted(path for package in TYPED for path in (ROOT / package).rglob("*.py"))
    assert len(sources) > 20  # the packages were found
    untyped = [entry for path in sources for entry in _any_parameters(path)]
    assert untyped == [], "parameters typed Any:\n" + "\n".join(untyped)


def test_the_checker_finds_an_any_parameter(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import Any\n\ndef f(model: Any, *rest: Any, ok: int = 1, **more: Any) -> Any: ...\n")
    assert _any_parameters(sample, tmp_path) == ["sample.py:3 f(model)", "sample.py:3 f(rest)", "sample.py:3 f(more)"]


def test_the_tools_are_an_enum_shown_and_saved_by_their_names() -> None:
    assert INTERVENTION_TOOLS == tuple(InterventionTool)
    assert [str(tool) for tool in INTERVENTION_TOOLS] == ["logit lens", "DecoderLens", "logit attribution", "patching", "circuits"]
    assert f"the {InterventionTool.LOGIT_LENS}" == "the logit lens"
    assert json.dumps({InterventionTool.PATCHING: InterventionTool.DECODER_LENS}) == '{"patching": "DecoderLens"}'
    assert InterventionTool("logit attribution") is InterventionTool.LOGIT_ATTRIBUTION


def test_a_component_is_parsed_in_one_place() -> None:
    assert [str(component) for component in COMPONENTS] == [
        "encoder heads",
        "decoder heads",
        "cross heads",
        "encoder residual",
        "decoder residual",
        "encoder feed-forward",
        "decoder feed-forward",
    ]
    cross = Component.parse("cross heads")
    assert (cross.place, cross.side, cross.attention, cross.part) == ("cross", "decoder", "cross", "heads")
    residual = Component.parse("encoder residual")
    assert (residual.side, residual.part) == ("encoder", "residual")
    assert Component.parse("decoder feed-forward").part == "feed-forward"
    assert {Component.DECODER_HEADS: 1}["decoder heads"] == 1  # a grid is found by the name shown
    with pytest.raises(InterventionError, match="a component is one of encoder heads, .*not 'cross residual'"):
        Component.parse("cross residual")
