"""The core (model/) must never import Qt, pyqtgraph or the GUI package."""

import ast
import subprocess
import sys
from pathlib import Path

FORBIDDEN = ("PySide6", "pyqtgraph", "explorer", "PyQt5", "PyQt6", "shiboken6")
MODEL = Path(__file__).resolve().parents[2] / "model"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_under_model_imports_qt_or_the_gui():
    files = sorted(MODEL.rglob("*.py"))
    assert len(files) > 10
    offenders = {str(f.relative_to(MODEL)): sorted(imported_modules(f) & set(FORBIDDEN)) for f in files}
    assert {f: names for f, names in offenders.items() if names} == {}


def test_importing_the_whole_core_loads_no_qt():
    modules = [
        f"model.{p.relative_to(MODEL).with_suffix('').as_posix().replace('/', '.')}"
        for p in MODEL.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=MODEL.parent).stdout
    assert output.strip() == "[]"
