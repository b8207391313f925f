"""Bad options and inputs on the command line: one clear line, a non-zero exit, no traceback, no file.
(The core's own refusals of decoding options are in tests/model/decoding/test_decoding_options.py.)

The table runs each case through ``model.cli.commands`` in the test's process; arguments that are not valid
UTF-8 and Ctrl-C during the imports need a real process and run as subprocesses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from model.cli.commands import COMMAND_TABLE, build_parser, main
from tests.conftest import saved_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model_file(copy_bundle, tmp_path_factory) -> Path:
    """The session's tiny copy model, saved once for every case of this module."""
    return saved_model(copy_bundle[0], tmp_path_factory.mktemp("bad-options-model"))


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


TRACE = ["trace", "--model", "MODEL", "--text", "a b c", "--out", "OUT.npz"]

CASES = [
    # translate
    (["translate", "--model", "MODEL", "--beam", "0", "a b"], "--beam must be positive, got 0"),
    (["translate", "--model", "MODEL", "--beam", "-2", "a b"], "--beam must be positive, got -2"),
    (["translate", "--model", "MODEL", "--beam", "2", "--alpha", "nan", "a b"], "--alpha must be a number >= 0"),
    (["translate", "--model", "MODEL", "--beam", "2", "--alpha", "-1", "a b"], "--alpha must be a number >= 0"),
    (["translate", "--model", "MODEL", "caf\udce9"], "the text is not valid UTF-8 (byte 0xe9"),
    # trace: strategy and limits
    ([*TRACE, "--beam", "0"], "--beam must be positive, got 0"),
    ([*TRACE, "--beam", "-2"], "--beam must be positive, got -2"),
    ([*TRACE, "--max-steps", "0"], "--max-steps must be positive, got 0"),
    ([*TRACE, "--max-steps", "-5"], "--max-steps must be positive, got -5"),
    ([*TRACE, "--beam", "2", "--alpha", "nan"], "--alpha must be a number >= 0 (the beam length penalty), got nan"),
    ([*TRACE, "--alpha", "-0.5"], "--alpha must be a number >= 0 (the beam length penalty), got -0.5"),
    ([*TRACE, "--sample", "--temperature", "nan"], "temperature must be between 0.01 and 100"),
    ([*TRACE, "--sample", "--temperature", "1e-45"], "temperature must be between 0.01 and 100"),
    ([*TRACE, "--sample", "--temperature", "inf"], "temperature must be between 0.01 and 100"),
    ([*TRACE, "--sample", "--temperature", "1000"], "temperature must be between 0.01 and 100"),
    ([*TRACE, "--sample", "--top-p", "nan"], "top-p must be in (0, 1], got nan"),
    ([*TRACE, "--sample", "--top-p", "0"], "top-p must be in (0, 1], got 0"),
    ([*TRACE, "--sample", "--top-p", "1.5"], "top-p must be in (0, 1], got 1.5"),
    ([*TRACE, "--sample", "--top-k", "-1"], "top-k must be 0 (every token) or more, got -1"),
    ([*TRACE, "--sample", "--seed", str(2**70)], "seed must be between 0 and"),
    ([*TRACE, "--sample", "--seed", "-1"], "seed must be between 0 and"),
    # trace: what-if forcing
    ([*TRACE, "--force", "2:a", "--force", "2:b"], "step 2 is given twice"),
    ([*TRACE, "--force", "²:chat"], "expected STEP:TOKEN"),
    ([*TRACE, "--force", "1:caf\udce9"], "the text is not valid UTF-8"),
    # trace: the text and the output file
    (["trace", "--model", "MODEL", "--text", "caf\udce9", "--out", "OUT.npz"], "the text is not valid UTF-8"),
    (["trace", "--model", "MODEL", "--text", "a b", "--out", "OUT.txt"], "--out must end in .npz, not 'out.txt'"),
    (["trace", "--model", "MODEL", "--text", "a b", "--out", ""], "the output path is empty"),
    (["trace", "--model", "MODEL", "--text", "a b", "--out", "DIR"], "is a folder"),
    (["trace", "--model", "MODEL", "--text", "a b", "--out", "MODEL"], "--out must end in .npz"),
    # evaluate
    (["evaluate", "--model", "MODEL", "--corpus", "copy", "--aer-pairs", "-1"], "--aer-pairs must be 0"),
    (["evaluate", "--model", "MODEL", "--corpus", "copy", "--n", "0"], "--n must be positive, got 0"),
    (["evaluate", "--model", "MODEL", "--corpus", "copy", "--n", "-3"], "--n must be positive, got -3"),
    # export
    (["export", "--model", "MODEL", "--text", "a b", "--beam", "0", "--out", "OUT.png"], "--beam must be positive"),
    (["export", "--model", "MODEL", "--text", "caf\udce9", "--out", "OUT.png"], "the text is not valid UTF-8"),
]


