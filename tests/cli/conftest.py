"""Fixtures of the command-line tests: ``run`` calls the command line's ``main`` in a fresh folder."""

from __future__ import annotations

import pytest

from model.cli.commands import main
from model.runtime import set_cpu_threads


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """main([...]) in a fresh folder (tmp_path), torch on one core: (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    set_cpu_threads(1)

    def command(*arguments: str) -> tuple[int, str, str]:
        code = main(list(arguments))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return command
