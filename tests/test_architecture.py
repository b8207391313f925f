"""The structure the README promises, checked: no import cycles among the project's modules, an import inside a
function only where it is deferred on purpose (with the reason beside it), and no code outside the family registry
asking a model for its family's or architecture's name instead of a capability."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "explorer")
CHECKED = PACKAGES  # the packages whose imports and capability questions are held to the rules below
# Where a family is declared: the registry and the modules that register entries.
REGISTRY = {"model/family.py", "model/nn/registry.py", "model/pretrained/families.py"}
NAME_COMPARISON = re.compile(
    r"family\s*(==|!=)\s*['\"]|family\s+(not\s+)?in\s*[\(\[{]|architecture\w*\s*(==|!=)\s*['\"]"
    r"|\.shape\s*(==|!=)\s*['\"](encoder|decoder)"
)
CAPABILITY_PROBE = re.compile(
    r"getattr\([\w.]*(model|bundle)\w*,\s*['\"](family|kinds|saveable|examples|predictions|architecture)['\"]"
)


def _sources(packages: tuple[str, ...] = PACKAGES) -> list[Path]:
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py"))


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles():
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(module)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.y", imported="a.z")
    assert _cycles(graph) == [["a.x", "a.y"]]


@pytest.mark.parametrize("package", CHECKED)
def test_imports_inside_functions_are_deferred_on_purpose_with_the_reason(package):
    unexplained = []
    for path in _sources((package,)):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    here = lines[inner.lineno - 1]
                    above = lines[inner.lineno - 2] if inner.lineno > 1 else ""
                    if "# deferred:" not in here and "# deferred:" not in above:
                        unexplained.append(f"{path.relative_to(ROOT)}:{inner.lineno}: {here.strip()}")
    assert unexplained == []


@pytest.mark.parametrize("package", CHECKED)
def test_code_asks_capabilities_not_family_or_architecture_names(package):
    found = []
    for path in _sources((package,)):
        name = str(path.relative_to(ROOT))
        if name in REGISTRY:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if NAME_COMPARISON.search(line) or CAPABILITY_PROBE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert found == []


def test_the_benchmarks_import_names_that_exist():
    """The benchmarks run outside the suite: a rename in the project must not leave them broken unseen."""
    missing = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.module.split(".")[0] not in PACKAGES:
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name) and importlib.util.find_spec(f"{node.module}.{alias.name}") is None:
                    missing.append(f"{path.name}: from {node.module} import {alias.name}")
    assert missing == []