@pytest.mark.parametrize("args,message", CASES, ids=[f"{i}-{c[0][0]}" for i, c in enumerate(CASES)])
def test_a_bad_option_is_one_clear_line(args, message, model_file, tmp_path, capsys):
    folder = tmp_path / "work"
    (folder / "DIR").mkdir(parents=True)
    names = {"MODEL": str(model_file), "DIR": str(folder / "DIR")}
    args = [names.get(a, a.replace("OUT", str(folder / "out")) if a.startswith("OUT") else a) for a in args]
    before = _files(folder)
    code = main(args)
    err = capsys.readouterr().err
    assert code != 0
    assert message in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert _files(folder) == before  # no output file, no temporary file
    assert sorted(p.name for p in model_file.parent.iterdir()) == [model_file.name]


# --- subprocesses: bytes that are not UTF-8, Ctrl-C during the imports -----------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [b"translate", b"--model", b"MODEL", b"caf\xe9"],
        [b"trace", b"--model", b"MODEL", b"--text", b"caf\xe9", b"--out", b"OUT.npz"],
        [b"export", b"--model", b"MODEL", b"--text", b"caf\xe9 au lait", b"--out", b"OUT.png"],
    ],
)
def test_arguments_that_are_not_utf8_are_one_line(args, model_file, tmp_path):
    names = {
        b"MODEL": os.fsencode(model_file),
        b"OUT.npz": os.fsencode(tmp_path / "t.npz"),
        b"OUT.png": os.fsencode(tmp_path / "t.png"),
    }
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONUTF8": "1"}
    result = subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"model", *[names.get(a, a) for a in args]],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 1, stderr
    assert "the text is not valid UTF-8 (byte 0xe9 at character 4)" in stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# A real SIGINT, delivered while PyTorch is being imported (the first import of torch raises it).
INTERRUPT_DURING_IMPORTS = """
import os, signal, sys, runpy

class InterruptTorchImport:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptTorchImport())
sys.argv = ["transformer-explorer", "translate", "--model", "default", "hello"]
if "{entry}" == "launcher":
    from explorer.launcher import main
    sys.exit(main())
runpy.run_module("model", run_name="__main__", alter_sys=True)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery as on a terminal")
@pytest.mark.parametrize("entry", ["python -m model", "launcher"])
def test_ctrl_c_during_the_imports_is_one_line_and_exit_130(entry):
    script = INTERRUPT_DURING_IMPORTS.replace("{entry}", entry)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip() == "transformer-explorer: interrupted"
    assert result.stdout == ""


# --- library messages in plain words ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error,message",
    [
        (MemoryError(), "not enough memory for this translate"),
        (
            RuntimeError(
                "[enforce fail at alloc_cpu.cpp:127] data. DefaultCPUAllocator: not enough memory: you tried "
                "to allocate 1099511627776 bytes."
            ),
            "not enough memory for this translate",
        ),
        (PermissionError(13, "Permission denied", "/somewhere/.t.npz.k2j4l1.partial"), "/somewhere/t.npz: Permission denied"),
    ],
)
def test_library_errors_become_plain_words(error, message, monkeypatch, capsys):
    def fail(args):
        raise error

    monkeypatch.setattr("model.cli.decode.run_translate", fail)
    assert main(["translate", "--model", "default", "hello"]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert "enforce fail" not in err and ".partial" not in err and "Traceback" not in err


def test_the_launcher_hands_every_command_to_the_command_line(monkeypatch, capsys):
    """``transformer-explorer capabilities`` once opened the window (the launcher's list of commands was kept apart
    from the parser's): every sub-command the parser has reaches the command line, with no display at all."""
    from explorer import launcher  # the launcher module itself: what the installed entry point runs

    parser_commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert parser_commands == set(COMMAND_TABLE)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    handed: list[list[str]] = []
    monkeypatch.setattr("model.cli.commands.main", lambda argv: handed.append(argv) or 0)
    for name in sorted(parser_commands):
        assert launcher.main([name]) == 0, name  # the command alone: argparse would say what it lacks
        assert "no display" not in capsys.readouterr().err, name
    assert handed == [[name] for name in sorted(parser_commands)]
